package score

import (
	"math"
	"testing"

	"github.com/allot-dev/allot/internal/sched"
)

func TestAllotRepeatedFragment(t *testing.T) {
	// One target: a whole GPU with 10 cores.
	w := Workload{{GPUs: 1, Milli: 1000, CPU: 10000, P: 1}}
	fgd, allot := newFragModel(w), newFragModel(w)
	allot.repeat = 0.5
	// Four idle GPUs but CPU for only two such pods: FGD sees no fragment,
	// allot at repeat weight ½ half of the two GPUs the CPU strands.
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
	allot.repeat = 0.5
	n = node(64000, 1000, 300)
	if got := fgd.node(n).frag; got != 300 {
		t.Errorf("fgd F(n) = %v, want 300", got)
	}
	if got := allot.node(n).frag; got != 400 {
		t.Errorf("allot F(n) = %v, want 400", got)
	}
}

func TestExpectedLeft(t *testing.T) {
	// Fractions of 300 and 400 milli, equally likely, and a whole GPU that
	// does not count.
	w := Workload{{GPUs: 1, Milli: 300, P: 0.4}, {GPUs: 1, Milli: 400, P: 0.4}, {GPUs: 1, Milli: 1000, P: 0.2}}
	left := expectedLeft(w)
	// left[f] = f below 300, else the mean over the sizes that fit.
	for f, want := range map[int]float64{
		0: 0, 299: 299, 300: 0,
		400:  50,   // 300 leaves 100, 400 leaves 0
		500:  150,  // 200 or 100
		600:  100,  // left[300] = 0 or left[200] = 200
		700:  25,   // left[400] = 50 or left[300] = 0
		1000: 62.5, // left[700] = 25 or left[600] = 100
	} {
		if got := left[f]; math.Abs(got-want) > 1e-9 {
			t.Errorf("left[%d] = %v, want %v", f, got, want)
		}
	}
	if got := expectedLeft(Workload{{GPUs: 1, Milli: 1000, P: 1}}); got != nil {
		t.Errorf("no fraction: got a table of %d", len(got))
	}
}

func TestAllotLearnsRepeat(t *testing.T) {
	a := Workload{{GPUs: 1, Milli: 1000, CPU: 10000, P: 0.5}, {GPUs: 1, Milli: 1000, CPU: 20000, P: 0.5}}
	s, err := New("allot", WithWorkload(a))
	if err != nil {
		t.Fatal(err)
	}
	al := s.(*Allot)
	if got := al.m.repeat; got != 0.5 {
		t.Fatalf("repeat before any pod = %v, want Σ p² = 0.5", got)
	}
	small, big := &sched.Request{GPUs: 1, Milli: 1000, CPU: 10000}, &sched.Request{GPUs: 1, Milli: 1000, CPU: 20000}
	n := node(25000, 1000, 1000, 1000, 1000)
	frag := al.m.node(n).frag // CPU for 2 small pods of 4 GPUs, 1 big one
	steps := []struct {
		r    *sched.Request
		want float64
	}{
		{small, 0.5}, // an empty node teaches nothing
		{small, 1},   // joins its own shape
		{big, 0.5},   // joins another
		{big, 0.65},  // 2 of 3, rounded to 1/20
	}
	for i, st := range steps {
		s.(sched.GPUChooser).ChooseGPUs(n, st.r, nil)
		n.Pods++
		if got := al.m.repeat; got != st.want {
			t.Errorf("after pod %d: repeat %v, want %v", i+1, got, st.want)
		}
	}
	// The weight moved, so the cached measure of the unchanged node must
	// have been dropped and measured again with the new weight.
	if got := al.m.node(n).frag; got == frag {
		t.Errorf("F(n) = %v after the weight moved from 0.5 to 0.65: stale cache", got)
	}
}

