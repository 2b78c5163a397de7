package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/store"
)

// MaxJobRecord is the largest stored form of a job that Submit accepts:
// the store's limit on a value less 512 KiB, which the job's status
// (attempts, reasons) may grow into.
const MaxJobRecord = store.MaxValueLen - 512<<10

// Submit stores a new job for p and returns it once the store has made it
// durable. It refuses (with an *Error) a job of another tenant, of an
// unknown tenant, one that no SKU in its allowed regions can ever hold
// (SkuNotAvailable) and one that alone exceeds its tenant's hard quota
// everywhere it could run (QuotaExceeded). No lock is held while the store
// commits, so concurrent submits share one group commit.
func (s *Server) Submit(ctx context.Context, p Principal, spec model.JobSpec) (*model.Job, error) {
	if !p.sees(spec.Tenant) {
		return nil, refuse(CodeForbidden, "tenant", "a token of tenant %q may not submit jobs of tenant %q", p.Tenant, spec.Tenant)
	}
	if err := spec.Validate(); err != nil {
		return nil, fromField(err)
	}
	w := s.world()
	if !w.tenants[spec.Tenant] {
		return nil, refuse(CodeInvalidSpec, "tenant", "unknown tenant %q", spec.Tenant)
	}
	now := s.clock.Now()
	switch v := w.admit(s.core, spec, now); v.reason {
	case sched.SkuNotAvailable, sched.ResidencyForbidden:
		return nil, refuse(CodeSkuNotAvailable, "", "%s", v.detail)
	case sched.QuotaExceeded:
		return nil, refuse(CodeQuotaExceeded, "", "%s", v.detail)
	}
	j := &model.Job{Spec: spec, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: now}}
	j.ID = newJobID(spec.Name, now)
	rec := encodeJob(j)
	if n := len(rec); n > MaxJobRecord {
		return nil, refuse(CodeTooLarge, "", "the job takes %d bytes once stored, over the limit of %d KiB per job "+
			"(limit: the store keeps values of at most %d KiB and a job needs room to record its attempts); "+
			"shorten its command, env or name", n, MaxJobRecord>>10, store.MaxValueLen>>10)
	}
	for try := 0; ; try++ {
		if try > 0 {
			j.ID = newJobID(spec.Name, now)
			rec = encodeJob(j)
		}
		key := prefixJobs + j.ID
		rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.Absent(key)}, Then: []store.Op{store.PutOp(key, rec)}})
		if errors.Is(err, store.ErrConflict) && try < 3 {
			continue // the random suffix collided
		}
		if err != nil {
			return nil, fmt.Errorf("store job: %w", err)
		}
		s.cache.putJobs([]*model.Job{j}, rev)
		break
	}
	s.m.submits.Inc()
	s.log.Debug("job submitted", "job", j.ID, "tenant", spec.Tenant)
	s.Kick()
	return j, nil
}

