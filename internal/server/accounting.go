package server

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Accounting groups GPU-hours by job or by tenant.
const (
	ByJob    = "job"
	ByTenant = "tenant"
)

// AccountingQuery selects the period and jobs of an accounting report:
// GPU time within [Since, Until) of the jobs of Tenant (all p may see when
// empty), grouped By job or tenant.
type AccountingQuery struct {
	Tenant       string
	Since, Until time.Time
	By           string
}

// AccountingRow is the GPU time of one job, or of one tenant's jobs.
type AccountingRow struct {
	Tenant string
	Job    string // by job: the job's ID and name
	Name   string
	State  model.State // by job
	// Jobs counts the jobs with GPU time in the period; Attempts their
	// attempts that ran in it.
	Jobs, Attempts int
	GPUHours       float64
}

// GPUSeconds is the GPU time job j held within [since, until): for each
// attempt, the part of its run (start to end, or to until while it runs)
// inside the period, times the GPUs the job holds (a fraction of a GPU
// counts as that fraction; an elastic job's attempts count the instances
// each had). It also returns how many attempts overlap.
func GPUSeconds(j *model.Job, since, until time.Time) (float64, int) {
	var secs float64
	n := 0
	for i := range j.Status.Attempts {
		from, to, ok := attemptSpan(j, i, since, until)
		if !ok {
			continue
		}
		n++
		secs += to.Sub(from).Seconds() * attemptGPUs(j, i)
	}
	return secs, n
}

// attemptGPUs is how many GPUs attempt i of j held: a fraction of a GPU
// counts as that fraction.
func attemptGPUs(j *model.Job, i int) float64 {
	return float64(j.Spec.Resources.MilliPerInstance()) * float64(attemptWorld(j, i+1)) / model.MilliPerGPU
}

// attemptSpan is the part of attempt i of j that ran within [since,
// until): from its start to its end, or to until while it runs; ok is
// false when none did.
func attemptSpan(j *model.Job, i int, since, until time.Time) (from, to time.Time, ok bool) {
	a := j.Status.Attempts[i]
	if a.Started.IsZero() {
		return from, to, false
	}
	end := a.Ended
	if end.IsZero() {
		if i == len(j.Status.Attempts)-1 && !j.Status.EndedAt.IsZero() {
			end = j.Status.EndedAt
		} else {
			end = until
		}
	}
	from, to = maxTime(a.Started, since), minTime(end, until)
	return from, to, to.After(from)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// MaxAccountingPeriod bounds a report's period.
const MaxAccountingPeriod = 10 * 365 * 24 * time.Hour

// Accounting reports the GPU-hours of the jobs p may see over q's period
// from the job records (every attempt's running time × its GPUs), by
// tenant with the roll-ups of jobs deleted past the retention for the days
// the period covers whole (their jobs counted on the day they ended, their
// attempts on the day they started), largest first. It reads every job
// record once.
func (s *Server) Accounting(ctx context.Context, p Principal, q AccountingQuery) ([]AccountingRow, error) {
	if q.Tenant != "" && !p.Sees(q.Tenant) {
		return nil, refuse(CodeForbidden, "tenant", "a tenant token sees only its own usage")
	}
	if q.By != ByJob && q.By != ByTenant {
		return nil, refuse(CodeInvalidSpec, "by", "%q: want job or tenant", q.By)
	}
	if !q.Until.After(q.Since) || q.Until.Sub(q.Since) > MaxAccountingPeriod {
		return nil, refuse(CodeInvalidSpec, "since", "the period %s to %s is empty or longer than %v",
			q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339), MaxAccountingPeriod)
	}
	kvs, _, err := s.st.List(ctx, prefixJobs)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	rows := map[string]*AccountingRow{}
	for _, kv := range kvs {
		j, err := decodeJob(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", kv.Key, err)
		}
		if !p.Sees(j.Spec.Tenant) || (q.Tenant != "" && j.Spec.Tenant != q.Tenant) {
			continue
		}
		secs, n := GPUSeconds(j, q.Since, q.Until)
		if n == 0 {
			continue
		}
		key := j.Spec.Tenant
		if q.By == ByJob {
			key = j.ID
		}
		r, ok := rows[key]
		if !ok {
			r = &AccountingRow{Tenant: j.Spec.Tenant}
			if q.By == ByJob {
				r.Job, r.Name, r.State = j.ID, j.Spec.Name, j.Status.State
			}
			rows[key] = r
		}
		r.Jobs++
		r.Attempts += n
		r.GPUHours += secs / 3600
	}
	if q.By == ByTenant { // deleted jobs are not listed by job (RetentionWarning)
		err := s.usageDays(ctx, q.Since, q.Until, func(tenant string) bool {
			return p.Sees(tenant) && (q.Tenant == "" || tenant == q.Tenant)
		}, func(tenant string, u usageRow) {
			r, ok := rows[tenant]
			if !ok {
				r = &AccountingRow{Tenant: tenant}
				rows[tenant] = r
			}
			r.Jobs += u.Jobs
			r.Attempts += u.Attempts
			r.GPUHours += u.GPUHours
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]AccountingRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].GPUHours != out[b].GPUHours {
			return out[a].GPUHours > out[b].GPUHours
		}
		return out[a].Tenant+out[a].Job < out[b].Tenant+out[b].Job
	})
	return out, nil
}
