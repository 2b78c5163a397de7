package strategy_test

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/strategy"
)

// now is the time the tests apply strategies at.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// world is two regions of H100 and T4 nodes, a guaranteed partition, an
// unguaranteed one, and queued jobs of each kind of work.
func world(s model.Strategy) *sched.Snapshot {
	cat := model.BuiltinCatalog()
	f := &model.Fleet{Catalog: cat,
		Regions: []model.Region{{Name: "east", Residency: "us", Clusters: []model.Cluster{{Name: "e1", Fabric: model.FabricInfiniBand}}},
			{Name: "west", Residency: "us", Clusters: []model.Cluster{{Name: "w1", Fabric: model.FabricEthernet}}}},
		Nodes: []model.Node{{Name: "h1", SKU: "ND96-H100x8-IB", Region: "east", Cluster: "e1", Health: model.NodeReady},
			{Name: "t1", SKU: "NC64-T4x4", Region: "west", Cluster: "w1", Health: model.NodeReady}}}
	lend := 4
	t := &model.Tenancy{Strategy: s,
		Reservations: []model.Reservation{{Name: "r", Owner: "copilot", SKU: "NC64-T4x4", Region: "west", Count: 1}},
		Partitions: []model.Partition{{Name: "ai", Guarantees: []model.Guarantee{{Region: "east", GPUModel: "H100", GPUs: 8, LendLimit: &lend}}},
			{Name: "elastic", Labels: map[string]string{"workload": "batch"}}},
		Tenants: []model.Tenant{{Name: "copilot", Kind: model.TenantInternal, Partition: "ai"},
			{Name: "dev", Kind: model.TenantInternal, Partition: "ai", Labels: map[string]string{"workload": "developer"}},
			{Name: "batchy", Kind: model.TenantCustomer, Partition: "elastic"}}}
	job := func(id, tenant string, c model.Class, labels map[string]string) *model.Job {
		return &model.Job{ID: id, Spec: model.JobSpec{Name: id, Tenant: tenant, Priority: model.Priority{Class: c, Value: 3}, Labels: labels,
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1}}, Status: model.JobStatus{State: model.StateQueued}}
	}
	return &sched.Snapshot{Fleet: f, Tenancy: t, Jobs: []*model.Job{
		job("train", "copilot", model.ClassStandard, nil),
		job("devbox", "dev", model.ClassStandard, nil),
		job("etl", "batchy", model.ClassStandard, nil),
		job("labelled", "copilot", model.ClassStandard, map[string]string{"workload": "batch"}),
		job("urgent-batch", "batchy", model.ClassReserved, nil),
		job("serve", "dev", model.ClassStandard, map[string]string{"workload": "inference"}),
	}}
}

func TestStaticFencesGuarantees(t *testing.T) {
	in := world(model.StrategyStatic)
	out := strategy.Apply(in, now)
	ai := out.Tenancy.Partitions[0]
	if len(ai.Guarantees) != 2 {
		t.Fatalf("static ai guarantees = %+v, want its own and a zero one for the other pool", ai.Guarantees)
	}
	// The partition may borrow only what its tenants reserve: the 4 T4
	// of copilot's reservation in west, nothing in east.
	wantBorrow := map[string]int{"east": 0, "west": 4}
	for _, g := range ai.Guarantees {
		if g.BorrowLimit == nil || *g.BorrowLimit != wantBorrow[g.Region] || g.LendLimit == nil || *g.LendLimit != 0 {
			t.Errorf("guarantee %s/%s: borrow %v lend %v, want %d and 0", g.Region, g.GPUModel, g.BorrowLimit, g.LendLimit, wantBorrow[g.Region])
		}
	}
	if g := ai.Guarantees[1]; g.Region != "west" || g.GPUModel != "T4" || g.GPUs != 0 {
		t.Errorf("added guarantee = %+v, want west T4 0", g)
	}
	if len(out.Tenancy.Partitions[1].Guarantees) != 0 {
		t.Errorf("partition without guarantees got %+v; it shares the unguaranteed rest", out.Tenancy.Partitions[1].Guarantees)
	}
	if l := in.Tenancy.Partitions[0].Guarantees[0].LendLimit; *l != 4 || len(in.Tenancy.Partitions[0].Guarantees) != 1 {
		t.Errorf("Apply changed its input: %+v", in.Tenancy.Partitions[0].Guarantees)
	}
	for i, j := range out.Jobs {
		if j != in.Jobs[i] {
			t.Errorf("static changed job %s", j.ID)
		}
	}
}