func TestAllotCPUTerm(t *testing.T) {
	// Half the pods take a whole GPU and 8 cores, half only 4 cores: κ is
	// 8 milli-cores per GPU milli, the term's weight ½ (the GPU pods'
	// share). The repeat term is switched off to isolate the CPU term.
	w := Workload{{GPUs: 1, Milli: 1000, CPU: 8000, P: 0.5}, {CPU: 4000, P: 0.5}}
	fgd := newFragModel(w)
	al := newAllot(newFragModel(w))
	al.m.repeat = 0
	if al.m.cpuPerMilli != 8 || al.m.cpuW != 0.5 {
		t.Fatalf("κ = %v, weight %v; want 8 and 0.5", al.m.cpuPerMilli, al.m.cpuW)
	}
	// Four idle GPUs, 24 cores: the cores feed three GPUs, so 1000 milli
	// is stranded (500 weighted) on top of FGD's 2000 (the CPU-only half
	// counts all idle milli).
	n := node(24000, 1000, 1000, 1000, 1000)
	if got := fgd.node(n).frag; got != 2000 {
		t.Errorf("fgd F(n) = %v, want 2000", got)
	}
	if got := al.m.node(n).frag; got != 2500 {
		t.Errorf("allot F(n) = %v, want 2500", got)
	}
	for _, tc := range []struct {
		name         string
		r            sched.Request
		fgdD, allotD float64
	}{
		// A GPU pod at the mean rate leaves the CPU term where it was.
		{"gpu pod, 8 cores", sched.Request{GPUs: 1, Milli: 1000, CPU: 8000}, 500, 500},
		// A CPU-hungry GPU pod strands one more GPU: charged 500.
		{"gpu pod, 16 cores", sched.Request{GPUs: 1, Milli: 1000, CPU: 16000}, 500, 0},
		// A CPU-only pod is not charged for the term.
		{"cpu-only pod", sched.Request{CPU: 8000}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fgd.evaluate(n, &tc.r, fgdBetter).delta; got != tc.fgdD {
				t.Errorf("fgd ΔF = %v, want %v", got, tc.fgdD)
			}
			if got := al.m.evaluate(n, &tc.r, allotBetter).delta; got != tc.allotD {
				t.Errorf("allot ΔF = %v, want %v", got, tc.allotD)
			}
		})
	}
}

func TestAllotReservesModels(t *testing.T) {
	// Whole-GPU pods: 30 % may only use G2, 15 % only T4, the rest any
	// model. The cluster: 8 idle G2 GPUs and 2 idle T4 GPUs, CPU to spare.
	g2, t4 := []string{"G2"}, []string{"T4"}
	w := Workload{
		{GPUs: 1, Milli: 1000, CPU: 1000, P: 0.55},
		{GPUs: 1, Milli: 1000, CPU: 1000, Models: g2, P: 0.3},
		{GPUs: 1, Milli: 1000, CPU: 1000, Models: t4, P: 0.15},
	}
	if newReservation(w[:1]) != nil {
		t.Fatal("a workload without model-limited pods got a reservation")
	}
	big := node(64000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000)
	big.GPUModel = "G2"
	small := node(64000, 1000, 1000)
	small.Index = 1
	any, onlyT4 := &sched.Request{GPUs: 1, Milli: 1000, CPU: 1000}, &sched.Request{GPUs: 1, Milli: 1000, CPU: 1000, Models: t4}

	// FGD rewards filling T4: the G2-only pods (30 %) count its idle milli
	// as fragment, the T4-only ones (15 %) G2's. ΔF = 300 and 150.
	fgd, _ := New("fgd", WithWorkload(w))
	if a, b := fgd.Score(small, any), fgd.Score(big, any); a <= b {
		t.Fatalf("fgd scores T4 %v, G2 %v: want T4 ahead (the pull the reservation corrects)", a, b)
	}
	// allot charges τ·1000: T4 min(1, 0.15·10000/2000) = 0.75, G2
	// 0.3·10000/8000 = 0.375, so ΔF − charge is −450 on T4, −225 on G2.
	s, _ := New("allot", WithWorkload(w))
	al := s.(*Allot)
	al.m.repeat = 0 // isolate the charge (no fraction, CPU to spare: F is FGD's)
	// The free capacity per model counts the nodes scored so far, so the
	// first decision (here, the first two scores) sees part of the cluster.
	al.Score(small, any)
	al.Score(big, any)
	if a, b := al.Score(small, any), al.Score(big, any); a >= b {
		t.Errorf("allot scores T4 %v, G2 %v: want G2 ahead", a, b)
	}
	if got := al.res.charge(small, any); got != 750 {
		t.Errorf("charge on T4 = %v, want 750", got)
	}
	// A pod that can only use T4 is not charged: the capacity is kept for it.
	if got := al.res.charge(small, onlyT4); got != 0 {
		t.Errorf("charge to a T4-only pod = %v, want 0", got)
	}
	// The pod chosen is counted at once, before it is bound: T4 keeps 1000
	// of 9000 free, τ = min(1, 0.15·9000/1000) = 1.
	s.(sched.GPUChooser).ChooseGPUs(small, onlyT4, nil)
	if got := al.res.charge(big, any); got != 1000*0.3*9000/8000 {
		t.Errorf("charge on G2 after a T4 pod = %v, want %v", got, 1000*0.3*9000/8000.0)
	}
	small.Bind(onlyT4, []int{0})
	if got := al.res.charge(small, any); got != 1000 {
		t.Errorf("charge on T4 after the bind = %v, want 1000", got)
	}
}

