package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unique"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Finished jobs are most of the store (a million after a few months) and
// nothing in a cycle reads them, so the cache keeps of an ended job only
// what listing, counting and purging it need: its tenant, state, submit
// and end time (jobEntry). Everything else, for job show, why, logs and the full
// listing, is read back from the store by key (Server.jobFrom). Ended
// replicas of endpoints stay whole: endpoint reconciliation reads their
// status every few seconds.

// compact reports whether the cache keeps only j's listing fields.
func compact(j *model.Job) bool {
	return j.Status.State.Terminal() && endpoint.ReplicaOf(j.Spec.Labels) == ""
}

// entryOf returns the cache entry of j at modRev: j itself while it runs,
// only its listing fields once it ended.
func entryOf(j *model.Job, modRev int64) jobEntry {
	e := jobEntry{modRev: modRev, tenant: unique.Make(j.Spec.Tenant), state: knownState(j.Status.State),
		submitted: j.Status.SubmittedAt.UTC()}
	if e.state.Terminal() && !j.Status.EndedAt.IsZero() {
		e.ended = j.Status.EndedAt.Unix()
	}
	if !compact(j) {
		e.job = j
	}
	return e
}

// knownState returns s sharing the constant's bytes, so that a million
// cached entries do not each hold a copy of "Succeeded".
func knownState(s model.State) model.State {
	for _, k := range model.States {
		if s == k {
			return k
		}
	}
	return s
}

// jobHead is the part of a job record the cache decodes first: enough to
// keep an ended job without decoding the rest.
type jobHead struct {
	ID   string `json:"id"`
	Spec struct {
		Tenant string            `json:"tenant"`
		Labels map[string]string `json:"labels"`
		// for the run book (runtimes.go)
		Name      string `json:"name"`
		Instances int    `json:"instance_count"`
		GPUs      int    `json:"gpus_per_instance"`
		GPUMilli  int64  `json:"gpu_milli"`
	} `json:"spec"`
	Status struct {
		State       string    `json:"state"`
		SubmittedAt time.Time `json:"submitted_at"`
		EndedAt     time.Time `json:"ended_at"`
		// for the run book
		StartedAt   time.Time `json:"started_at"`
		Preemptions int       `json:"preemptions"`
		Resizes     int       `json:"resizes"`
		Retries     int       `json:"retries"`
		Lost        int       `json:"lost"`
	} `json:"status"`
}

// sample is the run the record tells of, if a clean one (runtimes.go).
func (h *jobHead) sample() (runSample, bool) {
	st := h.Status
	// A resized elastic job ran with several sizes: its run says nothing
	// of one shape's.
	clean := model.State(st.State) == model.StateSucceeded && st.Preemptions == 0 && st.Resizes == 0 && st.Retries == 0 && st.Lost == 0
	r := model.Resources{InstanceCount: h.Spec.Instances, GPUsPerInstance: h.Spec.GPUs, GPUMilli: h.Spec.GPUMilli}
	return newSample(clean, h.Spec.Tenant, h.Spec.Name, r, st.StartedAt, st.EndedAt)
}

// decodeEntry decodes a job record into its cache entry at modRev, and
// the run it tells of when it is a clean one (runtimes.go; ran false
// otherwise).
func decodeEntry(b []byte, modRev int64) (id string, e jobEntry, run runSample, ran bool, err error) {
	var h jobHead
	if err := json.Unmarshal(b, &h); err != nil {
		return "", jobEntry{}, runSample{}, false, err
	}
	st := knownState(model.State(h.Status.State))
	if h.ID != "" && st.Terminal() && endpoint.ReplicaOf(h.Spec.Labels) == "" {
		e := jobEntry{modRev: modRev, tenant: unique.Make(h.Spec.Tenant), state: st, submitted: h.Status.SubmittedAt.UTC()}
		if !h.Status.EndedAt.IsZero() {
			e.ended = h.Status.EndedAt.Unix()
		}
		run, ran = h.sample()
		return h.ID, e, run, ran, nil
	}
	j, err := decodeJob(b)
	if err != nil {
		return "", jobEntry{}, runSample{}, false, err
	}
	run, ran = sampleOf(j)
	return j.ID, entryOf(j, modRev), run, ran, nil
}

// jobRef is one job of a listing: the cached job, or only its ID when the
// cache keeps it compact.
type jobRef struct {
	id  string
	job *model.Job
}

// jobFrom returns ref's job, reading an ended one from the store. ok is
// false when the store no longer has it.
func (s *Server) jobFrom(ctx context.Context, ref jobRef) (j *model.Job, ok bool, err error) {
	if ref.job != nil {
		return ref.job, true, nil
	}
	kv, err := s.st.Get(ctx, prefixJobs+ref.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read job %s: %w", ref.id, err)
	}
	j, err = decodeJob(kv.Value)
	if err != nil {
		return nil, false, fmt.Errorf("read job %s: %w", ref.id, err)
	}
	return j, true, nil
}
