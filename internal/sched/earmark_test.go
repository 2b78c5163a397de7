package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestBeforeStart checks the nodes a reservation keeps ahead of its window
// ([now+2h, now+10h), one node, owned by bob): before the start they take
// only the owner's work, spot work, and work whose retry.timeout (plus its
// checkpoint grace) ends it by the start.
func TestBeforeStart(t *testing.T) {
	start := now.Add(2 * time.Hour)
	reserve := func(w *World) *World {
		return w.Reserve("r", "bob", h100, "eastus", 1, start, start.Add(8*time.Hour))
	}
	whole := func(node string) model.Allocation { return On(node, 0, 1, 2, 3, 4, 5, 6, 7) }
	tests := []struct {
		name  string
		world func() *World
		want  map[string]sched.Reason
		on    map[string]string // job -> node
		says  []string          // words the detail of "job" holds
	}{{
		name: "work with no bounded end is kept off the kept node",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "alice").GPUs(1, 8)
			return w
		},
		want: map[string]sched.Reason{"job": sched.InsufficientCapacity},
		says: []string{`reservation "r" of bob`, "kept for them", "retry.timeout"},
	}, {
		name: "an estimated duration does not bound the end",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "alice").GPUs(1, 8).Job.Spec.Duration = time.Hour
			return w
		},
		want: map[string]sched.Reason{"job": sched.InsufficientCapacity},
	}, {
		name: "work whose timeout ends it before the start may use it",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "alice").GPUs(1, 8).Timeout(time.Hour, 0)
			return w
		},
		want: map[string]sched.Reason{"job": sched.ReasonNone},
		on:   map[string]string{"job": "h-1"},
	}, {
		name: "the grace counts: a timeout that ends 30 s before the start is too long with a minute of grace",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "alice").GPUs(1, 8).Timeout(2*time.Hour-30*time.Second, time.Minute)
			return w
		},
		want: map[string]sched.Reason{"job": sched.InsufficientCapacity},
	}, {
		name: "work that checkpoints may use it when its protection and one interval end by the start",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "alice").GPUs(1, 8).Checkpoints(110 * time.Minute) // + 10 min protection = 2 h
			return w
		},
		want: map[string]sched.Reason{"job": sched.ReasonNone},
		on:   map[string]string{"job": "h-1"},
	}, {
		name: "work that checkpoints is kept off when it could not save before the start",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "alice").GPUs(1, 8).Checkpoints(111 * time.Minute)
			return w
		},
		want: map[string]sched.Reason{"job": sched.InsufficientCapacity},
		says: []string{"checkpoints"},
	}, {
		name: "work that checkpoints is kept off when its partition lends nothing there",
		world: func() *World {
			// At the start the node would become p's idle guarantee, which p
			// does not lend: the reservation could not take it back.
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", 1, h100, "l1").
				Partition("p", "eastus", "H100", 8).LendLimit(0).Tenant("alice", "p").Tenant("bob", "")
			reserve(w)
			w.Job("job", "alice").GPUs(1, 8).Checkpoints(30 * time.Minute)
			return w
		},
		want: map[string]sched.Reason{"job": sched.InsufficientCapacity},
	}, {
		name: "spot work may use it",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "alice").GPUs(1, 8).Class(model.ClassSpot)
			return w
		},
		want: map[string]sched.Reason{"job": sched.ReasonNone},
	}, {
		name: "the owner's work may use it",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "bob").GPUs(1, 8)
			return w
		},
		want: map[string]sched.Reason{"job": sched.ReasonNone},
	}, {
		name: "the kept node is one without unbounded work: other work goes elsewhere",
		world: func() *World {
			w := reserve(oneRegion(3))
			w.Job("old", "alice").GPUs(1, 8).Running(now.Add(-time.Hour), whole("h-1"))
			w.Job("job", "alice").GPUs(1, 8)
			w.Job("next", "alice").GPUs(1, 8).Submitted(now.Add(time.Second))
			return w
		},
		// h-1 runs unbounded work, so h-2 is kept; job takes h-3, next waits.
		want: map[string]sched.Reason{"job": sched.ReasonNone, "next": sched.InsufficientCapacity},
		on:   map[string]string{"job": "h-3"},
	}, {
		name: "bounded work already there keeps the node first in line",
		world: func() *World {
			w := reserve(oneRegion(2))
			w.Job("short", "alice").GPUs(1, 8).Timeout(time.Hour, 0).Running(now.Add(-time.Minute), whole("h-2"))
			w.Job("job", "alice").GPUs(1, 8)
			return w
		},
		// h-1 is idle and sorts first: kept; job may not use it.
		want: map[string]sched.Reason{"job": sched.InsufficientCapacity},
	}, {
		name: "a job naming the reservation waits for its start",
		world: func() *World {
			w := reserve(oneRegion(1))
			w.Job("job", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"job": sched.ReservationNotActive},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world()
			cyc := BeforeCycle(w, now, sched.Config{MinRunTime: sched.DefaultMinRunTime}) // as schedule
			p := schedule(t, w)
			for job, want := range tc.want {
				expect(t, p, job, want)
			}
			for job, node := range tc.on {
				if b, _ := bindOf(p, job); b.Nodes[0].Node != node {
					t.Errorf("%s on %s, want %s", job, b.Nodes[0].Node, node)
				}
			}
			pd, _ := pendingOf(p, "job")
			for _, s := range tc.says {
				if !strings.Contains(pd.Detail, s) {
					t.Errorf("detail %q does not say %q", pd.Detail, s)
				}
			}
			if len(p.Preemptions) > 0 {
				t.Errorf("preempted %+v before the window", p.Preemptions)
			}
			if err := cyc.Check(p); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestAtStart: when the window opens, the reservation takes the node spot
// work was lent before the start, not one whose work kept the rule, and
// the owner's work evicts the spot work (plain preemption: the victim gets
// its checkpoint grace).
func TestAtStart(t *testing.T) {
	start := now
	whole := func(node string) model.Allocation { return On(node, 0, 1, 2, 3, 4, 5, 6, 7) }
	w := oneRegion(2).Reserve("r", "bob", h100, "eastus", 1, start, start.Add(8*time.Hour))
	// The spot work would lose more (3 h against 1 h): the tier, not the
	// cost, sends the reservation to it.
	w.Job("spot", "alice").GPUs(1, 8).Class(model.ClassSpot).Running(start.Add(-3*time.Hour), whole("h-1"))
	w.Job("std", "alice").GPUs(1, 8).Running(start.Add(-time.Hour), whole("h-2"))
	w.Job("own", "bob").GPUs(1, 8).Reservation("r")
	p := schedule(t, w)
	expect(t, p, "own", sched.ReasonNone)
	if b, _ := bindOf(p, "own"); b.Nodes[0].Node != "h-1" {
		t.Errorf("own on %s, want h-1", b.Nodes[0].Node)
	}
	if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "spot" || p.Preemptions[0].Reason != sched.ReservationOwner {
		t.Errorf("preemptions %+v, want spot for ReservationOwner", p.Preemptions)
	}
}

// TestOwnerReclaimsLent: in the window, the reserved node the owner does
// not use is lent to spot work, and the owner's work takes it back.
func TestOwnerReclaimsLent(t *testing.T) {
	w := oneRegion(1).Reserve("r", "bob", h100, "eastus", 1, now.Add(-time.Hour), now.Add(time.Hour))
	w.Job("spot", "alice").GPUs(1, 8).Class(model.ClassSpot)
	w.Job("std", "alice").GPUs(1, 8).Submitted(now.Add(-time.Second))
	p := schedule(t, w)
	expect(t, p, "spot", sched.ReasonNone)
	expect(t, p, "std", sched.InsufficientCapacity)
	if err := p.Apply(w.Jobs, now); err != nil {
		t.Fatal(err)
	}
	w.Job("own", "bob").GPUs(1, 4)
	later := now.Add(sched.DefaultMinRunTime + time.Minute)
	p = sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime}).Schedule(w.Snapshot(), later)
	expect(t, p, "own", sched.ReasonNone)
	if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "spot" || p.Preemptions[0].Reason != sched.ReservationOwner {
		t.Errorf("preemptions %+v, want spot for ReservationOwner", p.Preemptions)
	}
}
