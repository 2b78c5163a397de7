package policy

import (
	"fmt"
	"maps"
	"sort"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
)

// busyWorld is two 8-GPU nodes: developers run ten 1-GPU jobs (dev-0 …
// dev-9, dev-i last checkpointed i+1 minutes before now, so dev-0 would
// lose the least), batch runs four, two GPUs are free, and training queues a
// gang of train GPUs. Developers and batch are known by their tenants'
// labels, except that batch-3 says so itself from a tenant of its own.
func busyWorld(now time.Time, train int) *schedtest.World {
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 2, "ND96-H100x8-IB", "l1").
		Tenant("dev", "").Tenant("batch", "").Tenant("lab", "").Tenant("ml", "")
	w.Tenancy.Tenants[0].Labels = map[string]string{"workload": "developer"}
	w.Tenancy.Tenants[1].Labels = map[string]string{"workload": "batch"}
	start := now.Add(-2 * time.Hour)
	for i := range 10 {
		node, gpu := "n-1", i
		if i >= 8 {
			node, gpu = "n-2", i-8
		}
		w.Job(fmt.Sprintf("dev-%d", i), "dev").Running(start, schedtest.On(node, gpu)).
			Checkpointed(now.Add(-time.Duration(i+1) * time.Minute))
	}
	for i := range 3 {
		w.Job(fmt.Sprintf("batch-%d", i), "batch").Running(start, schedtest.On("n-2", 2+i))
	}
	b := w.Job("batch-3", "lab").Running(start, schedtest.On("n-2", 5))
	b.Job.Spec.Labels = map[string]string{"workload": "batch"}
	w.Job("train", "ml").GPUs(train, 1).Submitted(now.Add(-time.Minute))
	return w
}

// firing is the seed's ai_training_priority as Evaluate returns it when
// the fleet runs at 14 of 16 GPUs.
func firing(t *testing.T, w *schedtest.World, now time.Time) []Firing {
	t.Helper()
	var m Metrics
	RecordUtilization(&m, w.Snapshot(), now)
	if got := m.Series(MetricUtilization, "fleet"); len(got) != 1 || got[0].Value != 14.0/16 {
		t.Fatalf("fleet utilisation = %+v, want 14/16", got)
	}
	fs := Evaluate(seed(t), State{World: w.Snapshot()}, &m, now)
	if len(fs) != 1 || fs[0].Policy != "ai_training_priority" || fs[0].Actions[0].Baseline != 10*model.MilliPerGPU {
		t.Fatalf("firings = %+v, want ai_training_priority with a 10-GPU baseline", fs)
	}
	return fs
}

func preempted(p sched.Plan) []string {
	var out []string
	for _, x := range p.Preemptions {
		out = append(out, x.Job)
	}
	sort.Strings(out)
	return out
}

