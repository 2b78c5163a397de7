package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
	"github.com/allot-dev/allot/internal/store"
)

// Usage roll-ups keep the bills of jobs the retention deletes.
//
// When the leader purges a job (retention.go), what the job ran is added,
// in the same transaction that deletes it, to its tenant's roll-up of the
// month: per UTC day, per region, SKU, pricing kind and reservation, the
// USD, the GPU-hours, the attempts that started that day and the jobs
// that ended that day. Cost and usage reports by tenant, region or SKU,
// and a reservation's use, add the roll-ups of the days their period
// covers whole, so that a report over a past month reads the same before
// and after its jobs are deleted. A day the period covers only in part is
// left out, and a report by job cannot list deleted jobs; both say so
// (RetentionWarning). A roll-up is one record per tenant and month, under
// /usage/MONTH/TENANT; a year of a hundred tenants is 1,200 records.

const prefixUsage = "/usage/"

// usageRecord is one tenant's roll-up of one UTC month.
type usageRecord struct {
	Tenant string                `json:"tenant"`
	Month  string                `json:"month"` // 2006-01
	Days   map[string][]usageRow `json:"days"`  // 2006-01-02 → rows
}

// usageRow is what deleted jobs of a tenant ran on one day in one group.
type usageRow struct {
	Region      string  `json:"region,omitempty"`
	SKU         string  `json:"sku,omitempty"`
	Kind        string  `json:"kind"`
	Reservation string  `json:"reservation,omitempty"`
	USD         float64 `json:"usd"`
	GPUHours    float64 `json:"gpu_hours"`
	CPUHours    float64 `json:"cpu_hours,omitempty"`
	Attempts    int     `json:"attempts,omitempty"` // attempts that started that day
	Jobs        int     `json:"jobs,omitempty"`     // jobs whose last attempt ended that day
}

const (
	oneDay      = 24 * time.Hour
	dayLayout   = "2006-01-02"
	monthLayout = "2006-01"
)

func usageKey(month, tenant string) string { return prefixUsage + month + "/" + tenant }

