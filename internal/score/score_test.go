package score

import (
	"errors"
	"slices"
	"testing"

	"github.com/allot-dev/allot/internal/sched"
)

func node(cpu int64, free ...int64) *sched.NodeInfo {
	n := &sched.NodeInfo{Ready: true, GPUModel: "T4", CPUCap: 96000, CPUFree: cpu, MemCap: 1 << 20, MemFree: 1 << 20, FreeMilli: free}
	for _, f := range free {
		if f == milliPerGPU {
			n.FreeWhole++
		}
	}
	return n
}

func TestNew(t *testing.T) {
	want := []string{"allot", "bestfit", "clustering", "dotprod", "fgd", "packing", "random"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	w := Workload{{GPUs: 1, Milli: 1000, P: 1}}
	for _, name := range want {
		s, err := New(name, WithSeed(1), WithWorkload(w))
		if err != nil || s.Name() != name {
			t.Errorf("New(%q) = %v, %v", name, s, err)
		}
	}
	if _, err := New("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("New(nope) err = %v", err)
	}
	if _, err := New("fgd"); !errors.Is(err, ErrNoWorkload) {
		t.Errorf("New(fgd) without workload err = %v", err)
	}
}

func TestMinMax(t *testing.T) {
	tests := []struct{ in, want []float64 }{
		{[]float64{10, 20, 13}, []float64{0, 100, 30}},
		{[]float64{7, 7}, []float64{0, 0}},
		{[]float64{0, 3, 1}, []float64{0, 100, 33}},
	}
	for _, tt := range tests {
		got := slices.Clone(tt.in)
		minMax(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("minMax(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestPaperScores(t *testing.T) {
	shared := &sched.Request{GPUs: 1, Milli: 300, CPU: 4000}
	whole2 := &sched.Request{GPUs: 2, Milli: 1000, CPU: 8000}
	cpuOnly := &sched.Request{CPU: 8000}
	tests := []struct {
		name string
		s    sched.Scorer
		n    *sched.NodeInfo
		r    *sched.Request
		want float64
	}{
		{"packing idle node", Packing{}, node(96000, 1000, 1000, 1000, 1000), shared, 29},
		{"packing idle GPUs of busy node", Packing{}, node(96000, 1000, 1000, 200, 0), whole2, 48},
		{"packing shared GPU", Packing{}, node(96000, 1000, 500, 0, 0), shared, 95},
		{"packing fraction on an idle GPU", Packing{}, node(96000, 1000, 200, 0, 0), shared, 49},
		{"packing cpu-only", Packing{}, node(96000, 1000), cpuOnly, 0},
		{"bestfit raw", BestFit{}, node(64000, 1000, 1000), whole2, 78},
		{"dotprod", DotProd{}, node(64000, 1000, 1000), whole2, 95},
		{"clustering idle", Clustering{}, node(96000, 1000, 1000), shared, 25 + 25*6000/8000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Score(tt.n, tt.r); got != tt.want {
				t.Errorf("score = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFragmentation(t *testing.T) {
	// Half the workload wants 600 milli, half wants one whole GPU.
	w := Workload{{GPUs: 1, Milli: 600, CPU: 1000, P: 0.5}, {GPUs: 1, Milli: 1000, CPU: 1000, P: 0.5}}
	m := newFragModel(w)
	n := node(8000, 1000, 500)
	n.Index = 0
	// GPU 1 (500 free) is too small for both shapes: fragment 500.
	if got := m.node(n).frag; got != 500 {
		t.Errorf("F(n) = %v, want 500", got)
	}
	s, _ := New("fgd", WithWorkload(w))
	r := &sched.Request{GPUs: 1, Milli: 500, CPU: 1000}
	// Filling GPU 1 removes its 500 of fragment: ΔF = 500.
	if got, want := s.Score(n, r), fgdScore(500); got != want {
		t.Errorf("fgd score = %v, want %v", got, want)
	}
	if g := s.(sched.GPUChooser).ChooseGPUs(n, r, nil); !slices.Equal(g, []int{1}) {
		t.Errorf("fgd GPUs = %v, want [1]", g)
	}
	// Not enough CPU for any shape: every idle milli is fragment.
	n.CPUFree, n.Gen = 500, n.Gen+1
	if got := m.node(n).frag; got != 1500 {
		t.Errorf("F(n) without CPU = %v, want 1500", got)
	}
}

func TestTargetWorkload(t *testing.T) {
	var reqs []sched.Request
	add := func(k int, r sched.Request) {
		for range k {
			reqs = append(reqs, r)
		}
	}
	add(90, sched.Request{GPUs: 1, Milli: 1000, CPU: 8000})
	add(6, sched.Request{CPU: 4000})
	add(4, sched.Request{GPUs: 8, Milli: 1000, CPU: 64000})
	w := TargetWorkload(reqs, 0.95)
	if len(w) != 2 || w[0].GPUs != 1 || w[1].GPUs != 0 {
		t.Fatalf("workload = %+v", w)
	}
	if w[0].P != 90.0/96 || w[1].P != 6.0/96 {
		t.Errorf("shares = %v, %v", w[0].P, w[1].P)
	}
}
