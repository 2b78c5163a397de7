package frag

import (
	"slices"
	"testing"
)

// TestFreeReport checks the free-capacity report against the run's own
// figures: the groups hold all the free milli of partly used GPUs, each
// group's GPUs hold fractions that fit one GPU, and the report lies at the
// first attempt past the asked arrived %.
func TestFreeReport(t *testing.T) {
	nodes, pods := loadTrace(t, "default")
	for _, policy := range []string{"bestfit", "allot"} {
		res, err := Run(t.Context(), Config{Nodes: nodes, Pods: pods, Policy: policy, Inflate: 1.3,
			Seeds: []int64{42}, Points: []int{100}, FreeAt: 100})
		if err != nil {
			t.Fatal(err)
		}
		f := res.Seeds[0].Free
		if f == nil {
			t.Fatalf("%s: no free report", policy)
		}
		if f.ArrivedPct < 100 || f.ArrivedPct > 100.1 {
			t.Errorf("%s: reported at arrived %.3f%%, want the first attempt past 100%%", policy, f.ArrivedPct)
		}
		capMilli := int64(6212) * 1000
		if got := 100 * float64(capMilli-f.FreeMilli) / float64(capMilli); got != f.AllocPct {
			t.Errorf("%s: allocation %.4f%% but %d milli free of %d", policy, f.AllocPct, f.FreeMilli, capMilli)
		}
		var grouped int64
		for _, g := range f.Groups {
			var held int64
			for _, x := range g.Holds {
				held += x
			}
			if held >= 1000 || !slices.IsSortedFunc(g.Holds, func(a, b int64) int { return int(b - a) }) {
				t.Errorf("%s: group %v: want fractions under one GPU, largest first", policy, g.Holds)
			}
			if g.FreeMilli != int64(g.GPUs)*(1000-held) {
				t.Errorf("%s: group %v: %d GPUs with %d free", policy, g.Holds, g.GPUs, g.FreeMilli)
			}
			grouped += g.FreeMilli
		}
		if grouped+int64(f.IdleGPUs)*1000 != f.FreeMilli {
			t.Errorf("%s: groups hold %d, idle GPUs %d, free %d", policy, grouped, f.IdleGPUs, f.FreeMilli)
		}
		if f.IdleGPUs == 0 && (f.FullAtPct <= 0 || f.FullAtPct > f.ArrivedPct || f.FullFreeMilli < f.FreeMilli) {
			t.Errorf("%s: full at %.3f%% with %d free, reported at %.3f%% with %d", policy, f.FullAtPct, f.FullFreeMilli, f.ArrivedPct, f.FreeMilli)
		}
		t.Logf("%s: at %.3f%% %d free, %d idle GPUs; full at %.3f%% with %d free; first group %+v",
			policy, f.ArrivedPct, f.FreeMilli, f.IdleGPUs, f.FullAtPct, f.FullFreeMilli, f.Groups[0])
	}
}
