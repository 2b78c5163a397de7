package sched_test

import (
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestGangIsHomogeneous: a multi-node gang runs on one GPU model in one
// cluster whether or not it names an interconnect; one asking for
// InfiniBand uses the fewest leaf groups of one IB cluster.
func TestGangIsHomogeneous(t *testing.T) {
	// eastus: an IB cluster with one H100 node, an ethernet cluster with
	// one 8×A100 node.
	mixed := func() *World {
		return NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", 1, h100, "l1").
			Cluster("eastus-eth", model.FabricEthernet).Nodes("a", 1, a100, "").Tenant("alice", "")
	}
	tests := []struct {
		name  string
		world func() *World
		want  sched.Reason
		nodes []string // want these nodes, in any order
	}{{
		name: "no interconnect: not across fabrics and models",
		world: func() *World {
			w := mixed()
			w.Job("g", "alice").GPUs(2, 8)
			return w
		},
		want: sched.TopologyUnsatisfiable,
	}, {
		name: "no interconnect: not across GPU models in one cluster",
		world: func() *World {
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", 1, h100, "l1").
				Nodes("a", 1, a100, "l1").Tenant("alice", "")
			w.Job("g", "alice").GPUs(2, 8)
			return w
		},
		want: sched.TopologyUnsatisfiable,
	}, {
		name: "no interconnect: not across clusters of one model",
		world: func() *World {
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 1, h100, "l1").
				Cluster("eastus-c2", model.FabricInfiniBand).Nodes("b", 1, h100, "l2").Tenant("alice", "")
			w.Job("g", "alice").GPUs(2, 8)
			return w
		},
		want: sched.TopologyUnsatisfiable,
	}, {
		name: "no interconnect: one model in one cluster fits",
		world: func() *World {
			w := mixed().Nodes("a2", 1, a100, "")
			w.Job("g", "alice").GPUs(2, 8)
			return w
		},
		want:  sched.ReasonNone,
		nodes: []string{"a-1", "a2-1"},
	}, {
		name: "infiniband: the fewest leaf groups of one model",
		world: func() *World {
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).
				Nodes("a", 1, a100, "l1").Nodes("h1", 1, h100, "l1").Nodes("h2", 2, h100, "l2").Tenant("alice", "")
			w.Job("g", "alice").GPUs(2, 8).Interconnect(model.FabricInfiniBand)
			return w
		},
		want:  sched.ReasonNone,
		nodes: []string{"h2-1", "h2-2"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			expect(t, p, "g", tc.want)
			if tc.nodes == nil {
				return
			}
			b, _ := bindOf(p, "g")
			got := map[string]bool{}
			for _, n := range b.Nodes {
				got[n.Node] = true
			}
			for _, n := range tc.nodes {
				if !got[n] {
					t.Errorf("bound on %+v, want %v", b.Nodes, tc.nodes)
					break
				}
			}
		})
	}
}
