package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestReservationNodeChoice checks which nodes a reservation takes: Ready
// ones, idle first, then those whose work is cheapest to evict.
func TestReservationNodeChoice(t *testing.T) {
	whole := func(node string) model.Allocation { return On(node, 0, 1, 2, 3, 4, 5, 6, 7) }
	tests := []struct {
		name  string
		world func() *World
		want  map[string]sched.Reason
		on    map[string]string // job -> node it is bound to
		none  bool              // no preemptions
		evict []string          // exactly these are preempted
		says  []string          // words the pending detail of "own" holds
	}{{
		name: "an idle node before a busy one",
		world: func() *World {
			w := oneRegion(2).Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			// 8 GPUs × 2 h since the last checkpoint: 57,600 GPU-seconds.
			w.Job("busy", "alice").GPUs(1, 8).Running(now.Add(-2*time.Hour), whole("h-1"))
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"own": sched.ReasonNone},
		on:   map[string]string{"own": "h-2"},
		none: true,
	}, {
		name: "a Ready node before a NotReady one",
		world: func() *World {
			w := oneRegion(2).NotReady("h-1").Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"own": sched.ReasonNone},
		on:   map[string]string{"own": "h-2"},
	}, {
		name: "the node whose work loses least",
		world: func() *World {
			w := oneRegion(3).Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("old", "alice").GPUs(1, 8).Running(Epoch, whole("h-1")).Checkpointed(now.Add(-time.Hour))
			w.Job("new", "alice").GPUs(1, 8).Running(Epoch, whole("h-2")).Checkpointed(now.Add(-time.Minute))
			w.Job("mid", "alice").GPUs(1, 8).Running(Epoch, whole("h-3")).Checkpointed(now.Add(-10 * time.Minute))
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want:  map[string]sched.Reason{"own": sched.ReasonNone},
		on:    map[string]string{"own": "h-2"},
		evict: []string{"new"},
	}, {
		// With no work naming the reservation queued, a node holding only
		// the owner's work ties with an idle one, and the lower name wins:
		// here the reservation covers the owner's work and leaves the idle
		// node to others.
		name: "a node holding only the owner's work ties with an idle one",
		world: func() *World {
			w := oneRegion(2).Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("mine", "bob").GPUs(1, 8).Running(now.Add(-2*time.Hour), whole("h-1"))
			w.Job("other", "alice").GPUs(1, 8)
			return w
		},
		want: map[string]sched.Reason{"other": sched.ReasonNone},
		on:   map[string]string{"other": "h-2"},
		none: true,
	}, {
		// Work naming the reservation is queued: the idle node, not an
		// eviction of the owner's other work.
		name: "for work naming it, an idle node before one holding the owner's other work",
		world: func() *World {
			w := oneRegion(2).Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("mine", "bob").GPUs(1, 8).Running(now.Add(-2*time.Hour), whole("h-1"))
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"own": sched.ReasonNone},
		on:   map[string]string{"own": "h-2"},
		none: true,
	}, {
		// The owner's batch job ran on the node before the window opened;
		// the work that names the reservation comes first there.
		name: "the owner's other work yields to the work naming the reservation",
		world: func() *World {
			w := oneRegion(2).Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("mine", "bob").GPUs(1, 8).Running(now.Add(-2*time.Hour), whole("h-1"))
			w.Job("busy", "alice").GPUs(1, 8).Running(now.Add(-2*time.Hour), whole("h-2"))
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want:  map[string]sched.Reason{"own": sched.ReasonNone},
		on:    map[string]string{"own": "h-1"},
		evict: []string{"mine"},
	}, {
		name: "the owner's work of a higher class stays",
		world: func() *World {
			w := oneRegion(2).Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("mine", "bob").GPUs(1, 8).Class(model.ClassReserved).Running(now.Add(-2*time.Hour), whole("h-1"))
			w.Job("busy", "alice").GPUs(1, 8).Running(now.Add(-2*time.Hour), whole("h-2"))
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"own": sched.InsufficientCapacity},
		none: true,
	}, {
		name: "the owner's work that names the reservation stays",
		world: func() *World {
			w := oneRegion(2).Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("first", "bob").GPUs(1, 8).Reservation("r").Running(now.Add(-2*time.Hour), whole("h-1"))
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"own": sched.InsufficientCapacity},
		none: true,
	}, {
		name: "only NotReady nodes left: the detail says so",
		world: func() *World {
			w := oneRegion(1).NotReady("h-1").Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"own": sched.NoReadyNodes},
		says: []string{`reservation "r"`, "NotReady"},
	}, {
		name: "the Ready node is another reservation's: the detail says so",
		world: func() *World {
			w := oneRegion(2).NotReady("h-2").
				Reserve("first", "alice", h100, "eastus", 1, time.Time{}, time.Time{}).
				Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("own", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		want: map[string]sched.Reason{"own": sched.NoReadyNodes},
		says: []string{`reservation "r" holds 0 of its 1 nodes`, "1 NotReady", "1 held by other reservations"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			for job, want := range tc.want {
				expect(t, p, job, want)
			}
			for job, node := range tc.on {
				if b, _ := bindOf(p, job); b.Nodes[0].Node != node {
					t.Errorf("%s on %s, want %s", job, b.Nodes[0].Node, node)
				}
			}
			if tc.none && len(p.Preemptions) > 0 {
				t.Errorf("preempted %+v, want none", p.Preemptions)
			}
			if tc.evict != nil {
				var got []string
				for _, x := range p.Preemptions {
					got = append(got, x.Job)
				}
				if strings.Join(got, ",") != strings.Join(tc.evict, ",") {
					t.Errorf("preempted %v, want %v", got, tc.evict)
				}
			}
			if len(tc.says) > 0 {
				pd, _ := pendingOf(p, "own")
				for _, s := range tc.says {
					if !strings.Contains(pd.Detail, s) {
						t.Errorf("detail %q does not say %q", pd.Detail, s)
					}
				}
			}
		})
	}
}

// TestReclaimFromGangPartlyReserved: a gang with one node in its owner's
// reservation and one outside holds shared capacity; a partition below its
// guarantee takes it back.
func TestReclaimFromGangPartlyReserved(t *testing.T) {
	w := oneRegion(2).Partition("p", "eastus", "H100", 8).Tenant("carol", "p").
		Reserve("r", "alice", h100, "eastus", 1, time.Time{}, time.Time{})
	w.Job("gang", "alice").GPUs(2, 8).Running(Epoch, On("h-1", 0, 1, 2, 3, 4, 5, 6, 7), On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
	w.Job("mine", "carol").GPUs(1, 8)
	p := schedule(t, w)
	expect(t, p, "mine", sched.ReasonNone)
	if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "gang" || p.Preemptions[0].Reason != sched.ReclaimGuarantee {
		t.Fatalf("preemptions %+v, want gang for ReclaimGuarantee", p.Preemptions)
	}
	if b, _ := bindOf(p, "mine"); b.Nodes[0].Node != "h-2" {
		t.Errorf("mine on %s, want h-2 (h-1 is alice's reservation)", b.Nodes[0].Node)
	}
}

// TestOwnerWhollyInsideIsProtected: a gang entirely inside its owner's
// reservation stays, even for a partition below its guarantee.
func TestOwnerWhollyInsideIsProtected(t *testing.T) {
	w := oneRegion(2).Partition("p", "eastus", "H100", 8).Tenant("carol", "p").
		Reserve("r", "alice", h100, "eastus", 2, time.Time{}, time.Time{})
	w.Job("gang", "alice").GPUs(2, 8).Running(Epoch, On("h-1", 0, 1, 2, 3, 4, 5, 6, 7), On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
	w.Job("mine", "carol").GPUs(1, 8)
	p := schedule(t, w)
	expect(t, p, "mine", sched.InsufficientCapacity)
	if len(p.Preemptions) != 0 {
		t.Fatalf("preemptions %+v, want none", p.Preemptions)
	}
}

// oneRegion is eastus with n 8×H100 nodes h-1..h-n on one leaf, tenants
// alice and bob.
func oneRegion(n int) *World {
	return NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", n, h100, "l1").
		Tenant("alice", "").Tenant("bob", "")
}

// TestReservationBehindKeptGuarantees: p keeps 12 of the 16 GPUs from
// lending and alice reserved a node of 8 (the tenancy promises 20 of 16,
// model.Promise). The core keeps p's idle guarantee, so alice's work
// waits, and its detail says why.
func TestReservationBehindKeptGuarantees(t *testing.T) {
	w := oneRegion(2).Partition("p", "eastus", "H100", 12).LendLimit(0).Tenant("carol", "p").
		Reserve("r", "alice", h100, "eastus", 1, time.Time{}, time.Time{})
	w.Job("mine", "alice").GPUs(1, 8).Reservation("r")
	p := schedule(t, w)
	expect(t, p, "mine", sched.BorrowLimitReached)
	pd, _ := pendingOf(p, "mine")
	want := `lendable idle 4 GPUs; job needs 8 GPUs; other partitions keep 12 GPUs of the pool idle for their guarantees, not lent, and reservation "r" waits for room beyond them`
	if !strings.Contains(pd.Detail, want) {
		t.Fatalf("detail %q, want it to end %q", pd.Detail, want)
	}
}
