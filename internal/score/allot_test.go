package score

import "testing"

func TestAllotRepeatedFragment(t *testing.T) {
	// One target: a whole GPU with 10 cores.
	w := Workload{{GPUs: 1, Milli: 1000, CPU: 10000, P: 1}}
	fgd, allot := newFragModel(w), newFragModel(w)
	allot.repeat = allotRepeat
	// Four idle GPUs but CPU for only two such pods: FGD sees no fragment,
	// allot half of the two GPUs the CPU strands.
	n := node(25000, 1000, 1000, 1000, 1000)
	if got := fgd.node(n).frag; got != 0 {
		t.Errorf("fgd F(n) = %v, want 0", got)
	}
	if got := allot.node(n).frag; got != 1000 {
		t.Errorf("allot F(n) = %v, want 1000", got)
	}

	// A 400-milli share: an idle GPU holds two and keeps 200 nobody of that
	// shape can use; a GPU with 300 free is fragment for both.
	w = Workload{{GPUs: 1, Milli: 400, CPU: 1000, P: 1}}
	fgd, allot = newFragModel(w), newFragModel(w)
	allot.repeat = allotRepeat
	n = node(64000, 1000, 300)
	if got := fgd.node(n).frag; got != 300 {
		t.Errorf("fgd F(n) = %v, want 300", got)
	}
	if got := allot.node(n).frag; got != 400 {
		t.Errorf("allot F(n) = %v, want 400", got)
	}
}
