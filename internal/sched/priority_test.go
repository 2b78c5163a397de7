package sched_test

import (
	"math"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestPreemptForBetterPriority covers Config.PriorityGap: a job evicts its
// own tenant's work of its class whose value is at least the gap below its
// own, protected work waits, the cheapest such work goes first, and with
// the gap at zero nothing changes.
func TestPreemptForBetterPriority(t *testing.T) {
	all := On("h-1", 0, 1, 2, 3, 4, 5, 6, 7)
	low, high := On("h-1", 0, 1, 2, 3), On("h-1", 4, 5, 6, 7)
	tests := []struct {
		name    string
		gap     int
		world   func() *World
		victims map[string]sched.Reason
		want    map[string]sched.Reason
	}{{
		name: "off by default",
		world: func() *World {
			w := oneNode()
			w.Job("r", "bob").GPUs(1, 8).Running(Epoch, all)
			w.Job("j", "bob").GPUs(1, 8).Value(100)
			return w
		},
		want: map[string]sched.Reason{"j": sched.InsufficientCapacity},
	}, {
		name: "a better value evicts its own tenant's work",
		gap:  10,
		world: func() *World {
			w := oneNode()
			w.Job("r", "bob").GPUs(1, 8).Value(5).Running(Epoch, all)
			w.Job("j", "bob").GPUs(1, 8).Value(15)
			return w
		},
		victims: map[string]sched.Reason{"r": sched.BetterPriority},
		want:    map[string]sched.Reason{"j": sched.ReasonNone},
	}, {
		name: "a value less than the gap better does not",
		gap:  10,
		world: func() *World {
			w := oneNode()
			w.Job("r", "bob").GPUs(1, 8).Value(6).Running(Epoch, all)
			w.Job("j", "bob").GPUs(1, 8).Value(15)
			return w
		},
		want: map[string]sched.Reason{"j": sched.InsufficientCapacity},
	}, {
		name: "never another tenant's work",
		gap:  1,
		world: func() *World {
			w := oneNode()
			w.Job("r", "alice").GPUs(1, 8).Running(Epoch, all)
			w.Job("j", "bob").GPUs(1, 8).Value(1000)
			return w
		},
		want: map[string]sched.Reason{"j": sched.InsufficientCapacity},
	}, {
		name: "never work of another class",
		gap:  1,
		world: func() *World {
			w := oneNode()
			w.Job("r", "bob").GPUs(1, 8).Class(model.ClassReserved).Running(Epoch, all)
			w.Job("j", "bob").GPUs(1, 8).Value(1000)
			return w
		},
		want: map[string]sched.Reason{"j": sched.InsufficientCapacity},
	}, {
		name: "protected work waits",
		gap:  1,
		world: func() *World {
			w := oneNode()
			w.Job("r", "bob").GPUs(1, 8).Running(now.Add(-time.Minute), all)
			w.Job("j", "bob").GPUs(1, 8).Value(1000)
			return w
		},
		want: map[string]sched.Reason{"j": sched.AwaitingPreemption},
	}, {
		name: "the victim that loses least",
		gap:  1,
		world: func() *World {
			w := oneNode()
			w.Job("old-ckpt", "bob").GPUs(1, 4).Running(Epoch, low).Checkpointed(now.Add(-time.Hour))
			w.Job("new-ckpt", "bob").GPUs(1, 4).Running(Epoch, high).Checkpointed(now.Add(-time.Minute))
			w.Job("j", "bob").GPUs(1, 4).Value(1)
			return w
		},
		victims: map[string]sched.Reason{"new-ckpt": sched.BetterPriority},
		want:    map[string]sched.Reason{"j": sched.ReasonNone},
	}, {
		name: "only work the gap allows, however cheap the rest",
		gap:  10,
		world: func() *World {
			w := oneNode()
			w.Job("far", "bob").GPUs(1, 4).Value(0).Running(Epoch, low).Checkpointed(now.Add(-time.Hour))
			w.Job("near", "bob").GPUs(1, 4).Value(15).Running(Epoch, high).Checkpointed(now.Add(-time.Minute))
			w.Job("j", "bob").GPUs(1, 4).Value(20)
			return w
		},
		victims: map[string]sched.Reason{"far": sched.BetterPriority},
		want:    map[string]sched.Reason{"j": sched.ReasonNone},
	}, {
		name: "inside the tenant's own reservation",
		gap:  1,
		world: func() *World {
			w := oneNode().Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("mine", "bob").GPUs(1, 8).Reservation("r").Running(Epoch, all)
			w.Job("j", "bob").GPUs(1, 8).Reservation("r").Value(1)
			w.Job("other", "alice").GPUs(1, 8).Class(model.ClassReserved).Value(1)
			return w
		},
		victims: map[string]sched.Reason{"mine": sched.BetterPriority},
		want:    map[string]sched.Reason{"j": sched.ReasonNone, "other": sched.InsufficientCapacity},
	}, {
		name: "the widest values do not overflow",
		gap:  1,
		world: func() *World {
			w := oneNode()
			w.Job("r", "bob").GPUs(1, 4).Value(math.MinInt).Running(Epoch, low)
			w.Job("top", "bob").GPUs(1, 4).Value(math.MaxInt).Running(Epoch, high)
			w.Job("j", "bob").GPUs(1, 4).Value(math.MaxInt)
			w.Job("k", "bob").GPUs(1, 4).Value(math.MinInt)
			return w
		},
		victims: map[string]sched.Reason{"r": sched.BetterPriority},
		want:    map[string]sched.Reason{"j": sched.ReasonNone, "k": sched.InsufficientCapacity},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world()
			if err := w.Validate(); err != nil {
				t.Fatalf("invalid world: %v", err)
			}
			cfg := sched.Config{MinRunTime: sched.DefaultMinRunTime, PriorityGap: tc.gap}
			p := sched.New(cfg).Schedule(w.Snapshot(), now)
			got := map[string]sched.Reason{}
			for _, pr := range p.Preemptions {
				got[pr.Job] = pr.Reason
			}
			if len(got) != len(tc.victims) {
				t.Errorf("victims = %v, want %v", keys(got), keys(tc.victims))
			}
			for v, r := range tc.victims {
				if got[v] != r {
					t.Errorf("victim %s: reason %s, want %s (all: %v)", v, got[v], r, got)
				}
			}
			for job, want := range tc.want {
				expect(t, p, job, want)
			}
			// A Session decides alike.
			ss := sched.New(cfg).NewSession(&w.Fleet, &w.Tenancy)
			var queued []*model.Job
			for _, j := range w.Jobs {
				if j.Status.State == model.StateQueued {
					queued = append(queued, j)
				} else if err := ss.Hold(j); err != nil {
					t.Fatal(err)
				}
			}
			if g, x := planJSON(t, ss.Schedule(queued, now)), planJSON(t, p); string(g) != string(x) {
				t.Errorf("the Session's Plan differs\nsession:  %s\nschedule: %s", g, x)
			}
			if err := p.Apply(w.Jobs, now); err != nil {
				t.Fatal(err)
			}
			if err := CheckInvariants(w); err != nil {
				t.Fatal(err)
			}
		})
	}
}
