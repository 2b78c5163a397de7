package score

import (
	"testing"

	"github.com/allot-dev/allot/internal/sched"
)

func TestLookaheadValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Workload
		cpu  int64
		free []int64
		want float64
	}{
		// Whole-GPU pods of 8 cores: 16 cores feed two of four idle GPUs,
		// so two stay idle in every future; the next pod still fits.
		{"cpu strands gpus", Workload{{GPUs: 1, Milli: 1000, CPU: 8000, P: 1}}, 16000, []int64{1000, 1000, 1000, 1000}, 2000},
		{"cpu enough", Workload{{GPUs: 1, Milli: 1000, CPU: 8000, P: 1}}, 64000, []int64{1000, 1000, 1000, 1000}, 0},
		// Too little CPU for even one pod: the rollout and the next-pod
		// measure both count every free milli.
		{"no pod fits", Workload{{GPUs: 1, Milli: 1000, CPU: 8000, P: 1}}, 4000, []int64{1000, 1000}, 4000},
		// 500-milli shares: the idle GPU takes two, 300 stays on the other
		// (rollout 300, next pod 300).
		{"fractions", Workload{{GPUs: 1, Milli: 500, CPU: 1000, P: 1}}, 64000, []int64{1000, 300}, 600},
		// A CPU-only target is no GPU shape: no look-ahead at all.
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLookahead(tc.w)
			accept := make([]bool, len(tc.w))
			for i := range accept {
				accept[i] = true
			}
			if got := l.value("T4", accept, tc.cpu, tc.free); got != tc.want {
				t.Errorf("value = %v, want %v", got, tc.want)
			}
		})
	}
	if l := newLookahead(Workload{{CPU: 4000, P: 1}}); l != nil {
		t.Error("a workload without GPU shapes has a look-ahead")
	}
}

// TestLookaheadIsAFunctionOfState checks that the value depends on the
// multiset of free milli, not on the GPUs' order or on what was asked
// before (the memo), and that on a model no target may use every free
// milli is stranded (the rollout places nothing; no next pod is counted).
func TestLookaheadIsAFunctionOfState(t *testing.T) {
	w := Workload{
		{GPUs: 1, Milli: 1000, CPU: 6000, P: 0.3},
		{GPUs: 1, Milli: 460, CPU: 4000, P: 0.3},
		{GPUs: 2, Milli: 1000, CPU: 16000, P: 0.2},
		{GPUs: 1, Milli: 250, CPU: 2000, Models: []string{"V100"}, P: 0.2},
	}
	all := []bool{true, true, true, true}
	a := []int64{1000, 540, 0, 1000, 250, 1000, 1000, 80}
	b := []int64{80, 1000, 1000, 250, 0, 1000, 540, 1000}
	warm := newLookahead(w)
	for _, cpu := range []int64{12000, 30000, 90000} {
		want := newLookahead(w).value("T4", all, cpu, a)
		if got := warm.value("T4", all, cpu, b); got != want {
			t.Errorf("cpu %d: reordered GPUs give %v, want %v", cpu, got, want)
		}
		if got := warm.value("T4", all, cpu, a); got != want {
			t.Errorf("cpu %d: memoised value %v, want %v", cpu, got, want)
		}
	}
	if got := newLookahead(w).value("T4", []bool{false, false, false, false}, 90000, a); got != 4870 {
		t.Errorf("no target may use the model: value %v, want all 4870 free milli", got)
	}
}

// TestAllotLooksAheadOnShortNodes: allot measures a node by the rollout
// only where its free CPU cannot feed its free GPU milli at the target's
// rate; elsewhere by F.
func TestAllotLooksAheadOnShortNodes(t *testing.T) {
	// κ = 8 cores per GPU: 24 cores feed three of four idle GPUs.
	w := Workload{{GPUs: 1, Milli: 1000, CPU: 8000, P: 0.5}, {CPU: 4000, P: 0.5}}
	al := newAllot(newFragModel(w))
	short, fed := node(24000, 1000, 1000, 1000, 1000), node(32000, 1000, 1000, 1000, 1000)
	short.Index, fed.Index = 0, 1
	if !al.useLook(short) || al.useLook(fed) {
		t.Fatalf("useLook: short node %v, fed node %v; want true, false", al.useLook(short), al.useLook(fed))
	}
	// On the fed node a CPU-only pod of 8 cores leaves three GPUs fed:
	// F's delta, no look-ahead.
	cpu := sched.Request{CPU: 8000}
	if got, want := al.Score(fed, &cpu), fgdScore(al.m.evaluate(fed, &cpu, allotBetter).delta); got != want {
		t.Errorf("fed node: score %v, want F's %v", got, want)
	}
	// On the short node the same pod strands one more GPU in every
	// future: the rollout's delta is -1000.
	if got := al.lookDelta(short, &cpu); got != -1000 {
		t.Errorf("short node: look-ahead delta %v, want -1000", got)
	}
	if got, want := al.Score(short, &cpu), fgdScore(-1000); got != want {
		t.Errorf("short node: score %v, want %v", got, want)
	}
}
