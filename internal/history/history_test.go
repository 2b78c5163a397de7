package history

import (
	"fmt"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

func job(state model.State, instances, attempts int, allocs ...model.Allocation) *model.Job {
	j := &model.Job{Spec: model.JobSpec{Resources: model.Resources{InstanceCount: instances, GPUsPerInstance: 1}}}
	j.Status.State = state
	j.Status.Allocations = allocs
	j.Status.Attempts = make([]model.Attempt, attempts)
	return j
}

func on(node string, milli int64, gpus ...int) model.Allocation {
	return model.Allocation{Node: node, GPUs: gpus, GPUMilli: milli}
}

// A clean history of two terms passes; each broken property is named.
func TestCheck(t *testing.T) {
	terms := []Term{{URL: "a", Begin: 1, End: 6}, {URL: "b", Begin: 4}}
	clean := []Change{
		{Rev: 2, Key: "/jobs/x", Job: job(model.StateQueued, 1, 0)},
		{Rev: 3, Key: "/jobs/x", Job: job(model.StateRunning, 1, 1, on("n1", 1000, 0))},
		{Rev: 3, Key: "/sched/fence", Fence: &Fence{By: "a", Term: 1}},
		{Rev: 5, Key: "/jobs/y", Job: job(model.StateRunning, 2, 1, on("n1", 500, 1), on("n2", 500, 1))},
		{Rev: 5, Key: "/jobs/z", Job: job(model.StateRunning, 1, 1, on("n1", 500, 1))},
		{Rev: 5, Key: "/sched/fence", Fence: &Fence{By: "a", Term: 1}},
		{Rev: 7, Key: "/jobs/x", Job: job(model.StateQueued, 1, 1)},
		{Rev: 7, Key: "/sched/fence", Fence: &Fence{By: "b", Term: 4}},
		{Rev: 8, Key: "/jobs/x", Job: job(model.StateRunning, 1, 2, on("n1", 1000, 0))},
		{Rev: 8, Key: "/sched/fence", Fence: &Fence{By: "b", Term: 4}},
	}
	r := Check(History{Acked: []string{"x", "y", "z"}, Changes: clean, Terms: terms})
	if !r.OK() || r.Commits != 4 || r.Jobs != 3 || r.Revisions != 5 || r.Leaders != 2 {
		t.Fatalf("clean history: %+v", r)
	}
	for _, tc := range []struct {
		name  string
		edit  func([]Change) []Change
		acked []string
		want  string
	}{
		{"lost", func(c []Change) []Change { return c }, []string{"x", "w"}, ""},
		{"whole GPU twice", func(c []Change) []Change {
			return append(c, Change{Rev: 9, Key: "/jobs/w", Job: job(model.StateRunning, 1, 1, on("n1", 1000, 0))})
		}, nil, "GPU 0 of n1 bound 2000 milli to [w x]"},
		{"fractions past one", func(c []Change) []Change {
			return append(c, Change{Rev: 9, Key: "/jobs/w", Job: job(model.StateRunning, 1, 1, on("n1", 100, 1))})
		}, nil, "GPU 1 of n1 bound 1100 milli"},
		{"gang partly bound", func(c []Change) []Change {
			return append(c, Change{Rev: 9, Key: "/jobs/g", Job: job(model.StateRunning, 3, 1, on("n3", 1000, 0))})
		}, nil, "holds 1 allocations for 3 instances"},
		{"same attempt again", func(c []Change) []Change {
			return append(c, Change{Rev: 9, Key: "/jobs/x", Job: job(model.StateQueued, 1, 2)},
				Change{Rev: 10, Key: "/jobs/x", Job: job(model.StateRunning, 1, 2, on("n4", 1000, 0))})
		}, nil, "holds capacity again in attempt 2"},
		{"deposed leader", func(c []Change) []Change {
			return append(c, Change{Rev: 9, Key: "/sched/fence", Fence: &Fence{By: "a", Term: 1}})
		}, nil, "plan committed by a in term 1; the leader then was b (term 4)"},
		{"follower while the old leader lives", func(c []Change) []Change {
			return append(c[:6:6], Change{Rev: 5, Key: "/sched/fence", Fence: &Fence{By: "b", Term: 4}})
		}, nil, "the leader then was a (term 1)"},
		{"no term", func(c []Change) []Change {
			return append(c, Change{Rev: 9, Key: "/sched/fence", Fence: &Fence{By: "c", Term: 9}})
		}, nil, "the leader then was b"},
	} {
		acked := tc.acked
		if acked == nil {
			acked = []string{"x"}
		}
		r := Check(History{Acked: acked, Changes: tc.edit(append([]Change(nil), clean...)), Terms: terms})
		if tc.name == "lost" {
			if len(r.Lost) != 1 || r.Lost[0] != "w" || r.OK() {
				t.Errorf("%s: %+v", tc.name, r)
			}
			continue
		}
		if r.OK() || !strings.Contains(strings.Join(r.Violations, "\n"), tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, r.Violations, tc.want)
		}
	}
	// A job deleted from the store is lost; one that ends frees its GPUs.
	r = Check(History{Acked: []string{"x"}, Changes: append(append([]Change(nil), clean...),
		Change{Rev: 9, Key: "/jobs/x", Job: job(model.StateSucceeded, 1, 2)},
		Change{Rev: 10, Key: "/jobs/w", Job: job(model.StateRunning, 1, 1, on("n1", 1000, 0))},
		Change{Rev: 11, Key: "/jobs/x"}), Terms: terms})
	if len(r.Lost) != 1 || len(r.Violations) != 0 {
		t.Errorf("ended then deleted: %+v", r)
	}
	// Each property has its count.
	r = Check(History{Changes: append(append([]Change(nil), clean...),
		Change{Rev: 9, Key: "/jobs/w", Job: job(model.StateRunning, 2, 1, on("n1", 1000, 0))},
		Change{Rev: 9, Key: "/sched/fence", Fence: &Fence{By: "a", Term: 1}}), Terms: terms})
	if r.DoubleBound != 1 || r.PartialGangs != 1 || r.StalePlans != 1 || r.Reruns != 0 || len(r.Violations) != 3 {
		t.Errorf("counts: %+v", r)
	}
}

// An elastic job holds whole gangs of any size its range and step allow;
// another size is a gang partly bound.
func TestElasticGangSizes(t *testing.T) {
	elastic := func(allocs ...model.Allocation) *model.Job {
		j := job(model.StateRunning, 2, 1, allocs...)
		j.Spec.Elastic = &model.Elastic{MinInstances: 2, MaxInstances: 6, Step: 2}
		return j
	}
	for _, tc := range []struct {
		nodes   int
		partial int
	}{{2, 0}, {4, 0}, {6, 0}, {3, 1}, {8, 1}} {
		allocs := make([]model.Allocation, tc.nodes)
		for i := range allocs {
			allocs[i] = on(fmt.Sprintf("n%d", i), 1000, 0)
		}
		changes := []Change{{Rev: 2, Key: "/jobs/e", Job: elastic(allocs...)}, {Rev: 2, Key: "/sched/fence", Fence: &Fence{By: "a", Term: 1}}}
		r := Check(History{Acked: []string{"e"}, Changes: changes, Terms: []Term{{URL: "a", Begin: 1}}})
		if r.PartialGangs != tc.partial {
			t.Errorf("%d instances of 2-6 step 2: %d partial gangs, want %d (%v)", tc.nodes, r.PartialGangs, tc.partial, r.Violations)
		}
	}
}