// usageKeys returns the roll-up keys that j's attempts fall in.
func usageKeys(j *model.Job) []string {
	var keys []string
	for i := range j.Status.Attempts {
		from, to, ok := attemptSpan(j, i, time.Time{}, j.Status.EndedAt)
		if !ok {
			continue
		}
		for m := monthOf(from); m.Before(to); m = m.AddDate(0, 1, 0) {
			if k := usageKey(m.Format(monthLayout), j.Spec.Tenant); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

func monthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// addUsage adds what ended job j ran to recs, by key, day by day: the same
// USD and GPU-hours Cost and Accounting count for it.
func addUsage(recs map[string]*usageRecord, j *model.Job, w *world, tb *price.Table) {
	gpus := float64(j.Spec.Resources.MilliPerInstance()) / model.MilliPerGPU
	cpus := float64(j.Spec.Resources.CPUMilli) / 1000
	last := -1
	for i := range j.Status.Attempts {
		if _, _, ok := attemptSpan(j, i, time.Time{}, j.Status.EndedAt); ok {
			last = i
		}
	}
	for i := range j.Status.Attempts {
		a := &j.Status.Attempts[i]
		from, to, ok := attemptSpan(j, i, time.Time{}, j.Status.EndedAt)
		if !ok {
			continue
		}
		rates, kind := attemptRates(j, a, w, tb)
		for d := from.UTC().Truncate(oneDay); d.Before(to); d = d.Add(oneDay) {
			s, e := maxTime(from, d), minTime(to, d.Add(oneDay))
			counted := map[usageRow]bool{}
			for k, name := range a.Nodes {
				node := w.nodes[name]
				g := usageRow{Region: node.Region, SKU: node.SKU, Kind: string(kind), Reservation: j.Spec.Placement.Reservation}
				r := usageRowOf(recs, j.Spec.Tenant, d, g)
				r.USD += price.Cost(rates[k], e.Sub(s))
				r.GPUHours += gpus * e.Sub(s).Hours()
				r.CPUHours += cpus * e.Sub(s).Hours()
				if counted[g] {
					continue
				}
				counted[g] = true
				if !from.Before(d) {
					r.Attempts++
				}
				if i == last && !to.After(d.Add(oneDay)) {
					r.Jobs++
				}
			}
		}
	}
}

// usageRowOf returns the row of recs for tenant's day d in the group of
// g, adding it (and its record) when new.
func usageRowOf(recs map[string]*usageRecord, tenant string, d time.Time, g usageRow) *usageRow {
	month := d.Format(monthLayout)
	key := usageKey(month, tenant)
	rec := recs[key]
	if rec == nil {
		rec = &usageRecord{Tenant: tenant, Month: month}
		recs[key] = rec
	}
	return rec.row(d.Format(dayLayout), g)
}

// row returns rec's row of the day ds in the group of g (its region, SKU,
// kind and reservation), adding it when new.
func (rec *usageRecord) row(ds string, g usageRow) *usageRow {
	if rec.Days == nil {
		rec.Days = map[string][]usageRow{}
	}
	rows := rec.Days[ds]
	for i := range rows {
		if r := &rows[i]; r.Region == g.Region && r.SKU == g.SKU && r.Kind == g.Kind && r.Reservation == g.Reservation {
			return r
		}
	}
	rec.Days[ds] = append(rows, usageRow{Region: g.Region, SKU: g.SKU, Kind: g.Kind, Reservation: g.Reservation})
	return &rec.Days[ds][len(rec.Days[ds])-1]
}

// merge adds the rows of add to rec.
func (rec *usageRecord) merge(add *usageRecord) {
	for ds, rows := range add.Days {
		for _, r := range rows {
			have := rec.row(ds, r)
			have.USD += r.USD
			have.GPUHours += r.GPUHours
			have.Attempts += r.Attempts
			have.Jobs += r.Jobs
		}
	}
}

// purgeJobs deletes the ended jobs (their records as read) and adds what
// they ran to the roll-ups, in one transaction; a job whose record changed
// meanwhile is left for the next purge. It returns the records deleted.
func (s *Server) purgeJobs(ctx context.Context, jobs []store.KV, w *world, tb *price.Table) ([]store.KV, int64, error) {
	for try := 0; len(jobs) > 0; try++ {
		recs := map[string]*usageRecord{}
		txn := store.Txn{}
		for _, kv := range jobs {
			j, err := decodeJob(kv.Value)
			if err != nil {
				return nil, 0, fmt.Errorf("read %s: %w", kv.Key, err)
			}
			addUsage(recs, j, w, tb)
			txn.If = append(txn.If, store.ModRevIs(kv.Key, kv.ModRev))
			txn.Then = append(txn.Then, store.DeleteOp(kv.Key))
		}
		for key, add := range recs {
			kv, err := s.st.Get(ctx, key)
			switch {
			case errors.Is(err, store.ErrNotFound):
				txn.If = append(txn.If, store.Absent(key))
			case err != nil:
				return nil, 0, fmt.Errorf("read %s: %w", key, err)
			default:
				var have usageRecord
				if err := json.Unmarshal(kv.Value, &have); err != nil {
					return nil, 0, fmt.Errorf("read %s: %w", key, err)
				}
				have.merge(add)
				add = &have
				txn.If = append(txn.If, store.ModRevIs(key, kv.ModRev))
			}
			b, err := json.Marshal(add)
			if err != nil {
				return nil, 0, fmt.Errorf("encode %s: %w", key, err)
			}
			if len(b) > store.MaxValueLen {
				return nil, 0, fmt.Errorf("the roll-up %s would take %d bytes, over the store's limit", key, len(b))
			}
			txn.Then = append(txn.Then, store.PutOp(key, b))
		}
		rev, err := s.st.Txn(ctx, txn)
		var ce *store.ConflictError
		if !errors.As(err, &ce) {
			if err != nil {
				return nil, 0, err
			}
			return jobs, rev, nil
		}
		if try == 3 {
			return nil, 0, err
		}
		// A job that changed stays; a roll-up that changed is read again.
		jobs = slices.DeleteFunc(jobs, func(kv store.KV) bool { return kv.Key == ce.Key })
	}
	return nil, 0, nil
}

// usageBatches reads the records of refs and groups them into batches
// whose deletes and roll-up writes fit one transaction (deleteBatch
// operations). A record gone meanwhile is skipped; so is a job whose
// roll-ups alone would not fit (it would have run for years).
func (s *Server) usageBatches(ctx context.Context, refs []store.KV) ([][]store.KV, error) {
	var out [][]store.KV
	var batch []store.KV
	keys := map[string]bool{}
	for _, ref := range refs {
		kv, err := s.st.Get(ctx, ref.Key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("read %s: %w", ref.Key, err)
		}
		j, err := decodeJob(kv.Value)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", ref.Key, err)
		}
		mine := usageKeys(j)
		if 1+len(mine) > deleteBatch {
			s.log.Warn("job kept past its retention: its usage spans too many months to roll up", "job", j.ID)
			continue
		}
		fresh := 0
		for _, k := range mine {
			if !keys[k] {
				fresh++
			}
		}
		if len(batch)+len(keys)+1+fresh > deleteBatch {
			out, batch, keys = append(out, batch), nil, map[string]bool{}
		}
		batch = append(batch, kv)
		for _, k := range mine {
			keys[k] = true
		}
	}
	if len(batch) > 0 {
		out = append(out, batch)
	}
	return out, nil
}

// usageDays calls fn for every roll-up row of a tenant keep accepts on a
// day that lies whole within [since, until).
func (s *Server) usageDays(ctx context.Context, since, until time.Time, keep func(tenant string) bool,
	fn func(tenant string, r usageRow)) error {
	kvs, _, err := s.st.List(ctx, prefixUsage)
	if err != nil {
		return fmt.Errorf("list usage roll-ups: %w", err)
	}
	for _, kv := range kvs {
		var rec usageRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return fmt.Errorf("read %s: %w", kv.Key, err)
		}
		if !keep(rec.Tenant) {
			continue
		}
		for ds, rows := range rec.Days {
			d, err := time.Parse(dayLayout, ds)
			if err != nil || d.Before(since) || d.Add(oneDay).After(until) {
				continue
			}
			for _, r := range rows {
				fn(rec.Tenant, r)
			}
		}
	}
	return nil
}

// partialDays returns the UTC days that [since, until) covers only in
// part and that may hold deleted jobs' work (before horizon).
func partialDays(since, until, horizon time.Time) []string {
	var out []string
	for _, t := range []time.Time{since, until} {
		if d := t.UTC().Truncate(oneDay); !d.Equal(t) && d.Before(horizon) && !slices.Contains(out, d.Format(dayLayout)) {
			out = append(out, d.Format(dayLayout))
		}
	}
	return out
}

// retentionText is the warning of a report by by over [since, until) when
// jobs that ended before horizon were deleted; "" when it lacks nothing.
func retentionText(since, until, horizon time.Time, by string, r time.Duration) string {
	if !since.Before(horizon) {
		return ""
	}
	deleted := fmt.Sprintf("jobs that ended before %s are deleted (allot server --job-retention %s)", horizon.UTC().Format(time.RFC3339), r)
	if by == ByJob {
		return deleted + ": this report by job does not list them; by tenant, region or sku their work is counted"
	}
	if days := partialDays(since, until, horizon); len(days) > 0 {
		return deleted + ": their work is counted for the UTC days the period covers whole, not on " + strings.Join(days, " and ")
	}
	return ""
}