// The seed's ai_training_priority, through Adjust and the core: developer
// work is preempted down to 30 % of the ten GPUs it held, the work that
// would lose the most is what stays, and batch work runs as spot.
func TestScaleDownAndMigrateThroughTheCore(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})

	// Without the policy, standard training cannot evict standard work.
	w := busyWorld(now, 13)
	if p := s.Schedule(w.Snapshot(), now); len(p.Preemptions) != 0 || len(p.Binds) != 0 {
		t.Fatalf("without the policy: %d preemptions, %d binds, want none", len(p.Preemptions), len(p.Binds))
	}

	adj := Adjust(w.Snapshot(), seed(t), firing(t, w, now), now)
	classes := map[string]model.Class{}
	for _, j := range adj.Snapshot.Jobs {
		classes[j.ID] = j.Spec.Priority.Class
	}
	for i := range 10 {
		want := model.ClassSpot
		if i >= 7 { // dev-7, dev-8, dev-9 would lose the most
			want = model.ClassStandard
		}
		if got := classes[fmt.Sprintf("dev-%d", i)]; got != want {
			t.Errorf("dev-%d runs as %s, want %s", i, got, want)
		}
	}
	for i := range 4 {
		if got := classes[fmt.Sprintf("batch-%d", i)]; got != model.ClassSpot {
			t.Errorf("batch-%d runs as %s, want spot", i, got)
		}
	}
	if classes["train"] != model.ClassStandard {
		t.Errorf("train runs as %s", classes["train"])
	}
	if len(adj.Overrides) != 11 || len(adj.Ignored) != 0 {
		t.Errorf("%d overrides, %d ignored, want 11 and 0: %+v", len(adj.Overrides), len(adj.Ignored), adj.Overrides)
	}
	for _, j := range w.Jobs {
		if j.Spec.Priority.Class != model.ClassStandard {
			t.Fatalf("Adjust changed the caller's job %s", j.ID)
		}
	}

	p := s.Schedule(adj.Snapshot, now)
	want := []string{"batch-0", "batch-1", "batch-2", "batch-3", "dev-0", "dev-1", "dev-2", "dev-3", "dev-4", "dev-5", "dev-6"}
	if got := preempted(p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("preempted %v, want %v", got, want)
	}
	if len(p.Binds) != 1 || p.Binds[0].Job != "train" {
		t.Fatalf("binds = %+v, want train", p.Binds)
	}

	// One GPU more than the policy frees: the core takes none of the three
	// GPUs developers keep, so the job waits and nothing is evicted in vain.
	w = busyWorld(now, 14)
	adj = Adjust(w.Snapshot(), seed(t), firing(t, w, now), now)
	p = s.Schedule(adj.Snapshot, now)
	for _, x := range p.Preemptions {
		if x.Job == "dev-7" || x.Job == "dev-8" || x.Job == "dev-9" {
			t.Errorf("preempted %s, which is within the 30%% floor", x.Job)
		}
	}
	if len(p.Binds) != 0 {
		t.Errorf("bound %+v with 14 GPUs asked and 13 to free", p.Binds)
	}
}

// The floor is of the baseline, not of what the target holds now: after
// the first round of preemptions the same firing demotes nothing more.
func TestScaleDownFloorDoesNotRatchet(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	w := busyWorld(now, 13)
	fs := firing(t, w, now)
	var kept []*model.Job
	for _, j := range w.Jobs {
		if j.ID == "dev-7" || j.ID == "dev-8" || j.ID == "dev-9" || j.ID == "train" {
			kept = append(kept, j)
		}
	}
	w.Jobs = kept
	adj := Adjust(w.Snapshot(), seed(t), fs, now.Add(time.Minute))
	if len(adj.Overrides) != 0 {
		t.Fatalf("at the floor, overrides %+v, want none", adj.Overrides)
	}
	// A firing that never saw the world measures the floor on what the
	// target holds now: 30 % of 3 GPUs keeps one.
	fs[0].Actions[0].Baseline, fs[0].Actions[0].BaselineKnown = 0, false
	adj = Adjust(w.Snapshot(), seed(t), fs, now.Add(time.Minute))
	if len(adj.Overrides) != 2 || adj.Overrides[0].To.Class != model.ClassSpot {
		t.Fatalf("without a baseline, overrides %+v, want two of three demoted", adj.Overrides)
	}
}

