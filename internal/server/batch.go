package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// newJob checks a job p submits — p may submit for its tenant, the spec
// is valid, the tenant known, the job admissible — and returns it queued at
// now, with a new ID and its stored form. chosen, when not nil, keeps the
// regions chosen so far in a batch by job shape, so that the members of an
// array (alike but for their index) cost one forecast, not one each.
func (s *Server) newJob(w *world, p Principal, spec model.JobSpec, now time.Time, chosen map[string]string) (*model.Job, []byte, error) {
	if !p.Sees(spec.Tenant) {
		return nil, nil, refuse(CodeForbidden, "tenant", "a token of tenant %q may not submit jobs of tenant %q", p.Tenant, spec.Tenant)
	}
	if err := spec.Validate(); err != nil {
		return nil, nil, fromField(err)
	}
	if err := s.checkGrace(spec.Checkpoint.Grace, "checkpoint.grace"); err != nil {
		return nil, nil, err
	}
	if !w.tenants[spec.Tenant] {
		return nil, nil, refuse(CodeInvalidSpec, "tenant", "unknown tenant %q%s", spec.Tenant, model.DidYouMean(spec.Tenant, w.tenantNames()))
	}
	if err := s.admissible(w, spec, now); err != nil {
		return nil, nil, err
	}
	if err := s.budgetAllows(&spec, now); err != nil {
		return nil, nil, err
	}
	j := &model.Job{Spec: spec, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: now}}
	j.ID = newJobID(spec.Name, now)
	waitForBegin(j, now)
	if len(spec.Placement.Regions) >= 2 {
		key := shape(&spec) + "|" + spec.Placement.DataRegion
		r, ok := chosen[key]
		if !ok {
			r = s.chooseRegion(w, j, now)
			if chosen != nil {
				chosen[key] = r
			}
		}
		if r != "" {
			j.Status.Region, j.Status.RegionAt = r, now
		}
	}
	rec := encodeJob(j)
	if n := len(rec); n > MaxJobRecord {
		return nil, nil, refuse(CodeTooLarge, "", "the job takes %d bytes once stored, over the limit of %d KiB per job "+
			"(limit: the store keeps values of at most %d KiB and a job needs room to record its attempts); "+
			"shorten its command, env or name", n, MaxJobRecord>>10, store.MaxValueLen>>10)
	}
	return j, rec, nil
}

// MaxBatch is the most jobs one SubmitBatch takes: a job array at its
// largest (model.MaxArraySize).
const MaxBatch = model.MaxArraySize

// Refusal is one job of a batch that the server refuses: its index in the
// batch, its name, and why.
type Refusal struct {
	Index int
	Name  string
	Err   *Error
}

// BatchError refuses a whole batch: it lists every job refused. None of
// the batch was stored.
type BatchError struct {
	Total    int
	Refusals []Refusal
}

func (e *BatchError) Error() string {
	msg := fmt.Sprintf("%d of %d jobs refused; none was submitted", len(e.Refusals), e.Total)
	if len(e.Refusals) > 0 {
		r := e.Refusals[0]
		msg += fmt.Sprintf(" (job %d, %s: %v)", r.Index, r.Name, r.Err)
	}
	return msg
}

// SubmitBatch stores the jobs of specs, all or none: every job is checked
// as Submit checks it, and the batch is refused (a *BatchError listing
// every refused job) when any is; otherwise the jobs are stored in one
// store transaction, so that a failure of the store, too, leaves none.
// The jobs are returned in the order of specs.
func (s *Server) SubmitBatch(ctx context.Context, p Principal, specs []model.JobSpec) ([]*model.Job, error) {
	jobs, _, err := s.SubmitBatchKeyed(ctx, p, "", specs)
	return jobs, err
}

