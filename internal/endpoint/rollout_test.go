package endpoint

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// rolloutStep keeps desired replicas running, at most surge beyond it
// live, stops outdated replicas that do not run at once, and scales in
// current ones as before.
func TestRolloutStep(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	n := 0
	mk := func(state model.State, count int) []*model.Job {
		var out []*model.Job
		for range count {
			n++
			j := &model.Job{ID: fmt.Sprintf("r%d", n), Status: model.JobStatus{State: state, SubmittedAt: at}}
			if state == model.StateRunning {
				j.Status.StartedAt = at.Add(time.Duration(n) * time.Minute)
			}
			out = append(out, j)
		}
		return out
	}
	ids := func(js []*model.Job) string {
		var s []string
		for _, j := range js {
			s = append(s, j.ID)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		name              string
		desired           int
		current, outdated func() []*model.Job
		add               int
		stop              string
		notServing        string // a running replica that does not serve yet
		rollout           model.EndpointRollout
	}{
		{"no rollout, fill", 3, func() []*model.Job { return mk(model.StateRunning, 1) }, nil, 2, "", "", model.EndpointRollout{}},
		{"no rollout, scale in the newest", 1, func() []*model.Job { return mk(model.StateRunning, 2) }, nil, 0, "r2", "", model.EndpointRollout{}},
		{"start: one beyond", 3, nil, func() []*model.Job { return mk(model.StateRunning, 3) }, 1, "", "", model.EndpointRollout{}},
		{"new one queued: wait", 3, func() []*model.Job { return mk(model.StateQueued, 1) },
			func() []*model.Job { return mk(model.StateRunning, 3) }, 0, "", "", model.EndpointRollout{}},
		{"new one runs: the oldest old one stops, the next starts", 3, func() []*model.Job { return mk(model.StateRunning, 1) },
			func() []*model.Job { return mk(model.StateRunning, 3) }, 1, "r2", "", model.EndpointRollout{}},
		{"new one runs but does not serve yet: wait", 3, func() []*model.Job { return mk(model.StateRunning, 1) },
			func() []*model.Job { return mk(model.StateRunning, 3) }, 0, "", "r1", model.EndpointRollout{}},
		{"old ones not running stop at once", 3, func() []*model.Job { return mk(model.StateRunning, 1) },
			func() []*model.Job { return append(mk(model.StateQueued, 1), mk(model.StateRunning, 2)...) }, 1, "r2", "", model.EndpointRollout{}},
		{"eight: a surge of two", 8, nil, func() []*model.Job { return mk(model.StateRunning, 8) }, 2, "", "", model.EndpointRollout{}},
		{"scale to zero mid-way", 0, func() []*model.Job { return mk(model.StateQueued, 1) },
			func() []*model.Job { return mk(model.StateRunning, 2) }, 0, "r2 r3 r1", "", model.EndpointRollout{}},
		{"scale in mid-way", 1, func() []*model.Job { return mk(model.StateRunning, 2) },
			func() []*model.Job { return mk(model.StateRunning, 1) }, 0, "r3 r2", "", model.EndpointRollout{}},
		{"in place: the oldest stops, one starts", 3, nil, func() []*model.Job { return mk(model.StateRunning, 3) }, 1, "r1", "",
			model.EndpointRollout{MaxUnavailable: 1}},
		{"in place: wait for the new one to serve", 3, func() []*model.Job { return mk(model.StateQueued, 1) },
			func() []*model.Job { return mk(model.StateRunning, 2) }, 0, "", "", model.EndpointRollout{MaxUnavailable: 1}},
		{"in place: it serves, the next goes", 3, func() []*model.Job { return mk(model.StateRunning, 1) },
			func() []*model.Job { return mk(model.StateRunning, 2) }, 1, "r2", "", model.EndpointRollout{MaxUnavailable: 1}},
		{"surge 2 and 1 unavailable at once", 4, nil, func() []*model.Job { return mk(model.StateRunning, 4) }, 3, "r1", "",
			model.EndpointRollout{MaxSurge: 2, MaxUnavailable: 1}},
	} {
		n = 0
		var cur, old []*model.Job
		if c.current != nil {
			cur = c.current()
		}
		if c.outdated != nil {
			old = c.outdated()
		}
		surge, unavailable := c.rollout.Bounds(c.desired)
		add, stop := rolloutStep(c.desired, surge, unavailable, cur, old, func(j *model.Job) bool { return j.Status.State == model.StateRunning && j.ID != c.notServing })
		if add != c.add || ids(stop) != c.stop {
			t.Errorf("%s: add %d, stop [%s]; want %d, [%s]", c.name, add, ids(stop), c.add, c.stop)
		}
	}
}

// A replica submitted before templates were labelled has the endpoint's
// template until the first change, then the one before it.
func TestUnlabelledReplicaTemplate(t *testing.T) {
	e := &Endpoint{Spec: parseEndpoint(t, chatEndpoint)}
	bare := &model.Job{Spec: model.JobSpec{Labels: map[string]string{LabelEndpoint: "chat"}}}
	if cur, old := byTemplate(e, []*model.Job{bare}); len(cur) != 1 || len(old) != 0 {
		t.Fatalf("before any change: current %d, outdated %d", len(cur), len(old))
	}
	e.Unlabelled = e.template()
	e.Spec.Env = map[string]string{"MODEL_REVISION": "2"}
	if cur, old := byTemplate(e, []*model.Job{bare}); len(cur) != 0 || len(old) != 1 {
		t.Fatalf("after a change: current %d, outdated %d", len(cur), len(old))
	}
	e.Spec.Env = map[string]string{} // empty is no env, as the store keeps it
	if cur, _ := byTemplate(e, []*model.Job{bare}); len(cur) != 1 {
		t.Fatal("an empty env is another template than none")
	}
}

// A template's name must not change between versions of allot for the same
// spec: every replica of every endpoint would be replaced on an upgrade. A
// field added to what shapes a replica must leave the names of existing
// templates alone (omitempty in templateRecord).
func TestTemplateNameIsStable(t *testing.T) {
	e := &Endpoint{Spec: parseEndpoint(t, chatEndpoint)}
	if got := e.template(); got != "59753b677f" {
		t.Fatalf("the template of chatEndpoint is %s, was 59753b677f: an upgrade would roll every endpoint's replicas", got)
	}
	e.Restarted = time.Date(2026, 6, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	if got := e.template(); got != templateOf(e.Spec, e.Restarted.UTC()) || got == "59753b677f" {
		t.Fatalf("a restarted template is %s", got)
	}
}
