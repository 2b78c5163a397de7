package endpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/refusal"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// chatEndpoint is an endpoint of T4 quarters whose replica sustains 15
// requests/s at its SLO, tuned to scale in within seconds.
const chatEndpoint = `{name: chat, tenant: copilot, model: llama, resources: {gpu_milli: 250, gpu_models: [T4]},
  min_replicas: 1, max_replicas: 4, slo: {p95_ms: 150}, throughput: {T4: 15},
  autoscale: {scale_in_after: 10s, scale_in_interval: 2s, lead_time: 10s, peak_window: 10s}}`

func parseEndpoint(t *testing.T, doc string) model.EndpointSpec {
	t.Helper()
	specs, err := spec.ParseEndpoints("test", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return specs[0]
}

// tenant is a Caller of one tenant.
type tenant string

func (c tenant) Name() string           { return string(c) }
func (c tenant) Sees(other string) bool { return string(c) == other }

// fakeHost is a Host in memory: records with revisions, jobs that a test
// moves through their states, a clock that moves only when told. It holds
// no lock: the tests call the Book from one goroutine.
type fakeHost struct {
	t       *testing.T
	now     time.Time
	rev     int64
	records map[string]store.KV
	tokens  map[string]string // token -> endpoint
	jobs    []*model.Job      // in submit order
	audits  []string
}

var _ Host = (*fakeHost)(nil)

func newFakeHost(t *testing.T) *fakeHost {
	return &fakeHost{t: t, now: t0, records: map[string]store.KV{}, tokens: map[string]string{}}
}

func (h *fakeHost) Now() time.Time { return h.now }

func (h *fakeHost) List(context.Context) ([]store.KV, error) {
	var out []store.KV
	for _, kv := range h.records {
		out = append(out, kv)
	}
	slices.SortFunc(out, func(a, b store.KV) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (h *fakeHost) Get(_ context.Context, name string) (store.KV, error) {
	kv, ok := h.records[name]
	if !ok {
		return store.KV{}, store.ErrNotFound
	}
	return kv, nil
}

func (h *fakeHost) put(name string, rec []byte) {
	h.rev++
	h.records[name] = store.KV{Key: "/endpoints/" + name, Value: rec, ModRev: h.rev}
}

func (h *fakeHost) Create(_ context.Context, name string, rec []byte, token string, _ time.Time) error {
	if _, ok := h.records[name]; ok {
		return store.ErrConflict
	}
	h.put(name, rec)
	h.tokens[token] = name
	return nil
}

func (h *fakeHost) Put(_ context.Context, name string, rec []byte, modRev int64) error {
	if kv, ok := h.records[name]; !ok || kv.ModRev != modRev {
		return store.ErrConflict
	}
	h.put(name, rec)
	return nil
}

func (h *fakeHost) Delete(_ context.Context, name string, modRev int64, token string) error {
	if kv, ok := h.records[name]; !ok || kv.ModRev != modRev {
		return store.ErrConflict
	}
	delete(h.records, name)
	delete(h.tokens, token)
	return nil
}

func (h *fakeHost) NewToken() string { return fmt.Sprintf("token-%d", len(h.tokens)+1) }

func (h *fakeHost) Replicas() map[string][]*model.Job {
	out := map[string][]*model.Job{}
	for _, j := range h.jobs {
		if name := ReplicaOf(j.Spec.Labels); name != "" {
			out[name] = append(out[name], j)
		}
	}
	return out
}

func (h *fakeHost) Job(id string) (*model.Job, bool) {
	for _, j := range h.jobs {
		if j.ID == id {
			return j, true
		}
	}
	return nil, false
}

func (h *fakeHost) JobsChanged() <-chan struct{} { return make(chan struct{}) }

func (h *fakeHost) Submit(_ context.Context, _ string, sp model.JobSpec) (*model.Job, error) {
	if err := sp.Validate(); err != nil {
		h.t.Fatalf("the book submitted an invalid replica: %v", err)
	}
	j := &model.Job{ID: fmt.Sprintf("r%d", len(h.jobs)+1), Spec: sp, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: h.now}}
	h.jobs = append(h.jobs, j)
	return j, nil
}

func (h *fakeHost) Cancel(_ context.Context, _, id string) error {
	j, ok := h.Job(id)
	switch {
	case !ok:
		return refusal.New(refusal.NotFound, "", "no job %s", id)
	case j.Status.State.Terminal():
		return refusal.New(refusal.Conflict, "", "job %s ended", id)
	}
	j.Status.State, j.Status.EndedAt, j.Status.Allocations = model.StateCanceled, h.now, nil
	return nil
}

func (h *fakeHost) Admissible(model.JobSpec, time.Time) error { return nil }

func (h *fakeHost) CheckLimit(string, int, string) error { return nil }

func (h *fakeHost) Tenant(name string) bool { return name == "copilot" }

func (h *fakeHost) GPUModel(string) string { return "T4" }

func (h *fakeHost) Address(node string) string { return node }

func (h *fakeHost) Callers() map[string][]string { return nil }

func (h *fakeHost) Audit(_ context.Context, c Caller, owner, action, object, _ string) {
	h.audits = append(h.audits, c.Name()+" "+action+" "+object+" of "+owner)
}

// start runs every queued replica, as a scheduling cycle would.
func (h *fakeHost) start() { h.startBefore(h.now.Add(time.Nanosecond)) }

// startBefore runs the queued replicas submitted before t.
func (h *fakeHost) startBefore(t time.Time) {
	for _, j := range h.jobs {
		if j.Status.State == model.StateQueued && j.Status.SubmittedAt.Before(t) {
			j.Status.State, j.Status.StartedAt = model.StateRunning, h.now
			j.Status.Allocations = []model.Allocation{{Node: "t4-" + j.ID}}
			j.Status.Attempts = append(j.Status.Attempts, model.Attempt{Number: len(j.Status.Attempts) + 1, Nodes: []string{"t4-" + j.ID}})
		}
	}
}

// live returns the replicas that have not ended, and how many of them
// run.
func (h *fakeHost) live() (live []*model.Job, running int) {
	for _, j := range h.jobs {
		if !j.Status.State.Terminal() {
			live = append(live, j)
			if j.Status.State == model.StateRunning {
				running++
			}
		}
	}
	return live, running
}

// report posts, as each running replica of chat, a p95 of 21 ms; the
// first of them reports all rps.
func report(t *testing.T, b *Book, h *fakeHost, rps float64) {
	t.Helper()
	first := true
	for _, j := range h.jobs {
		if j.Status.State != model.StateRunning {
			continue
		}
		r := Report{P95Ms: 21, Replica: j.ID + ".1"}
		if first {
			r.RequestsPerSec, r.Utilisation, first = rps, rps/400, false
		}
		if err := b.Report(context.Background(), tenant("copilot"), false, "chat", r); err != nil {
			t.Fatalf("report: %v", err)
		}
	}
}
