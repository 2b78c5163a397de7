package sched_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

func TestPlace(t *testing.T) {
	tests := []struct {
		name  string
		world func() *World
		want  map[string]sched.Reason
		check func(t *testing.T, p sched.Plan)
	}{{
		name: "whole node takes the lowest GPUs",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 8).Models("H100")
			return w
		},
		want: map[string]sched.Reason{"j": sched.ReasonNone},
		check: func(t *testing.T, p sched.Plan) {
			b, _ := bindOf(p, "j")
			if got := b.Nodes[0].GPUs; !reflect.DeepEqual(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
				t.Errorf("GPUs = %v", got)
			}
		},
	}, {
		name: "fractions share one GPU",
		world: func() *World {
			w := twoLeaves()
			w.Job("f1", "alice").Milli(500).Models("T4")
			w.Job("f2", "alice").Milli(250).Models("T4")
			w.Job("f3", "alice").Milli(250).Models("T4")
			return w
		},
		want: map[string]sched.Reason{"f1": sched.ReasonNone, "f2": sched.ReasonNone, "f3": sched.ReasonNone},
		check: func(t *testing.T, p sched.Plan) {
			first, _ := bindOf(p, "f1")
			for _, id := range []string{"f2", "f3"} {
				b, _ := bindOf(p, id)
				if b.Nodes[0].Node != first.Nodes[0].Node || b.Nodes[0].GPUs[0] != first.Nodes[0].GPUs[0] {
					t.Errorf("%s on %v, want with f1 on %v", id, b.Nodes[0], first.Nodes[0])
				}
				if b.Nodes[0].GPUMilli != 250 {
					t.Errorf("%s gpu_milli = %d", id, b.Nodes[0].GPUMilli)
				}
			}
		},
	}, {
		name: "no SKU has the model in the allowed regions",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 1).Models("H100").Regions("westeurope")
			return w
		},
		want: map[string]sched.Reason{"j": sched.SkuNotAvailable},
	}, {
		name: "more GPUs than any node has",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 16)
			return w
		},
		want: map[string]sched.Reason{"j": sched.SkuNotAvailable},
	}, {
		name: "residency excludes the only capable region",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 8).Models("H100").Residency("eu")
			return w
		},
		want: map[string]sched.Reason{"j": sched.ResidencyForbidden},
	}, {
		name: "interconnect no cluster offers",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(2, 4).Models("T4").Interconnect(model.FabricInfiniBand)
			return w
		},
		want: map[string]sched.Reason{"j": sched.TopologyUnsatisfiable},
	}, {
		name: "full fleet",
		world: func() *World {
			w := twoLeaves()
			w.Job("a", "alice").GPUs(4, 8).Models("H100")
			w.Job("b", "alice").GPUs(1, 1).Models("H100").Submitted(Epoch.Add(1))
			return w
		},
		want: map[string]sched.Reason{"a": sched.ReasonNone, "b": sched.InsufficientCapacity},
	}, {
		name: "gang of two stays on one leaf",
		world: func() *World {
			w := twoLeaves()
			w.Job("small", "alice").GPUs(1, 1).Models("H100")
			w.Job("g", "bob").GPUs(2, 8).Models("H100").Interconnect(model.FabricInfiniBand)
			return w
		},
		want: map[string]sched.Reason{"small": sched.ReasonNone, "g": sched.ReasonNone},
		check: func(t *testing.T, p sched.Plan) {
			b, _ := bindOf(p, "g")
			l0, l1 := leafOf(b.Nodes[0].Node), leafOf(b.Nodes[1].Node)
			if l0 != l1 || b.Nodes[0].Node == b.Nodes[1].Node {
				t.Errorf("gang on %s and %s, want two nodes of one leaf", b.Nodes[0].Node, b.Nodes[1].Node)
			}
			s, _ := bindOf(p, "small")
			if leafOf(s.Nodes[0].Node) == l0 {
				t.Errorf("gang shares leaf %s with the small job; it had a whole leaf free", l0)
			}
		},
	}, {
		name: "gang too big for the fleet",
		world: func() *World {
			w := twoLeaves()
			w.Job("g", "alice").GPUs(5, 8).Models("H100").Interconnect(model.FabricInfiniBand)
			return w
		},
		want: map[string]sched.Reason{"g": sched.InsufficientCapacity},
	}, {
		name: "gang fits the fleet but no one fabric",
		world: func() *World {
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 2, h100, "l1").
				Cluster("eastus-c2", model.FabricInfiniBand).Nodes("b", 2, h100, "l2").Tenant("alice", "")
			w.Job("g", "alice").GPUs(3, 8).Interconnect(model.FabricInfiniBand)
			return w
		},
		want: map[string]sched.Reason{"g": sched.TopologyUnsatisfiable},
	}, {
		name: "rack power cap",
		world: func() *World {
			w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Rack("r1", 15).
				Nodes("h", 2, h100, "l1").Tenant("alice", "")
			w.Job("a", "alice").GPUs(1, 8)
			w.Job("b", "alice").GPUs(1, 8).Submitted(Epoch.Add(1))
			return w
		},
		want: map[string]sched.Reason{"a": sched.ReasonNone, "b": sched.PowerCapped},
	}, {
		name: "no ready node",
		world: func() *World {
			w := twoLeaves()
			for i := range w.Fleet.Nodes {
				w.Fleet.Nodes[i].Health = model.NodeNotReady
			}
			w.Job("j", "alice").GPUs(1, 1)
			return w
		},
		want: map[string]sched.Reason{"j": sched.NoReadyNodes},
	}, {
		name: "unknown tenant",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "mallory").GPUs(1, 1)
			return w
		},
		want: map[string]sched.Reason{"j": sched.UnknownTenant},
	}, {
		name: "CPU-only job",
		world: func() *World {
			w := twoLeaves()
			w.Job("j", "alice").GPUs(1, 0).CPU(4000, 1024)
			return w
		},
		want: map[string]sched.Reason{"j": sched.ReasonNone},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := schedule(t, tc.world())
			for job, want := range tc.want {
				expect(t, p, job, want)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func leafOf(node string) string { return node[:strings.LastIndex(node, "-")] }

func TestScheduleIsAPureFunction(t *testing.T) {
	w := twoLeaves()
	w.Job("run", "bob").GPUs(1, 8).Class(model.ClassSpot).Running(Epoch, On("h-l1-1", 0, 1, 2, 3, 4, 5, 6, 7))
	for i, n := range []int{8, 4, 1, 2} {
		w.Job(string(rune('a'+i)), "alice").GPUs(2, n).Models("H100")
	}
	w.Job("frac", "alice").Milli(300)
	before := cloneJobs(w.Jobs)
	s := sched.New(sched.Config{})
	p1 := s.Schedule(w.Snapshot(), now)
	p2 := s.Schedule(w.Snapshot(), now)
	if !reflect.DeepEqual(p1, p2) {
		t.Fatalf("two cycles on one snapshot differ:\n%+v\n%+v", p1, p2)
	}
	if !reflect.DeepEqual(before, cloneJobs(w.Jobs)) {
		t.Fatal("Schedule changed its snapshot")
	}
}

func cloneJobs(jobs []*model.Job) []model.Job {
	out := make([]model.Job, len(jobs))
	for i, j := range jobs {
		out[i] = *j
		out[i].Status.Allocations = append([]model.Allocation(nil), j.Status.Allocations...)
	}
	return out
}