// newJobID returns the job's name reduced to [a-z0-9-] (at most 24
// characters), a dash, the submit time in milliseconds as 9 characters of
// sortable base 32, and 4 random ones, e.g. "train-llama-1k2m3n4p5q7x3z".
// IDs of one name sort by submit time, so a burst of submits writes
// neighbouring keys: the store's B+tree dirties few pages per commit.
func newJobID(name string, now time.Time) string {
	var b strings.Builder
	dash := true
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 24 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	base := strings.TrimRight(b.String(), "-")
	if base == "" {
		base = "job"
	}
	const alphabet = "0123456789abcdefghijklmnopqrstuv" // sorts like the numbers it encodes
	var id [13]byte
	ms := uint64(max(now.UnixMilli(), 0))
	for i := 8; i >= 0; i-- {
		id[i] = alphabet[ms&31]
		ms >>= 5
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	for i, r := range rnd {
		id[9+i] = alphabet[r&31]
	}
	return base + "-" + string(id[:])
}

// Job returns the job with id as p may see it. A job that ended is read
// from the store.
func (s *Server) Job(ctx context.Context, p Principal, id string) (*model.Job, error) {
	ref, _, ok := s.cache.job(id)
	if !ok {
		return nil, refuse(CodeNotFound, "", "no job %q", id)
	}
	j, ok, err := s.jobFrom(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, refuse(CodeNotFound, "", "no job %q", id)
	}
	if !p.sees(j.Spec.Tenant) {
		return nil, refuse(CodeForbidden, "", "job %q belongs to another tenant", id)
	}
	return j, nil
}

// JobFilter narrows Jobs; empty fields match everything.
type JobFilter struct {
	State  model.State
	Tenant string
}

// Jobs returns the jobs p may see that match f, newest first. Jobs that
// ended are read from the store, one Get each.
func (s *Server) Jobs(ctx context.Context, p Principal, f JobFilter) ([]*model.Job, error) {
	match := func(tenant string, st model.State) bool {
		return p.sees(tenant) && (f.State == "" || st == f.State) && (f.Tenant == "" || tenant == f.Tenant)
	}
	refs := s.cache.jobList(match)
	out := make([]*model.Job, 0, len(refs))
	for _, ref := range refs {
		j, ok, err := s.jobFrom(ctx, ref)
		if err != nil {
			return nil, err
		}
		// The store may be ahead of the cache: match what it holds.
		if ok && match(j.Spec.Tenant, j.Status.State) {
			out = append(out, j)
		}
	}
	return out, nil
}

// Cancel ends a job that has not ended yet. Capacity it held is free for
// the next cycle, which it triggers.
func (s *Server) Cancel(ctx context.Context, p Principal, id string) (*model.Job, error) {
	key := prefixJobs + id
	for try := 0; ; try++ {
		kv, err := s.st.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
			// An ID that cannot be a key (bad UTF-8, too long) names no job.
			return nil, refuse(CodeNotFound, "", "no job %q", id)
		}
		if err != nil {
			return nil, fmt.Errorf("read job %s: %w", id, err)
		}
		old, err := decodeJob(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("read job %s: %w", id, err)
		}
		if !p.sees(old.Spec.Tenant) {
			return nil, refuse(CodeForbidden, "", "job %q belongs to another tenant", id)
		}
		if old.Status.State.Terminal() {
			return nil, refuse(CodeConflict, "", "job %s already ended: %s", id, old.Status.State)
		}
		now := s.clock.Now()
		j := endJob(old, model.StateCanceled, "Canceled", "canceled by "+p.Name(), -1, now)
		rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, kv.ModRev)},
			Then: []store.Op{store.PutOp(key, encodeJob(j))}})
		if errors.Is(err, store.ErrConflict) && try < 10 {
			continue // a cycle wrote the job meanwhile: decide again on the new state
		}
		if err != nil {
			return nil, fmt.Errorf("cancel job %s: %w", id, err)
		}
		s.cache.putJobs([]*model.Job{j}, rev)
		s.log.Info("job canceled", "job", id, "tenant", j.Spec.Tenant, "by", p.Name(), "was", old.Status.State, "rev", rev)
		s.Kick()
		return j, nil
	}
}

// Why is the scheduler's explanation of a job.
type Why struct {
	Job *model.Job
	// EstimatedStart is when a queued job could start by the estimate
	// described at Estimate; nil when there is none.
	EstimatedStart *time.Time
	// Policies say what operator policies did to the job's priority in
	// the last cycle (policies.go); the job's spec keeps its own.
	Policies []string
}

// Explain returns the job's reason and detail from the last cycle and, for
// a queued job, an estimated start.
func (s *Server) Explain(ctx context.Context, p Principal, id string) (Why, error) {
	j, err := s.Job(ctx, p, id)
	if err != nil {
		return Why{}, err
	}
	w := Why{Job: j, Policies: s.jobPolicies(j.ID)}
	if j.Status.State == model.StateQueued {
		now := s.clock.Now()
		w.EstimatedStart = s.Estimate(j, now)
		// A job held back after a lost attempt starts no earlier.
		if hold := j.Status.NotBefore; now.Before(hold) && (w.EstimatedStart == nil || w.EstimatedStart.Before(hold)) {
			w.EstimatedStart = &hold
		}
	}
	return w, nil
}