// reallocate raises the class of the target's work and never lowers it;
// the raised inference work then preempts standard work in the core.
func TestReallocateThroughTheCore(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 1, "ND96-H100x8-IB", "l1").
		Tenant("chat", "").Tenant("research", "")
	w.Tenancy.Tenants[0].Labels = map[string]string{"workload": "inference"}
	w.Job("sweep", "research").GPUs(1, 7).Running(now.Add(-time.Hour), schedtest.On("n-1", 0, 1, 2, 3, 4, 5, 6))
	w.Job("replica", "chat").GPUs(1, 2)
	w.Job("vip", "chat").Class(model.ClassReserved).GPUs(1, 1).Job.Spec.Priority.Value = 7
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	if p := s.Schedule(w.Snapshot(), now); len(p.Preemptions) != 0 || len(p.Binds) != 1 || p.Binds[0].Job != "vip" {
		t.Fatalf("without the policy: preemptions %+v, binds %+v, want vip bound on the free GPU", p.Preemptions, p.Binds)
	}
	var m Metrics
	latency(&m, "chat", now.Add(-10*time.Minute), now, 0.2)
	fs := Evaluate(seed(t), State{World: w.Snapshot()}, &m, now)
	if !fired(fs)["customer_sla_protection"] {
		t.Fatalf("firings = %+v", fs)
	}
	adj := Adjust(w.Snapshot(), seed(t), fs, now)
	if len(adj.Overrides) != 1 || adj.Overrides[0].Job != "replica" || adj.Overrides[0].To != (model.Priority{Class: model.ClassReserved}) {
		t.Fatalf("overrides = %+v, want replica raised to reserved and vip left alone", adj.Overrides)
	}
	p := s.Schedule(adj.Snapshot, now)
	if got := preempted(p); fmt.Sprint(got) != "[sweep]" {
		t.Fatalf("preempted %v, want [sweep]", got)
	}
}

// When two policies act on one job, the earlier one in the file wins, and
// the later one's wish is reported.
func TestEarlierPolicyWins(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 1, "ND96-H100x8-IB", "l1").Tenant("t", "")
	j := w.Job("both", "t").Job
	j.Spec.Labels = map[string]string{"workload": "batch"}
	reserved := model.ClassReserved
	ps := &model.PolicySet{Targets: model.BuiltinTargets()}
	ps.Targets["premium"] = model.Target{Name: "premium", Class: &reserved}
	firings := []Firing{
		{Policy: "first", Held: true, Actions: []Action{{Action: model.Action{Kind: model.ActionMigrate, Targets: []string{"batch_jobs"}, Destination: "low_priority_pool"}}}},
		{Policy: "second", Held: true, Actions: []Action{{Action: model.Action{Kind: model.ActionMigrate, Targets: []string{"batch_jobs"}, Destination: "premium"}}}},
	}
	adj := Adjust(w.Snapshot(), ps, firings, now)
	if got := adj.Snapshot.Jobs[0].Spec.Priority.Class; got != model.ClassSpot {
		t.Fatalf("class = %s, want spot (the first policy's)", got)
	}
	if len(adj.Ignored) != 1 || adj.Ignored[0].Policy != "second" || adj.Ignored[0].Detail != "already decided by first" {
		t.Fatalf("ignored = %+v", adj.Ignored)
	}
	// Reversed, the other one wins.
	firings[0], firings[1] = firings[1], firings[0]
	if got := Adjust(w.Snapshot(), ps, firings, now).Snapshot.Jobs[0].Spec.Priority.Class; got != model.ClassReserved {
		t.Fatalf("class = %s, want reserved", got)
	}
}

// Work is matched on the labels of its partition, tenant and itself, a
// nearer one overriding a key; jobs that ended are left alone.
func TestTargetsMatchInheritedLabels(t *testing.T) {
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 1, "ND96-H100x8-IB", "l1").
		Partition("lab", "r", "H100", 0).Tenant("t", "lab").Tenant("u", "")
	w.Tenancy.Partitions[0].Labels = map[string]string{"workload": "batch"}
	w.Job("from-partition", "t")
	w.Job("overridden", "t").Job.Spec.Labels = map[string]string{"workload": "inference"}
	w.Job("unlabelled", "u")
	w.Job("ended", "t").Job.Status.State = model.StateSucceeded
	fs := []Firing{{Policy: "p", Held: true, Actions: []Action{{Action: model.Action{Kind: model.ActionMigrate,
		Targets: []string{"batch_jobs"}, Destination: "low_priority_pool"}}}}}
	adj := Adjust(w.Snapshot(), seed(t), fs, schedtest.Epoch)
	if len(adj.Overrides) != 1 || adj.Overrides[0].Job != "from-partition" {
		t.Fatalf("overrides = %+v, want from-partition only", adj.Overrides)
	}
}