func TestAllotReservesHosts(t *testing.T) {
	// Three 128-core nodes and one 96-core node, 8 idle GPUs each. An
	// 8-GPU 120-core pod fits only the 128-core class.
	eight := []int64{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}
	big0, small, big1, big2 := node(128000, eight...), node(96000, eight...), node(128000, eight...), node(128000, eight...)
	for i, n := range []*sched.NodeInfo{big0, small, big1, big2} {
		n.Index, n.FreeMilli = i, append([]int64(nil), eight...)
		if n.CPUFree == 128000 {
			n.CPUCap = 128000
		}
	}
	one := &sched.Request{GPUs: 1, Milli: 1000, CPU: 10000}
	wide := &sched.Request{GPUs: 8, Milli: 1000, CPU: 120000}
	h := newHostReserve()
	for _, n := range []*sched.NodeInfo{big0, small, big1, big2} {
		if got := h.charge(n, one, -1); got != 0 {
			t.Fatalf("charge before any one-class pod = %v, want 0", got)
		}
	}
	// Four one-GPU pods on the small node, then the wide pod on big0: the
	// wide shape has 8000 of the 12000 GPU milli placed.
	for g := range 4 {
		h.place(small, one, -1)
		small.Bind(one, []int{g})
	}
	h.place(big0, wide, -1)
	big0.Bind(wide, []int{0, 1, 2, 3, 4, 5, 6, 7})
	// Free: 4000 + 0 + 8000 + 8000; big1 and big2 can host the wide shape
	// (16000): τ = min(1, 2/3 · 20000/16000).
	h.charge(small, one, -1)
	h.charge(big2, one, -1)
	if got, want := h.charge(big1, one, -1), 1000*(8000.0/12000)*20000/16000; math.Abs(got-want) > 1e-9 {
		t.Errorf("charge for breaking a 128-core node = %v, want %v", got, want)
	}
	if got := h.charge(small, one, -1); got != 0 {
		t.Errorf("charge on the 96-core node = %v, want 0", got)
	}
	if got := h.charge(big1, wide, -1); got != 0 {
		t.Errorf("charge to the wide pod itself = %v, want 0", got)
	}
	if got := h.charge(big1, &sched.Request{CPU: 120000}, -1); got != 0 {
		t.Errorf("charge to a CPU-only pod = %v, want 0", got)
	}
	// A 128-core node that already lost the wide shape is not charged, and
	// the one left that can host it is worth more: τ capped at 1.
	big2.Bind(one, []int{0})
	if got := h.charge(big2, one, -1); got != 0 {
		t.Errorf("charge on a broken 128-core node = %v, want 0", got)
	}
	if got := h.charge(big1, one, -1); got != 1000 {
		t.Errorf("charge for the last 128-core node = %v, want 1000", got)
	}
}

// TestHostChargeFollowsTheGPU: a fraction breaks a node for a wide shape
// only when the GPU chosen for it is idle, not whenever a partly used GPU
// would have room for it.
func TestHostChargeFollowsTheGPU(t *testing.T) {
	eight := []int64{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}
	big0, small := node(128000, eight...), node(96000, eight...)
	big1 := node(128000, 530, 1000, 1000, 1000, 1000, 1000, 1000, 1000)
	for i, n := range []*sched.NodeInfo{big0, small, big1} {
		n.Index = i
		if n.CPUFree == 128000 {
			n.CPUCap = 128000
		}
	}
	big1.FreeWhole = 7
	// Seven whole GPUs and 120 cores: only the 128-core class holds it.
	wide := &sched.Request{GPUs: 7, Milli: 1000, CPU: 120000}
	frac := &sched.Request{GPUs: 1, Milli: 320, CPU: 4000}
	h := newHostReserve()
	for _, n := range []*sched.NodeInfo{big0, small, big1} {
		h.charge(n, frac, 0)
	}
	h.place(big0, wide, -1)
	big0.Bind(wide, []int{0, 1, 2, 3, 4, 5, 6})
	if got := h.charge(big1, frac, 0); got != 0 {
		t.Errorf("charge beside the 470 = %v, want 0: the node keeps 7 idle GPUs", got)
	}
	if got := h.charge(big1, frac, 1); got <= 0 {
		t.Errorf("charge on an idle GPU = %v, want > 0: the node keeps 6", got)
	}
}
