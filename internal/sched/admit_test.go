package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

func TestAdmit(t *testing.T) {
	tests := []struct {
		name        string
		world       func() *World
		want        map[string]sched.Reason
		detailHas   map[string]string
		detailLacks map[string]string
		onlyNodes   map[string]string // job -> node prefix it must land on
		notOnNodes  map[string]string // job -> node prefix it must avoid
	}{{
		name: "hard quota",
		world: func() *World {
			w := twoLeaves().Quota("alice", "eastus", "ND", 8)
			w.Job("fits", "alice").GPUs(1, 8)
			w.Job("over", "alice").GPUs(1, 1).Models("H100").Submitted(Epoch.Add(1))
			w.Job("other", "bob").GPUs(1, 8)
			return w
		},
		want:      map[string]sched.Reason{"fits": sched.ReasonNone, "over": sched.QuotaExceeded, "other": sched.ReasonNone},
		detailHas: map[string]string{"over": "8 GPUs of 8 GPUs used"},
	}, {
		name: "quota of one series leaves the other",
		world: func() *World {
			w := twoLeaves().Quota("alice", "westeurope", "NC", 0)
			w.Job("j", "alice").GPUs(1, 1)
			return w
		},
		want:      map[string]sched.Reason{"j": sched.ReasonNone},
		onlyNodes: map[string]string{"j": "h-"},
	}, {
		name: "borrowing capped",
		world: func() *World {
			w := twoLeaves().Partition("p", "eastus", "H100", 8).BorrowLimit(4).Tenant("carol", "p")
			w.Job("in", "carol").GPUs(1, 8).Models("H100")
			w.Job("borrow", "carol").GPUs(1, 4).Models("H100").Submitted(Epoch.Add(1))
			w.Job("toomuch", "carol").GPUs(1, 1).Models("H100").Submitted(Epoch.Add(2))
			return w
		},
		want:      map[string]sched.Reason{"in": sched.ReasonNone, "borrow": sched.ReasonNone, "toomuch": sched.BorrowLimitReached},
		detailHas: map[string]string{"toomuch": "may borrow at most 4 GPUs beyond its guarantee here: the job waits for the partition's own work in the pool to end"},
	}, {
		name: "no Ready node: lost ones and drained ones told apart",
		world: func() *World {
			w := twoLeaves().NotReady("t4-1")
			for i := range w.Fleet.Nodes {
				if w.Fleet.Nodes[i].Name == "t4-2" {
					w.Fleet.Nodes[i].Health = model.NodeDraining
				}
			}
			w.Job("j", "alice").GPUs(1, 1).Models("T4")
			return w
		},
		want:      map[string]sched.Reason{"j": sched.NoReadyNodes},
		detailHas: map[string]string{"j": "all 2 capable nodes are NotReady or Draining: 1 NotReady, 1 Draining"},
	}, {
		name: "no Ready node among many: the first three named",
		world: func() *World {
			w := twoLeaves()
			for i := range w.Fleet.Nodes {
				if n := &w.Fleet.Nodes[i]; n.SKU == h100 {
					n.Health = model.NodeDraining
				}
			}
			w.Job("j", "alice").GPUs(1, 8).Models("H100")
			return w
		},
		want:      map[string]sched.Reason{"j": sched.NoReadyNodes},
		detailHas: map[string]string{"j": "all 4 capable nodes are Draining (taken out of service for maintenance or a fault): h-l1-1, h-l1-2, h-l2-1 and 1 more"},
	}, {
		name: "a gang with room for all but the power for some: PowerCapped",
		world: func() *World {
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Rack("r1", 15).
				Nodes("h", 2, h100, "l1").Tenant("alice", "")
			w.Job("g", "alice").GPUs(2, 8).Models("H100")
			return w
		},
		want:      map[string]sched.Reason{"g": sched.PowerCapped},
		detailHas: map[string]string{"g": "room for 2 of 2 instances of 8×H100 per instance, but the power for 1: rack r1 draws 0.0 of its 15.0 kW cap"},
	}, {
		name: "a tenant not defined, with the nearest that is",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alise").GPUs(1, 1)
			return w
		},
		want:      map[string]sched.Reason{"j": sched.UnknownTenant},
		detailHas: map[string]string{"j": `tenant "alise" is not defined (did you mean alice?)`},
	}, {
		name: "no Ready node, all lost: no word of drains",
		world: func() *World {
			w := twoLeaves().NotReady("t4-1").NotReady("t4-2")
			w.Job("j", "alice").GPUs(1, 1).Models("T4")
			return w
		},
		want:        map[string]sched.Reason{"j": sched.NoReadyNodes},
		detailHas:   map[string]string{"j": "all 2 capable nodes are NotReady (their agents do not heartbeat): t4-1, t4-2"},
		detailLacks: map[string]string{"j": "Draining"},
	}, {
		name: "no Ready node, all drained",
		world: func() *World {
			w := twoLeaves()
			for i := range w.Fleet.Nodes {
				if m := w.Fleet.Nodes[i].Name; m == "t4-1" || m == "t4-2" {
					w.Fleet.Nodes[i].Health = model.NodeDraining
				}
			}
			w.Job("j", "alice").GPUs(1, 1).Models("T4")
			return w
		},
		want:        map[string]sched.Reason{"j": sched.NoReadyNodes},
		detailHas:   map[string]string{"j": "all 2 capable nodes are Draining (taken out of service for maintenance or a fault): t4-1, t4-2"},
		detailLacks: map[string]string{"j": "NotReady"},
	}, {
		name: "a job beyond guarantee and borrowing limit together",
		world: func() *World {
			w := twoLeaves().Partition("p", "eastus", "H100", 8).BorrowLimit(4).Tenant("carol", "p")
			w.Job("huge", "carol").GPUs(2, 8).Models("H100")
			return w
		},
		want:      map[string]sched.Reason{"huge": sched.BorrowLimitReached},
		detailHas: map[string]string{"huge": "never holds more than 12 GPUs: the job cannot start while its guarantee and borrowing limit stay as they are"},
	}, {
		name: "lend limit keeps idle guarantee",
		world: func() *World {
			w := twoLeaves().Partition("owner", "eastus", "H100", 24).Tenant("carol", "owner")
			zero := 0
			w.Tenancy.Partitions[0].Guarantees[0].LendLimit = &zero
			w.Job("fits", "alice").GPUs(1, 8).Models("H100")
			w.Job("blocked", "alice").GPUs(1, 1).Models("H100").Submitted(Epoch.Add(1))
			return w
		},
		want:      map[string]sched.Reason{"fits": sched.ReasonNone, "blocked": sched.BorrowLimitReached},
		detailHas: map[string]string{"blocked": "lendable idle 0 GPUs; job needs 1 GPUs"},
	}, {
		name: "reserved nodes are the owner's",
		world: func() *World {
			w := twoLeaves().Reserve("r", "bob", h100, "eastus", 4, time.Time{}, time.Time{})
			w.Job("alice", "alice").GPUs(1, 1).Models("H100")
			w.Job("bob", "bob").GPUs(1, 8).Reservation("r")
			w.Job("spot", "alice").GPUs(1, 1).Models("H100").Class(model.ClassSpot)
			return w
		},
		want:      map[string]sched.Reason{"alice": sched.InsufficientCapacity, "bob": sched.ReasonNone, "spot": sched.ReasonNone},
		detailHas: map[string]string{"alice": "reservations of other tenants"},
	}, {
		name: "reservation not active yet",
		world: func() *World {
			w := twoLeaves().Reserve("later", "bob", h100, "eastus", 1, now.Add(time.Hour), time.Time{})
			w.Job("j", "bob").GPUs(1, 8).Reservation("later")
			w.Job("other", "alice").GPUs(1, 8).Reservation("later")
			w.Job("missing", "alice").GPUs(1, 8).Reservation("nope")
			return w
		},
		want: map[string]sched.Reason{"j": sched.ReservationNotActive, "other": sched.ReservationNotActive,
			"missing": sched.ReservationNotActive},
		detailHas: map[string]string{"other": "belongs to bob", "missing": "does not exist"},
	}, {
		name: "a job naming a reservation stays inside it",
		world: func() *World {
			w := twoLeaves().Reserve("r", "bob", h100, "eastus", 1, time.Time{}, time.Time{})
			w.Job("in", "bob").GPUs(1, 8).Reservation("r")
			w.Job("more", "bob").GPUs(1, 1).Reservation("r").Submitted(Epoch.Add(1))
			return w
		},
		want: map[string]sched.Reason{"in": sched.ReasonNone, "more": sched.InsufficientCapacity},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			for job, want := range tc.want {
				expect(t, p, job, want)
			}
			for job, sub := range tc.detailHas {
				if pd, _ := pendingOf(p, job); !strings.Contains(pd.Detail, sub) {
					t.Errorf("%s: detail %q lacks %q", job, pd.Detail, sub)
				}
			}
			for job, sub := range tc.detailLacks {
				if pd, _ := pendingOf(p, job); strings.Contains(pd.Detail, sub) {
					t.Errorf("%s: detail %q has %q", job, pd.Detail, sub)
				}
			}
			for job, prefix := range tc.onlyNodes {
				b, _ := bindOf(p, job)
				if !strings.HasPrefix(b.Nodes[0].Node, prefix) {
					t.Errorf("%s on %s, want %s*", job, b.Nodes[0].Node, prefix)
				}
			}
			for job, prefix := range tc.notOnNodes {
				b, _ := bindOf(p, job)
				if strings.HasPrefix(b.Nodes[0].Node, prefix) {
					t.Errorf("%s on %s, want not %s*", job, b.Nodes[0].Node, prefix)
				}
			}
		})
	}
}