// TestUtilizationByScope: the fleet, each region and each cluster count
// the GPUs of their Ready nodes and what holding jobs have allocated there;
// a NotReady node counts in neither, and queued or ended jobs hold nothing.
func TestUtilizationByScope(t *testing.T) {
	w := schedtest.NewWorld().
		Region("east", "us", model.FabricInfiniBand).Nodes("e", 2, "ND96-H100x8-IB", "l1").
		Cluster("east-b", model.FabricInfiniBand).Nodes("b", 1, "ND96-H100x8-IB", "l2").
		Region("west", "us", model.FabricInfiniBand).Nodes("w", 2, "ND96-H100x8-IB", "l1").
		NotReady("w-2").Tenant("t", "")
	start := time.Unix(0, 0)
	w.Job("whole", "t").GPUs(1, 4).Running(start, schedtest.On("e-1", 0, 1, 2, 3))
	w.Job("gang", "t").GPUs(2, 2).Running(start, schedtest.On("e-2", 0, 1), schedtest.On("b-1", 0, 1))
	frac := w.Job("frac", "t").Milli(250).Running(start, schedtest.On("w-1", 0))
	frac.Job.Status.Allocations[0].GPUMilli = 250
	w.Job("lost", "t").GPUs(1, 8).Running(start, schedtest.On("w-2", 0, 1, 2, 3, 4, 5, 6, 7)) // on the NotReady node
	w.Job("queued", "t").GPUs(1, 8)
	got := Utilization(w.Snapshot())
	want := map[model.Scope]Usage{
		model.ScopeFleet:                  {Ready: 32, AllocatedMilli: 8250},
		{Kind: "region", Name: "east"}:    {Ready: 24, AllocatedMilli: 8000},
		{Kind: "region", Name: "west"}:    {Ready: 8, AllocatedMilli: 250},
		{Kind: "cluster", Name: "east-c"}: {Ready: 16, AllocatedMilli: 6000},
		{Kind: "cluster", Name: "east-b"}: {Ready: 8, AllocatedMilli: 2000},
		{Kind: "cluster", Name: "west-c"}: {Ready: 8, AllocatedMilli: 250},
	}
	if !maps.Equal(got, want) {
		t.Errorf("Utilization = %v,\nwant %v", got, want)
	}
}

// One Adjuster used cycle after cycle answers as a fresh Adjust does: its
// buffers carry nothing from a larger world to a smaller one, or from a
// firing to none.
func TestAdjusterKeepsNothingBetweenCalls(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	var a Adjuster
	for _, train := range []int{13, 14, 2, 13} {
		w := busyWorld(now, train)
		fs := firing(t, w, now)
		if train == 2 {
			w.Jobs = w.Jobs[:5] // a smaller queue after a larger one
		}
		for _, active := range [][]Firing{fs, nil, fs} {
			got, want := a.Adjust(w.Snapshot(), seed(t), active, now), Adjust(w.Snapshot(), seed(t), active, now)
			if g, x := fmt.Sprintf("%+v %+v", got.Overrides, got.Ignored), fmt.Sprintf("%+v %+v", want.Overrides, want.Ignored); g != x {
				t.Fatalf("train %d, %d firings: reused %s, fresh %s", train, len(active), g, x)
			}
			if len(got.Snapshot.Jobs) != len(want.Snapshot.Jobs) {
				t.Fatalf("train %d: %d jobs, want %d", train, len(got.Snapshot.Jobs), len(want.Snapshot.Jobs))
			}
			for i, j := range got.Snapshot.Jobs {
				if j.ID != want.Snapshot.Jobs[i].ID || j.Spec.Priority != want.Snapshot.Jobs[i].Spec.Priority {
					t.Fatalf("train %d: job %d is %s %v, want %s %v", train, i, j.ID, j.Spec.Priority,
						want.Snapshot.Jobs[i].ID, want.Snapshot.Jobs[i].Spec.Priority)
				}
			}
		}
		for _, j := range w.Jobs {
			if j.Spec.Priority.Class != model.ClassStandard {
				t.Fatalf("Adjust changed the caller's job %s", j.ID)
			}
		}
	}
}
