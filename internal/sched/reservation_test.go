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

// TestReservationInOneCluster: a reservation takes its nodes from one
// cluster when one can give them all, and from as few as it can
// otherwise, so that a gang as large as it can run in it (a gang spans one
// cluster); nodes running work inside it keep their cluster chosen; a
// reservation ahead earmarks nodes the same way.
func TestReservationInOneCluster(t *testing.T) {
	// eastus: cluster eastus-c with a-1..a-<na>, cluster eastus-c2 with
	// b-1..b-<nb>, all 8×H100; names sort the a nodes first.
	twoClusters := func(na, nb int) *World {
		return NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", na, h100, "la").
			Cluster("eastus-c2", model.FabricInfiniBand).Nodes("b", nb, h100, "lb").
			Tenant("alice", "").Tenant("bob", "")
	}
	whole := func(node string) model.Allocation { return On(node, 0, 1, 2, 3, 4, 5, 6, 7) }
	tests := []struct {
		name  string
		world func() *World
		job   string
		want  []string // the nodes job is bound to, by prefix
	}{{
		name: "one cluster that can give them all, not the first nodes by name",
		world: func() *World {
			w := twoClusters(3, 4).Reserve("r", "bob", h100, "eastus", 4, time.Time{}, time.Time{})
			w.Job("gang", "bob").GPUs(4, 8).Reservation("r")
			return w
		},
		job:  "gang",
		want: []string{"b-", "b-", "b-", "b-"},
	}, {
		name: "the cluster holding work inside the reservation",
		world: func() *World {
			w := twoClusters(4, 4).Reserve("r", "bob", h100, "eastus", 4, time.Time{}, time.Time{})
			// b's names sort after a's, and alice's work fills a-4: only
			// bob's job inside the reservation keeps it on b.
			w.Job("busy", "alice").GPUs(1, 8).Running(now.Add(-time.Hour), whole("a-4"))
			w.Job("inside", "bob").GPUs(1, 8).Reservation("r").Running(now.Add(-time.Hour), whole("b-2"))
			w.Job("gang", "bob").GPUs(3, 8).Reservation("r")
			return w
		},
		job:  "gang",
		want: []string{"b-", "b-", "b-"},
	}, {
		// b-1 runs bob's work inside the reservation, and alice's work
		// fills b-2..b-4: the reservation stays on b rather than move to
		// idle a and leave bob's work outside it, so a is free for alice.
		name: "work inside the reservation outweighs idle nodes elsewhere",
		world: func() *World {
			w := twoClusters(4, 4).Reserve("r", "bob", h100, "eastus", 4, time.Time{}, time.Time{})
			w.Job("inside", "bob").GPUs(1, 8).Reservation("r").Running(now.Add(-time.Hour), whole("b-1"))
			for _, n := range []string{"b-2", "b-3", "b-4"} {
				w.Job("on-"+n, "alice").GPUs(1, 8).Running(now.Add(-time.Hour), whole(n))
			}
			w.Job("other", "alice").GPUs(1, 8)
			return w
		},
		job:  "other",
		want: []string{"a-"},
	}, {
		name: "no cluster can give them all: the most from one",
		world: func() *World {
			w := twoClusters(2, 3).Reserve("r", "bob", h100, "eastus", 4, time.Time{}, time.Time{})
			w.Job("gang", "bob").GPUs(3, 8).Reservation("r")
			return w
		},
		job:  "gang",
		want: []string{"b-", "b-", "b-"},
	}, {
		// The reservation opens in an hour and earmarks b-1..b-4; alice's
		// work, which may run past its start, keeps off them.
		name: "a reservation ahead earmarks one cluster",
		world: func() *World {
			w := twoClusters(3, 4).Reserve("r", "bob", h100, "eastus", 4, now.Add(time.Hour), time.Time{})
			w.Job("other", "alice").GPUs(1, 8)
			return w
		},
		job:  "other",
		want: []string{"a-"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			expect(t, p, tc.job, sched.ReasonNone)
			b, _ := bindOf(p, tc.job)
			var got []string
			for _, n := range b.Nodes {
				got = append(got, n.Node)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%s on %v, want %d nodes", tc.job, got, len(tc.want))
			}
			for i, prefix := range tc.want {
				if !strings.HasPrefix(got[i], prefix) {
					t.Fatalf("%s on %v, want nodes %v…", tc.job, got, tc.want)
				}
			}
		})
	}
}

// TestReservationKeepsToNodesItsWorkMayUse: while every queued job naming
// a reservation names its nodes, the reservation takes nodes they may use
// before those they keep off, so a gang as large as the reservation that
// excludes a bad host fits; a queued job naming it with no node lists
// leaves the choice as it was.
func TestReservationKeepsToNodesItsWorkMayUse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other bool // a second queued job naming r, with no node lists
		want  sched.Reason
	}{
		{name: "the excluded node is left out", want: sched.ReasonNone},
		{name: "work that may use any node keeps the first nodes", other: true, want: sched.InsufficientCapacity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := oneRegion(3).Reserve("r", "bob", h100, "eastus", 2, time.Time{}, time.Time{})
			w.Job("gang", "bob").GPUs(2, 8).Reservation("r").Exclude("h-1")
			if tc.other {
				w.Job("other", "bob").GPUs(1, 8).Reservation("r").Value(-1)
			}
			p := schedule(t, w)
			expect(t, p, "gang", tc.want)
			if b, ok := bindOf(p, "gang"); ok {
				for _, n := range b.Nodes {
					if n.Node == "h-1" {
						t.Fatalf("gang on %v, which it excludes", b.Nodes)
					}
				}
			}
		})
	}
}