// batchSize refuses a batch of no job or of more than MaxBatch.
func batchSize(specs []model.JobSpec) error {
	if len(specs) == 0 {
		return refuse(CodeInvalidSpec, "jobs", "the batch holds no job")
	}
	if len(specs) > MaxBatch {
		return refuse(CodeInvalidSpec, "jobs", "the batch holds %d jobs, over the limit of %d per batch; submit it in parts",
			len(specs), MaxBatch)
	}
	return nil
}

// batchJobs checks the jobs of a batch p submits at now, each as Submit
// checks it and the batch against p's job limit, and returns them queued
// with their stored forms and the links of its pipeline steps; a
// *BatchError lists every job refused when any is.
func (s *Server) batchJobs(p Principal, specs []model.JobSpec, now time.Time) ([]*model.Job, [][]byte, [][]link, error) {
	if err := s.checkJobLimit(p, len(specs)); err != nil {
		return nil, nil, nil, err
	}
	w := s.world()
	jobs := make([]*model.Job, len(specs))
	recs := make([][]byte, len(specs))
	be := &BatchError{Total: len(specs)}
	chosen := map[string]string{}
	for i, spec := range specs {
		j, rec, err := s.newJob(w, p, spec, now, chosen)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				return nil, nil, nil, err
			}
			be.Refusals = append(be.Refusals, Refusal{Index: i, Name: spec.Name, Err: se})
			continue
		}
		jobs[i], recs[i] = j, rec
	}
	links, refused := s.pipelineOf(p, specs)
	be.Refusals = append(be.Refusals, refused...)
	if len(be.Refusals) > 0 {
		slices.SortStableFunc(be.Refusals, func(a, b Refusal) int { return a.Index - b.Index })
		return nil, nil, nil, be
	}
	return jobs, recs, links, nil
}

// SubmitBatchKeyed is SubmitBatch with a client's idempotency key, as
// SubmitKeyed: a repeat of the batch with the key returns the jobs the
// first one made.
func (s *Server) SubmitBatchKeyed(ctx context.Context, p Principal, key string, specs []model.JobSpec) ([]*model.Job, bool, error) {
	if err := batchSize(specs); err != nil {
		return nil, false, err
	}
	now := s.clock.Now()
	claim, prior, err := s.claimKey(ctx, p, key, specs, now)
	if err != nil || prior != nil {
		return prior, prior != nil, err
	}
	jobs, recs, links, err := s.batchJobs(p, specs, now)
	if err != nil {
		return nil, false, err
	}
	for try := 0; ; try++ {
		txn := store.Txn{If: make([]store.Cond, len(jobs)), Then: make([]store.Op, len(jobs))}
		seen := map[string]bool{}
		for i, j := range jobs {
			for try > 0 || seen[j.ID] { // a collision, in the store or in the batch
				j.ID = newJobID(j.Spec.Name, now)
				recs[i] = encodeJob(j)
				if !seen[j.ID] {
					break
				}
			}
			seen[j.ID] = true
			jobKey := prefixJobs + j.ID
			txn.If[i], txn.Then[i] = store.Absent(jobKey), store.PutOp(jobKey, recs[i])
		}
		if links != nil && s.block(jobs, links) { // the IDs are final: link the steps
			for i, j := range jobs {
				if len(j.Spec.After) > 0 {
					recs[i] = encodeJob(j)
					txn.Then[i] = store.PutOp(prefixJobs+j.ID, recs[i])
				}
			}
		}
		claim.bind(&txn, jobs)
		rev, err := s.st.Txn(ctx, txn)
		if claim.lost(err) {
			prior, err := s.replay(ctx, p, key, specs, now)
			return prior, err == nil, err
		}
		if errors.Is(err, store.ErrConflict) && try < 3 {
			continue // a random suffix collided: new IDs for all
		}
		if err != nil {
			return nil, false, fmt.Errorf("store %d jobs: %w", len(jobs), err)
		}
		s.cache.putJobs(jobs, rev)
		break
	}
	s.m.submits.Add(float64(len(jobs)))
	s.log.Info("jobs submitted", "jobs", len(jobs), "by", p.Name())
	s.Kick()
	return jobs, false, nil
}
