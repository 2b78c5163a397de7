package sched_test

import (
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

func TestQueueOrder(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	tests := []struct {
		name  string
		world func() *World
		want  map[string]sched.Reason
	}{{
		name: "a higher class goes first",
		world: func() *World {
			w := oneNode()
			w.Job("std", "alice").GPUs(1, 8)
			w.Job("rsv", "bob").GPUs(1, 8).Class(model.ClassReserved).Submitted(Epoch.Add(1))
			return w
		},
		want: map[string]sched.Reason{"rsv": sched.ReasonNone, "std": sched.InsufficientCapacity},
	}, {
		name: "the tenant with the smaller share goes first",
		world: func() *World {
			w := twoLeaves()
			w.Job("big", "alice").GPUs(3, 8).Models("H100").Running(Epoch, On("h-l1-1", all...), On("h-l1-2", all...), On("h-l2-1", all...))
			w.Job("alice-old", "alice").GPUs(1, 8).Models("H100")
			w.Job("bob-new", "bob").GPUs(1, 8).Models("H100").Submitted(Epoch.Add(1))
			return w
		},
		want: map[string]sched.Reason{"bob-new": sched.ReasonNone, "alice-old": sched.InsufficientCapacity},
	}, {
		name: "fair share alternates between tenants",
		world: func() *World {
			w := oneNode()
			for i := 0; i < 3; i++ {
				w.Job("a"+string(rune('0'+i)), "alice").GPUs(1, 2).Submitted(Epoch.Add(-1))
				w.Job("b"+string(rune('0'+i)), "bob").GPUs(1, 2)
			}
			return w
		},
		want: map[string]sched.Reason{"a0": sched.ReasonNone, "a1": sched.ReasonNone, "b0": sched.ReasonNone,
			"b1": sched.ReasonNone, "a2": sched.InsufficientCapacity, "b2": sched.InsufficientCapacity},
	}, {
		name: "inside a tenant, priority then age",
		world: func() *World {
			w := oneNode()
			w.Job("old", "alice").GPUs(1, 8)
			w.Job("urgent", "alice").GPUs(1, 8).Submitted(Epoch.Add(5))
			w.Jobs[1].Spec.Priority.Value = 10
			w.Job("young", "alice").GPUs(1, 8).Submitted(Epoch.Add(9))
			return w
		},
		want: map[string]sched.Reason{"urgent": sched.ReasonNone, "old": sched.InsufficientCapacity, "young": sched.InsufficientCapacity},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			for job, want := range tc.want {
				expect(t, p, job, want)
			}
		})
	}
}
