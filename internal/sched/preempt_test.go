package sched_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// oneNode is a single 8×H100 node with tenants alice and bob.
func oneNode() *World {
	return NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", 1, h100, "l1").
		Tenant("alice", "").Tenant("bob", "")
}

func TestPreempt(t *testing.T) {
	spot := model.ClassSpot
	tests := []struct {
		name    string
		world   func() *World
		victims map[string]sched.Reason // victim -> reason
		want    map[string]sched.Reason // job -> outcome
	}{{
		name: "higher class evicts the victim that loses least",
		world: func() *World {
			w := oneNode()
			w.Job("old-ckpt", "bob").GPUs(1, 4).Class(spot).Running(Epoch, On("h-1", 0, 1, 2, 3)).Checkpointed(now.Add(-time.Hour))
			w.Job("new-ckpt", "bob").GPUs(1, 4).Class(spot).Running(Epoch, On("h-1", 4, 5, 6, 7)).Checkpointed(now.Add(-time.Minute))
			w.Job("j", "alice").GPUs(1, 4)
			return w
		},
		victims: map[string]sched.Reason{"new-ckpt": sched.HigherClass},
		want:    map[string]sched.Reason{"j": sched.ReasonNone},
	}, {
		name: "as many victims as the job needs",
		world: func() *World {
			w := oneNode()
			w.Job("s1", "bob").GPUs(1, 4).Class(spot).Running(Epoch, On("h-1", 0, 1, 2, 3))
			w.Job("s2", "bob").GPUs(1, 4).Class(spot).Running(Epoch, On("h-1", 4, 5, 6, 7))
			w.Job("j", "alice").GPUs(1, 8)
			return w
		},
		victims: map[string]sched.Reason{"s1": sched.HigherClass, "s2": sched.HigherClass},
		want:    map[string]sched.Reason{"j": sched.ReasonNone},
	}, {
		name: "freshly started work is protected",
		world: func() *World {
			w := oneNode()
			w.Job("s1", "bob").GPUs(1, 8).Class(spot).Running(now.Add(-time.Minute), On("h-1", 0, 1, 2, 3, 4, 5, 6, 7)).Preempted(1)
			w.Job("j", "alice").GPUs(1, 8)
			return w
		},
		want: map[string]sched.Reason{"j": sched.AwaitingPreemption},
	}, {
		name: "same class does not preempt",
		world: func() *World {
			w := oneNode()
			w.Job("s1", "bob").GPUs(1, 8).Running(Epoch, On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("j", "alice").GPUs(1, 8)
			return w
		},
		want: map[string]sched.Reason{"j": sched.InsufficientCapacity},
	}, {
		name: "spot never preempts",
		world: func() *World {
			w := oneNode()
			w.Job("s1", "bob").GPUs(1, 8).Class(spot).Running(Epoch, On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("j", "alice").GPUs(1, 8).Class(spot)
			return w
		},
		want: map[string]sched.Reason{"j": sched.InsufficientCapacity},
	}, {
		name: "a partition reclaims its guarantee from a borrower",
		world: func() *World {
			w := twoLeaves().Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
			for i, n := range []string{"h-l1-1", "h-l1-2", "h-l2-1", "h-l2-2"} {
				w.Job("b"+string(rune('0'+i)), "alice").GPUs(1, 8).Running(Epoch, On(n, 0, 1, 2, 3, 4, 5, 6, 7)).
					Checkpointed(now.Add(-time.Duration(i+1) * time.Minute))
			}
			w.Job("mine", "carol").GPUs(1, 8).Models("H100")
			w.Job("beyond", "carol").GPUs(1, 8).Models("H100").Submitted(Epoch.Add(1))
			return w
		},
		victims: map[string]sched.Reason{"b0": sched.ReclaimGuarantee},
		want:    map[string]sched.Reason{"mine": sched.ReasonNone, "beyond": sched.InsufficientCapacity},
	}, {
		name: "the owner takes back its reservation",
		world: func() *World {
			w := oneNode().Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("squatter", "alice").GPUs(1, 8).Running(Epoch, On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("j", "bob").GPUs(1, 8).Reservation("r")
			return w
		},
		victims: map[string]sched.Reason{"squatter": sched.ReservationOwner},
		want:    map[string]sched.Reason{"j": sched.ReasonNone},
	}, {
		name: "an owner inside its reservation is never preempted by another tenant",
		world: func() *World {
			w := oneNode().Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("owner", "bob").GPUs(1, 8).Class(spot).Running(Epoch, On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("j", "alice").GPUs(1, 8).Class(model.ClassReserved)
			return w
		},
		want: map[string]sched.Reason{"j": sched.InsufficientCapacity},
	}, {
		// p keeps its idle 8 GPUs (lend_limit 0), so nothing free is
		// lendable, but the spot work holds the other 8: evicting it makes
		// room outside what p keeps.
		name: "a higher class evicts spot work beyond what others keep",
		world: func() *World {
			w := oneRegion(2).Partition("p", "eastus", "H100", 8).LendLimit(0).Tenant("carol", "p")
			w.Job("spot", "alice").GPUs(1, 8).Class(spot).Running(Epoch, On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("j", "bob").GPUs(1, 8)
			return w
		},
		victims: map[string]sched.Reason{"spot": sched.HigherClass},
		want:    map[string]sched.Reason{"j": sched.ReasonNone},
	}, {
		// p keeps all 16 GPUs: evicting the spot work would free only
		// capacity p keeps, so nothing is evicted for nothing.
		name: "no eviction that frees only what others keep",
		world: func() *World {
			w := oneRegion(2).Partition("p", "eastus", "H100", 16).LendLimit(0).Tenant("carol", "p")
			w.Job("spot", "alice").GPUs(1, 8).Class(spot).Running(Epoch, On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("j", "bob").GPUs(1, 8)
			return w
		},
		want: map[string]sched.Reason{"j": sched.BorrowLimitReached},
	}, {
		name: "a gang evicts what it needs on one fabric",
		world: func() *World {
			w := twoLeaves()
			w.Job("s1", "bob").GPUs(1, 8).Class(spot).Running(Epoch, On("h-l1-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("s2", "bob").GPUs(1, 8).Class(spot).Running(Epoch, On("h-l2-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("s3", "bob").GPUs(1, 8).Class(spot).Running(Epoch, On("h-l2-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("g", "alice").GPUs(2, 8).Models("H100").Interconnect(model.FabricInfiniBand)
			return w
		},
		victims: map[string]sched.Reason{"s1": sched.HigherClass},
		want:    map[string]sched.Reason{"g": sched.ReasonNone},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world()
			p := schedule(t, w)
			got := map[string]sched.Reason{}
			for _, pr := range p.Preemptions {
				got[pr.Job] = pr.Reason
				if pr.Detail == "" || pr.For == "" {
					t.Errorf("preemption %+v lacks detail or preemptor", pr)
				}
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
			if err := p.Apply(w.Jobs, now); err != nil {
				t.Fatal(err)
			}
			if err := CheckInvariants(w); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func keys(m map[string]sched.Reason) string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return strings.Join(k, ",")
}

// TestAGuaranteeIsNotKeptWaitingForProtection: carol's partition p is owed
// its 8 GPUs of the one node, which work started a minute ago holds. Spot
// work is not protected from that reclaim: it runs on capacity p is owed,
// and a guarantee kept waiting for spot is not kept; nor is a borrower of
// a higher class (bob has no partition) that started while j, submitted
// before it, waited. Once p holds its guarantee, for p's own spot work,
// spot work in its tenant's own reservation and a borrower that was there
// before j, protection holds as before.
func TestAGuaranteeIsNotKeptWaitingForProtection(t *testing.T) {
	spot := model.ClassSpot
	started := now.Add(-time.Minute) // within DefaultMinRunTime
	all := On("h-1", 0, 1, 2, 3, 4, 5, 6, 7)
	for _, tc := range []struct {
		name   string
		world  func() *World
		victim sched.Reason // of x; ReasonNone: j waits for x's protection
	}{
		{"spot work gives a guarantee back at once", func() *World {
			w := oneNode().Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
			w.Job("x", "bob").GPUs(1, 8).Class(spot).Running(started, all)
			return w
		}, sched.HigherClass},
		{"a borrower that started while j waited gives it back at once", func() *World {
			w := oneNode().Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
			w.Job("x", "bob").GPUs(1, 8).Running(started, all)
			return w
		}, sched.ReclaimGuarantee},
		{"a borrower that was there before j stays protected", func() *World {
			w := oneNode().Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
			w.Job("x", "bob").GPUs(1, 8).Running(started, all)
			return w
		}, sched.ReasonNone},
		{"spot work stays protected from a partition that holds its guarantee", func() *World {
			w := oneRegion(2).Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
			w.Job("held", "carol").GPUs(1, 8).Running(Epoch, On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("x", "bob").GPUs(1, 8).Class(spot).Running(started, all)
			return w
		}, sched.ReasonNone},
		{"the partition's own spot work stays protected", func() *World {
			w := oneNode().Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
			w.Job("x", "carol").GPUs(1, 8).Class(spot).Running(started, all)
			return w
		}, sched.ReasonNone},
		{"spot work in its own reservation stays protected", func() *World {
			w := oneNode().Partition("p", "eastus", "H100", 8).Tenant("carol", "p").
				Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("x", "bob").GPUs(1, 8).Class(spot).Reservation("r").Running(started, all)
			return w
		}, sched.ReasonNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world()
			jb := w.Job("j", "carol").GPUs(1, 8).Submitted(started.Add(-time.Minute))
			if strings.Contains(tc.name, "there before j") {
				jb.Submitted(now)
			}
			p := schedule(t, w)
			if tc.victim == sched.ReasonNone {
				if len(p.Preemptions) != 0 {
					t.Errorf("protected work was evicted: %+v", p.Preemptions)
				}
				return
			}
			expect(t, p, "j", sched.ReasonNone)
			if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "x" || p.Preemptions[0].Reason != tc.victim {
				t.Errorf("preemptions %+v, want x for %s", p.Preemptions, tc.victim)
			}
		})
	}
}

// TestAnEarlierJobReclaimsWhatALaterOneMayNot: carol's j2 (priority value
// 10, submitted 30 s ago) comes first in her queue, but bob's borrower x
// started before it, a minute ago, and is protected from it; j1 (value 0)
// was submitted two minutes ago, before x started, so x is not protected
// from j1. The failure j2's shape records must not answer j1 (failure and
// preemptMiss.submitted): j1 reclaims the node.
func TestAnEarlierJobReclaimsWhatALaterOneMayNot(t *testing.T) {
	w := oneNode().Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
	w.Job("x", "bob").GPUs(1, 8).Running(now.Add(-time.Minute), On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
	w.Job("j1", "carol").GPUs(1, 8).Submitted(now.Add(-2 * time.Minute))
	w.Job("j2", "carol").GPUs(1, 8).Value(10).Submitted(now.Add(-30 * time.Second))
	p := schedule(t, w)
	expect(t, p, "j2", sched.AwaitingPreemption)
	expect(t, p, "j1", sched.ReasonNone)
	if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "x" || p.Preemptions[0].For != "j1" {
		t.Errorf("preemptions %+v, want x for j1", p.Preemptions)
	}
}
