package sched_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// nodesOf returns the nodes job is bound to in p, by rank.
func nodesOf(t *testing.T, p sched.Plan, job string) []string {
	t.Helper()
	expect(t, p, job, sched.ReasonNone)
	b, _ := bindOf(p, job)
	var got []string
	for _, n := range b.Nodes {
		got = append(got, n.Node)
	}
	return got
}

// TestExcludeNodes: a job never runs on a node it excludes or on one its
// placement.nodes does not name, not even the one the scorer likes best,
// and its pending reason says when that is what keeps it waiting.
func TestExcludeNodes(t *testing.T) {
	t.Run("the fullest node excluded: another", func(t *testing.T) {
		w := twoLeaves()
		w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
		w.Job("c", "alice").GPUs(1, 4).Models("H100").Exclude("h-l1-1")
		if got := nodesOf(t, schedule(t, w), "c"); got[0] == "h-l1-1" {
			t.Errorf("placed on %v, which the job excludes", got)
		}
	})
	t.Run("only on one node: there, over the fullest", func(t *testing.T) {
		w := twoLeaves()
		w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
		w.Job("c", "alice").GPUs(1, 4).OnlyOn("h-l2-2")
		if got := nodesOf(t, schedule(t, w), "c"); !slices.Equal(got, []string{"h-l2-2"}) {
			t.Errorf("placed on %v, want h-l2-2, the one node it names", got)
		}
	})
	t.Run("a gang on the nodes it names", func(t *testing.T) {
		w := twoLeaves()
		w.Job("g", "alice").GPUs(2, 8).OnlyOn("h-l1-2", "h-l2-2")
		got := nodesOf(t, schedule(t, w), "g")
		slices.Sort(got)
		if !slices.Equal(got, []string{"h-l1-2", "h-l2-2"}) {
			t.Errorf("placed on %v, want h-l1-2 and h-l2-2", got)
		}
	})
	t.Run("a gang steps around an excluded node", func(t *testing.T) {
		w := twoLeaves()
		w.Job("g", "alice").GPUs(2, 8).Exclude("h-l1-1")
		if got := nodesOf(t, schedule(t, w), "g"); slices.Contains(got, "h-l1-1") {
			t.Errorf("placed on %v, which includes the excluded h-l1-1", got)
		}
	})
	pending := []struct {
		name   string
		world  func() *World
		reason sched.Reason
		detail string
	}{{
		name: "every capable node excluded",
		world: func() *World {
			w := twoLeaves()
			w.Job("c", "alice").GPUs(1, 4).Models("H100").Exclude("h-l1-1", "h-l1-2", "h-l2-1", "h-l2-2")
			return w
		},
		reason: sched.NodesExcluded,
		detail: "placement.exclude_nodes rules out all 4 capable nodes",
	}, {
		name: "the rest not Ready",
		world: func() *World {
			w := twoLeaves().NotReady("h-l2-2")
			w.Job("c", "alice").GPUs(1, 4).Models("H100").Exclude("h-l1-1", "h-l1-2", "h-l2-1")
			return w
		},
		reason: sched.NoReadyNodes,
		detail: "the one capable node is NotReady (their agents do not heartbeat): h-l2-2; placement.exclude_nodes rules out the other 3 nodes",
	}, {
		name: "the rest full",
		world: func() *World {
			w := twoLeaves()
			w.Job("f1", "bob").GPUs(1, 8).Running(now.Add(-time.Hour), On("h-l2-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("f2", "bob").GPUs(1, 8).Running(now.Add(-time.Hour), On("h-l2-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("c", "alice").GPUs(1, 4).Models("H100").Exclude("h-l1-1", "h-l1-2", "h-l1-1") // once is enough
			return w
		},
		reason: sched.InsufficientCapacity,
		detail: "2 ready capable nodes, most free on one node: 0 GPUs, job needs 4 GPUs per instance; placement.exclude_nodes rules out 2 more",
	}, {
		name: "only on a full node",
		world: func() *World {
			w := twoLeaves()
			w.Job("f", "bob").GPUs(1, 8).Running(now.Add(-time.Hour), On("h-l2-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("c", "alice").GPUs(1, 4).Models("H100").OnlyOn("h-l2-2")
			return w
		},
		reason: sched.InsufficientCapacity,
		detail: "1 ready capable node, most free on one node: 0 GPUs, job needs 4 GPUs per instance; placement.nodes rules out 3 more",
	}, {
		name: "only on a lost node",
		world: func() *World {
			w := twoLeaves().NotReady("h-l2-2")
			w.Job("c", "alice").GPUs(1, 4).Models("H100").OnlyOn("h-l2-2")
			return w
		},
		reason: sched.NoReadyNodes,
		detail: "h-l2-2; placement.nodes rules out the other 3 nodes",
	}, {
		name: "only on a node it also excludes",
		world: func() *World {
			w := twoLeaves()
			w.Job("c", "alice").GPUs(1, 4).Models("H100").OnlyOn("h-l2-2").Exclude("h-l2-2")
			return w
		},
		reason: sched.NodesExcluded,
		detail: "placement.nodes and exclude_nodes rules out all 4 capable nodes",
	}, {
		name: "only on nodes the fleet does not have",
		world: func() *World {
			w := twoLeaves()
			w.Job("c", "alice").GPUs(1, 4).OnlyOn("h-l9-9")
			return w
		},
		reason: sched.NodesExcluded,
		detail: "placement.nodes rules out all 6 capable nodes",
	}, {
		name: "a gang short of nodes",
		world: func() *World {
			w := twoLeaves()
			w.Job("g", "alice").GPUs(4, 8).Exclude("h-l2-2")
			return w
		},
		reason: sched.InsufficientCapacity,
		detail: "room for 3 of 4 instances",
	}}
	for _, tc := range pending {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			for _, job := range []string{"c", "g"} {
				if pd, ok := pendingOf(p, job); ok {
					if pd.Reason != tc.reason || !strings.Contains(pd.Detail, tc.detail) {
						t.Errorf("%s: %s: %s\nwant %s with %q", job, pd.Reason, pd.Detail, tc.reason, tc.detail)
					}
					return
				}
			}
			t.Fatalf("the job was placed: %+v", p.Binds)
		})
	}
}

// TestExcludedNodeIsNoVictim: a job that may preempt evicts work only on
// nodes it may use; the work on the nodes it excludes runs on.
func TestExcludedNodeIsNoVictim(t *testing.T) {
	w := twoLeaves()
	for i, n := range []string{"h-l1-1", "h-l1-2", "h-l2-1", "h-l2-2"} {
		w.Job("spot"+string(rune('1'+i)), "bob").GPUs(1, 8).Class(model.ClassSpot).
			Running(now.Add(-time.Hour), On(n, 0, 1, 2, 3, 4, 5, 6, 7))
	}
	w.Job("c", "alice").GPUs(1, 8).Class(model.ClassReserved).Exclude("h-l1-1", "h-l1-2", "h-l2-1")
	p := schedule(t, w)
	var victims []string
	for _, v := range p.Preemptions {
		victims = append(victims, v.Job)
	}
	if !slices.Equal(victims, []string{"spot4"}) {
		t.Errorf("evicted %v, want only spot4, the work on the one node the job may use", victims)
	}
}

// TestRetryAvoidsFailedNodes: a job whose attempt failed on a node goes
// elsewhere when another node fits, back there when none does; it returns
// to the node of its checkpoint after one failure there but not after two.
func TestRetryAvoidsFailedNodes(t *testing.T) {
	busy := func() *World {
		w := twoLeaves()
		w.Job("busy", "bob").GPUs(1, 4).Running(now.Add(-time.Hour), On("h-l1-1", 0, 1, 2, 3))
		return w
	}
	tests := []struct {
		name  string
		world func() *World
		job   string
		want  []string
	}{{
		name:  "no failure: the fullest node",
		world: func() *World { w := busy(); w.Job("c", "alice").GPUs(1, 4).Models("H100"); return w },
		job:   "c", want: []string{"h-l1-1"},
	}, {
		name:  "failed on the fullest node: the next best",
		world: func() *World { w := busy(); w.Job("c", "alice").GPUs(1, 4).Models("H100").FailedOn("h-l1-1"); return w },
		job:   "c", want: []string{"h-l1-2"},
	}, {
		name: "failed on every node: the fullest all the same",
		world: func() *World {
			w := busy()
			w.Job("c", "alice").GPUs(1, 4).Models("H100").FailedOn("h-l1-1", "h-l1-2", "h-l2-1", "h-l2-2")
			return w
		},
		job: "c", want: []string{"h-l1-1"},
	}, {
		name: "failed once on the checkpoint's node: back there",
		world: func() *World {
			w := busy()
			w.Job("c", "alice").GPUs(1, 4).Models("H100").CheckpointOn("h-l2-2").FailedOn("h-l2-2")
			return w
		},
		job: "c", want: []string{"h-l2-2"},
	}, {
		name: "failed twice on the checkpoint's node: elsewhere",
		world: func() *World {
			w := busy()
			w.Job("c", "alice").GPUs(1, 4).Models("H100").CheckpointOn("h-l2-2").FailedOn("h-l2-2", "h-l2-2")
			return w
		},
		job: "c", want: []string{"h-l1-1"},
	}, {
		name: "failed on the first idle node of the only group: the second",
		world: func() *World {
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Rack("r1", 0).
				Nodes("h", 2, h100, "l1").Tenant("alice", "")
			w.Job("c", "alice").GPUs(1, 4).FailedOn("h-1")
			return w
		},
		job: "c", want: []string{"h-2"},
	}, {
		name:  "a gang without a failure: the first leaf",
		world: func() *World { w := twoLeaves(); w.Job("g", "alice").GPUs(2, 8); return w },
		job:   "g", want: []string{"h-l1-1", "h-l1-2"},
	}, {
		name:  "a gang that failed on a node of the first leaf: the other leaf",
		world: func() *World { w := twoLeaves(); w.Job("g", "alice").GPUs(2, 8).FailedOn("h-l1-1"); return w },
		job:   "g", want: []string{"h-l2-1", "h-l2-2"},
	}, {
		name:  "a gang without a failure packs one node",
		world: func() *World { w := twoLeaves(); w.Job("g", "alice").GPUs(2, 4).Models("H100"); return w },
		job:   "g", want: []string{"h-l1-1", "h-l1-1"},
	}, {
		name: "a gang's instances go to the leaf without the node it failed on",
		world: func() *World {
			w := twoLeaves()
			w.Job("g", "alice").GPUs(2, 4).Models("H100").FailedOn("h-l1-1")
			return w
		},
		job: "g", want: []string{"h-l2-1", "h-l2-1"},
	}, {
		name: "a gang's instances go around the node it failed on in the one leaf that fits",
		world: func() *World {
			w := twoLeaves()
			w.Job("f1", "bob").GPUs(1, 8).Running(now.Add(-time.Hour), On("h-l2-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("f2", "bob").GPUs(1, 8).Running(now.Add(-time.Hour), On("h-l2-2", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("g", "alice").GPUs(2, 4).Models("H100").FailedOn("h-l1-1")
			return w
		},
		job: "g", want: []string{"h-l1-2", "h-l1-2"},
	}, {
		name:  "a gang without a failure: the first of two clusters as good",
		world: func() *World { w := twoClusters(); w.Job("g", "alice").GPUs(2, 8); return w },
		job:   "g", want: []string{"a-1", "a-2"},
	}, {
		name:  "a gang that failed in the first cluster: the other, as good",
		world: func() *World { w := twoClusters(); w.Job("g", "alice").GPUs(2, 8).FailedOn("a-2"); return w },
		job:   "g", want: []string{"b-1", "b-2"},
	}, {
		name: "a gang that failed in the one cluster with a leaf free: there all the same",
		world: func() *World {
			w := twoClusters()
			w.Job("f", "bob").GPUs(1, 8).Running(now.Add(-time.Hour), On("b-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("g", "alice").GPUs(2, 8).FailedOn("a-2")
			return w
		},
		job: "g", want: []string{"a-1", "a-2"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodesOf(t, schedule(t, tc.world()), tc.job); !slices.Equal(got, tc.want) {
				t.Errorf("placed on %v, want %v", got, tc.want)
			}
		})
	}
}

// twoClusters has two InfiniBand clusters of one region, each one leaf of
// two 8×H100 nodes: two gang domains as good as each other.
func twoClusters() *World {
	return NewWorld().
		Region("eastus", "us", model.FabricInfiniBand).Rack("ra", 0).Nodes("a", 2, h100, "la").
		Cluster("eastus-ib2", model.FabricInfiniBand).Rack("rb", 0).Nodes("b", 2, h100, "lb").
		Tenant("alice", "").Tenant("bob", "")
}

// AvoidedNodes lists where a job's attempts failed, once each, in order,
// but for the node of its checkpoint until two attempts failed there.
func TestAvoidedNodes(t *testing.T) {
	w := twoLeaves()
	j := w.Job("c", "alice").FailedOn("h-l1-1", "h-l2-2", "h-l1-1").CheckpointOn("h-l2-2").Job
	if got := sched.AvoidedNodes(j); !slices.Equal(got, []string{"h-l1-1"}) {
		t.Errorf("one failure on the checkpoint's node: %v, want [h-l1-1]", got)
	}
	j = w.Job("d", "alice").FailedOn("h-l1-1", "h-l2-2", "h-l2-2").CheckpointOn("h-l2-2").Job
	if got := sched.AvoidedNodes(j); !slices.Equal(got, []string{"h-l1-1", "h-l2-2"}) {
		t.Errorf("two failures on the checkpoint's node: %v, want [h-l1-1 h-l2-2]", got)
	}
	if got := sched.AvoidedNodes(w.Job("e", "alice").Job); got != nil {
		t.Errorf("no failure: %v", got)
	}
}
