package server

import (
	"context"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// phaseCounts returns how many observations allot_cycle_phase_seconds holds
// for each phase.
func phaseCounts(t *testing.T, s *Server) map[string]uint64 {
	t.Helper()
	fams, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != "allot_cycle_phase_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					out[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}

// A cycle that binds observes each of its phases once; one with nothing
// to write stops after plan; the watch observes the commit of the cycle
// (a revision with the fence), and not the submits' revisions.
func TestCyclePhases(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- h.srv.watch(ctx) }()
	defer func() { cancel(); <-watched }()

	if got := phaseCounts(t, h.srv); len(got) != len(CyclePhases) {
		t.Fatalf("before any cycle: %v, want every phase at 0", got)
	}
	j := h.submit(copilot, chat)
	h.clock.Advance(time.Second)
	h.cycle() // binds j
	h.cycle() // nothing to write
	h.submit(copilot, chat)
	want := map[string]uint64{phaseSnapshot: 2, phasePrepare: 2, phasePlan: 2, phaseEncode: 1, phaseCommit: 1, phasePublish: 1, phaseWatch: 1}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := phaseCounts(t, h.srv)
		same := len(got) == len(want)
		for p, n := range want {
			same = same && got[p] == n
		}
		if same {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("phase counts %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := h.job(j.ID).Status.State; got != model.StateRunning {
		t.Fatalf("job %s, want Running", got)
	}
}

// countObserver counts observations.
type countObserver struct{ n int }

func (c *countObserver) Observe(float64) { c.n++ }

// The watch span of a cycle's revision ends with the fence when events
// come in key order (bolt), and at the next revision when the fence comes
// first (etcd's order of operations); a revision without the fence (a
// submit) is not a cycle's.
func TestWatchSpan(t *testing.T) {
	ev := func(rev int64, key string) store.Event {
		return store.Event{Type: store.Put, Rev: rev, KV: store.KV{Key: key, ModRev: rev}}
	}
	job := prefixJobs + "j1"
	tests := []struct {
		name   string
		events []store.Event
		after  []int // observations after each event
	}{
		{"key order", []store.Event{ev(5, job), ev(5, prefixJobs+"j2"), ev(5, keyFence), ev(6, job)}, []int{0, 0, 1, 1}},
		{"fence first", []store.Event{ev(5, keyFence), ev(5, job), ev(6, job), ev(7, job)}, []int{0, 0, 1, 1}},
		{"submits only", []store.Event{ev(5, job), ev(6, job), ev(7, job)}, []int{0, 0, 0}},
		{"two cycles", []store.Event{ev(5, job), ev(5, keyFence), ev(6, keyFence), ev(6, job), ev(7, job), ev(7, keyFence)}, []int{0, 1, 1, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c countObserver
			w := watchSpan{h: &c}
			for i, e := range tt.events {
				w.applied(e, time.Now())
				if c.n != tt.after[i] {
					t.Fatalf("after event %d (%d %s): %d observations, want %d", i, e.Rev, e.KV.Key, c.n, tt.after[i])
				}
			}
		})
	}
}
