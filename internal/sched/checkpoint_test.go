package sched_test

import (
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestRequeuedJobReturnsToItsCheckpoint: a job whose checkpoint lies on one
// node's disk goes back to that node when it may run there, over a node
// the scorer likes better; a gang puts its rank 0 there. When the node is
// full, lost or outside what the job may use, the job goes elsewhere.
func TestRequeuedJobReturnsToItsCheckpoint(t *testing.T) {
	tests := []struct {
		name  string
		world func() *World
		want  []string // nodes by rank
	}{{
		name: "no checkpoint: the fullest node",
		world: func() *World {
			w := twoLeaves()
			w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
			w.Job("c", "alice").GPUs(1, 4)
			return w
		},
		want: []string{"h-l1-1"},
	}, {
		name: "checkpoint on an idle node: that node",
		world: func() *World {
			w := twoLeaves()
			w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
			w.Job("c", "alice").GPUs(1, 4).CheckpointOn("h-l2-2")
			return w
		},
		want: []string{"h-l2-2"},
	}, {
		name: "checkpoint on a full node: the fullest other",
		world: func() *World {
			w := twoLeaves()
			w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
			w.Job("full", "bob").GPUs(1, 8).Running(now.Add(-time.Hour), On("h-l2-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("c", "alice").GPUs(1, 4).CheckpointOn("h-l2-2")
			return w
		},
		want: []string{"h-l1-1"},
	}, {
		name: "checkpoint on a lost node: the fullest other",
		world: func() *World {
			w := twoLeaves().NotReady("h-l2-2")
			w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
			w.Job("c", "alice").GPUs(1, 4).CheckpointOn("h-l2-2")
			return w
		},
		want: []string{"h-l1-1"},
	}, {
		name: "checkpoint on a node of a model the job does not use",
		world: func() *World {
			w := twoLeaves()
			w.Job("c", "alice").GPUs(1, 4).Models("T4").CheckpointOn("h-l2-2")
			return w
		},
		want: []string{"t4-1"},
	}, {
		name: "checkpoint on a node the fabric allows: a gang's rank 0 there",
		world: func() *World {
			w := twoLeaves()
			w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
			w.Job("g", "alice").GPUs(2, 8).CheckpointOn("h-l2-2")
			return w
		},
		want: []string{"h-l2-2", "h-l2-1"},
	}, {
		name: "a gang without a checkpoint: ranks in node order",
		world: func() *World {
			w := twoLeaves()
			w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
			w.Job("g", "alice").GPUs(2, 8)
			return w
		},
		want: []string{"h-l2-1", "h-l2-2"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			job := "c"
			if len(tc.want) > 1 {
				job = "g"
			}
			expect(t, p, job, sched.ReasonNone)
			b, _ := bindOf(p, job)
			var got []string
			for _, n := range b.Nodes {
				got = append(got, n.Node)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("placed on %v, want %v", got, tc.want)
			}
		})
	}
}
