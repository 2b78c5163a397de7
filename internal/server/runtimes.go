package server

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Run times of finished jobs, for the estimates of jobs that state no
// duration (forecast.Options.RunTime). A job without a duration would
// otherwise be taken to run forever, and every job behind it to wait
// forever ("no start within the horizon"). Slurm and Kubernetes users
// expect an estimate anyway; the best guess is how long similar jobs ran:
//
//  1. the jobs of the same tenant and name (a training script run again);
//  2. else the jobs of the same tenant and shape (instances, GPUs per
//     instance and GPU fraction);
//  3. else nothing from history.
//
// The estimate is the median of the latest runsKept runs, bounded by the
// job's retry timeout (an attempt never runs longer); with no history the
// retry timeout itself is the estimate, an upper bound, and the basis says
// so. Only clean runs count: one attempt that succeeded, never preempted,
// resized, retried or lost, so that a run resumed from a checkpoint does not pass
// for a short one. History stays within a tenant: an estimate never reveals
// how long another tenant's jobs ran.
//
// The book is fed by the cache (cache.go) from every job record it reads,
// at load and from the watch, so a restarted server estimates as before.

// runsKept is how many of the latest runs of one kind the book keeps.
const runsKept = 16

// maxRunKinds bounds the names and shapes the book remembers; beyond it a
// kind seen once is forgotten for a new one.
const maxRunKinds = 50_000

// runShape is the shape of a job's allocation, for runs of the same shape.
type runShape struct {
	tenant    string
	instances int
	gpus      int
	milli     int64
}

type runName struct{ tenant, name string }

// runs are the latest run times of one kind, oldest first.
type runs struct{ d []time.Duration }

func (r *runs) add(d time.Duration) {
	if len(r.d) == runsKept {
		r.d = append(r.d[:0], r.d[1:]...)
	}
	r.d = append(r.d, d)
}

func (r *runs) median() time.Duration {
	s := slices.Clone(r.d)
	slices.Sort(s)
	return s[len(s)/2]
}

// runBook remembers run times by name and by shape. It is safe for
// concurrent use.
type runBook struct {
	mu      sync.Mutex // guards the maps
	byName  map[runName]*runs
	byShape map[runShape]*runs
}

func newRunBook() *runBook {
	return &runBook{byName: map[runName]*runs{}, byShape: map[runShape]*runs{}}
}

// runSample is what the book learns from one finished job.
type runSample struct {
	name  runName
	shape runShape
	ran   time.Duration
}

// sampleOf returns the run of j if it is a clean one (see above).
func sampleOf(j *model.Job) (runSample, bool) {
	st := j.Status
	clean := st.State == model.StateSucceeded && st.Preemptions == 0 && st.Resizes == 0 && st.Retries == 0 && st.Lost == 0
	return newSample(clean, j.Spec.Tenant, j.Spec.Name, j.Spec.Resources, st.StartedAt, st.EndedAt)
}

func newSample(clean bool, tenant, name string, r model.Resources, started, ended time.Time) (runSample, bool) {
	if !clean || started.IsZero() || !ended.After(started) {
		return runSample{}, false
	}
	return runSample{name: runName{tenant, name}, shape: shapeOf(tenant, r), ran: ended.Sub(started)}, true
}

func shapeOf(tenant string, r model.Resources) runShape {
	return runShape{tenant: tenant, instances: max(r.InstanceCount, 1), gpus: r.GPUsPerInstance, milli: r.GPUMilli}
}

// add records one run.
func (b *runBook) add(s runSample) {
	b.mu.Lock()
	defer b.mu.Unlock()
	addRun(b.byName, s.name, s.ran)
	addRun(b.byShape, s.shape, s.ran)
}

func addRun[K comparable](m map[K]*runs, k K, d time.Duration) {
	r := m[k]
	if r == nil {
		if len(m) >= maxRunKinds {
			for old, v := range m { // forget one kind seen once, or any
				if len(v.d) == 1 {
					delete(m, old)
					break
				}
			}
			if len(m) >= maxRunKinds {
				for old := range m {
					delete(m, old)
					break
				}
			}
		}
		r = &runs{}
		m[k] = r
	}
	r.add(d)
}

// estimate is how long j, which states no duration, is expected to run
// from its start, and the basis; zero when neither history nor a retry
// timeout says (forecast.Options.RunTime). A basis is "KIND: details".
func (b *runBook) estimate(j *model.Job) (time.Duration, string) {
	timeout := j.Spec.Retry.Timeout
	d, basis := b.fromHistory(j)
	switch {
	case d > 0 && timeout > 0 && d > timeout:
		return timeout, fmt.Sprintf("%s, bounded by its retry timeout of %s", basis, timeout)
	case d > 0:
		return d, basis
	case timeout > 0:
		return timeout, fmt.Sprintf("retry timeout: no similar job has run, so at most its timeout of %s", timeout)
	}
	return 0, ""
}

func (b *runBook) fromHistory(j *model.Job) (time.Duration, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.byName[runName{j.Spec.Tenant, j.Spec.Name}]; r != nil {
		return r.median(), fmt.Sprintf("history of the same job: the median of %d runs of %s/%s", len(r.d), j.Spec.Tenant, j.Spec.Name)
	}
	s := shapeOf(j.Spec.Tenant, j.Spec.Resources)
	if r := b.byShape[s]; r != nil {
		return r.median(), fmt.Sprintf("history of jobs of the same shape: the median of %d runs of %s's jobs of %s",
			len(r.d), j.Spec.Tenant, shapeText(s))
	}
	return 0, ""
}

func shapeText(s runShape) string {
	gpus := fmt.Sprintf("%d GPUs", s.gpus)
	if s.milli > 0 && s.milli < model.MilliPerGPU {
		gpus = fmt.Sprintf("%d×%.2f GPU", s.gpus, float64(s.milli)/model.MilliPerGPU)
	}
	if s.gpus == 0 {
		gpus = "no GPU"
	}
	return fmt.Sprintf("%d instance(s) of %s", s.instances, gpus)
}

// expectedRun is how long j runs from its start as the estimates assume:
// its duration, else the book's estimate; zero when unknown.
func (b *runBook) expectedRun(j *model.Job) (time.Duration, string) {
	if j.Spec.Duration > 0 {
		return j.Spec.Duration, "its duration"
	}
	return b.estimate(j)
}