// Estimate is a simple, optimistic estimate of when queued job j could
// start. It looks only at capacity: the Ready nodes in j's allowed regions
// (and residency) whose SKU has j's GPU model and room for one instance,
// with the GPUs that running jobs hold on them now. Running jobs whose spec
// has a duration are assumed to end at started_at + duration; the others
// never. The estimate is the earliest of those ends (or now, for ends
// already due) after which the nodes have room for every instance
// (whole-GPU instances counted per node, a fraction on one GPU), ignoring
// topology, CPU, memory, power, quotas and jobs queued ahead. It is nil when
// j asks for no GPU, when its reason is not about capacity (no SKU, unknown
// tenant, reservation, no ready nodes), when it fits already (something
// other than capacity holds it), or when enough capacity never frees.
func (s *Server) Estimate(j *model.Job, now time.Time) *time.Time {
	r := j.Spec.Resources
	if r.GPUsPerInstance == 0 {
		return nil
	}
	switch j.Status.Reason {
	case sched.SkuNotAvailable.String(), sched.ResidencyForbidden.String(), sched.UnknownTenant.String(),
		sched.ReservationNotActive.String(), sched.NoReadyNodes.String():
		return nil
	}
	w := s.world()
	residency := map[string]string{}
	for _, rg := range w.fleet.Regions {
		residency[rg.Name] = rg.Residency
	}
	free := map[string][]int64{} // candidate node -> free milli per GPU
	for _, n := range w.fleet.Nodes {
		sku := w.fleet.Catalog[n.SKU]
		if n.Health != model.NodeReady || sku.GPUs < r.GPUsPerInstance || !r.AcceptsModel(sku.GPUModel) ||
			!allowed(j.Spec.Placement.Regions, n.Region) ||
			(j.Spec.Placement.Residency != "" && residency[n.Region] != j.Spec.Placement.Residency) {
			continue
		}
		f := make([]int64, sku.GPUs)
		for i := range f {
			f[i] = model.MilliPerGPU
		}
		free[n.Name] = f
	}
	if len(free) == 0 {
		return nil
	}
	type end struct {
		at  time.Time
		job *model.Job
	}
	var ends []end
	for _, h := range s.cache.holding() {
		touches := false
		for _, a := range h.Status.Allocations {
			if f, ok := free[a.Node]; ok {
				touches = true
				for _, g := range a.GPUs {
					if g >= 0 && g < len(f) {
						f[g] -= a.GPUMilli
					}
				}
			}
		}
		if touches && h.Spec.Duration > 0 && h.Status.State == model.StateRunning {
			ends = append(ends, end{at: h.Status.StartedAt.Add(h.Spec.Duration), job: h})
		}
	}
	fits := func() bool {
		need := r.InstanceCount
		for _, f := range free {
			if r.Fractional() {
				for _, g := range f {
					need -= int(max(g, 0) / r.GPUMilli)
				}
			} else {
				whole := 0
				for _, g := range f {
					if g == model.MilliPerGPU {
						whole++
					}
				}
				need -= whole / r.GPUsPerInstance
			}
			if need <= 0 {
				return true
			}
		}
		return need <= 0
	}
	if fits() {
		return nil
	}
	sort.Slice(ends, func(a, b int) bool { return ends[a].at.Before(ends[b].at) })
	for _, e := range ends {
		for _, a := range e.job.Status.Allocations {
			if f, ok := free[a.Node]; ok {
				for _, g := range a.GPUs {
					if g >= 0 && g < len(f) {
						f[g] += a.GPUMilli
					}
				}
			}
		}
		if fits() {
			t := e.at
			if t.Before(now) {
				t = now
			}
			t = t.UTC()
			return &t
		}
	}
	return nil
}

func allowed(regions []string, region string) bool {
	if len(regions) == 0 {
		return true
	}
	for _, r := range regions {
		if r == region {
			return true
		}
	}
	return false
}