// TestStaticBorrowsOnlyInTheWindow checks that a reservation lets its
// partition borrow only while it is active: before its window and after
// it, the partition runs on its guarantee alone.
func TestStaticBorrowsOnlyInTheWindow(t *testing.T) {
	in := world(model.StrategyStatic)
	r := &in.Tenancy.Reservations[0]
	r.Start, r.End = now.Add(time.Hour), now.Add(3*time.Hour)
	for _, tt := range []struct {
		at   time.Time
		want int
	}{{now, 0}, {r.Start, 4}, {r.End.Add(-time.Second), 4}, {r.End, 0}} {
		out := strategy.Apply(in, tt.at)
		for _, g := range out.Tenancy.Partitions[0].Guarantees {
			if g.Region != "west" {
				continue
			}
			if g.BorrowLimit == nil || *g.BorrowLimit != tt.want {
				t.Errorf("at %s: west borrow limit %v, want %d", tt.at.Format(time.TimeOnly), g.BorrowLimit, tt.want)
			}
		}
	}
}

func TestDynamicDropsGuarantees(t *testing.T) {
	in := world(model.StrategyDynamic)
	out := strategy.Apply(in, now)
	for _, p := range out.Tenancy.Partitions {
		if len(p.Guarantees) != 0 {
			t.Errorf("partition %s keeps %+v", p.Name, p.Guarantees)
		}
	}
	if len(in.Tenancy.Partitions[0].Guarantees) != 1 {
		t.Error("Apply changed its input")
	}
	if out.Tenancy.Partitions[1].Labels["workload"] != "batch" {
		t.Error("dynamic dropped partition labels that policies read")
	}
}

func TestHybridOverflowsNonUrgentWork(t *testing.T) {
	for _, s := range []model.Strategy{model.StrategyHybrid} {
		in := world(s)
		out := strategy.Apply(in, now)
		// etl is a customer's batch: a paying customer's work keeps its class.
		want := map[string]model.Class{"train": model.ClassStandard, "devbox": model.ClassSpot, "etl": model.ClassStandard,
			"labelled": model.ClassSpot, "urgent-batch": model.ClassReserved, "serve": model.ClassStandard}
		for i, j := range out.Jobs {
			if j.Spec.Priority.Class != want[j.ID] {
				t.Errorf("%q: %s runs as %s, want %s", s, j.ID, j.Spec.Priority.Class, want[j.ID])
			}
			if j.Spec.Priority.Value != 3 {
				t.Errorf("%s lost its priority value", j.ID)
			}
			if in.Jobs[i].Spec.Priority.Class != model.ClassStandard && in.Jobs[i].ID != "urgent-batch" {
				t.Errorf("Apply changed input job %s", in.Jobs[i].ID)
			}
		}
		if out.Tenancy != in.Tenancy {
			t.Error("hybrid changed the tenancy")
		}
	}
}

func TestHybridWithoutOverflowReturnsSnapshot(t *testing.T) {
	in := world(model.StrategyHybrid)
	in.Jobs = in.Jobs[:1]
	if out := strategy.Apply(in, now); out != in {
		t.Error("hybrid with nothing to overflow copied the snapshot")
	}
}

func TestNoStrategyKeepsTheSnapshot(t *testing.T) {
	in := world("")
	if out := strategy.Apply(in, now); out != in {
		t.Error("without a strategy Apply changed the snapshot")
	}
}
