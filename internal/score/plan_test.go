package score

import (
	"math"
	"testing"

	"github.com/allot-dev/allot/internal/sched"
)

func TestPlanPrices(t *testing.T) {
	// The default trace's fractions in small: 810s alone (a 160 beside a
	// few), 650 with a 320, two 470s, and 230s four to a GPU.
	w := Workload{
		{GPUs: 1, Milli: 810, P: 0.30}, {GPUs: 1, Milli: 160, P: 0.02},
		{GPUs: 1, Milli: 650, P: 0.10}, {GPUs: 1, Milli: 320, P: 0.12},
		{GPUs: 1, Milli: 470, P: 0.20}, {GPUs: 1, Milli: 230, P: 0.06},
		{GPUs: 1, Milli: 1000, P: 0.20},
	}
	p, err := newPlan(w)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[int64]float64{810: 1, 160: 0, 650: 2.0 / 3, 320: 1.0 / 3, 470: 0.5, 230: 0.25} {
		if got := p.price[s]; math.Abs(got-want) > 1e-6 {
			t.Errorf("price of %d = %v, want %v", s, got, want)
		}
	}
	for _, c := range []struct {
		name    string
		s, free int64
		want    float64
	}{
		{"320 beside a 650", 320, 350, 0},
		{"320 on an idle GPU, where a 650 may join it", 320, 1000, 0},
		{"320 beside a 470: a 470's room, worth ½, for a 320 worth ⅓", 320, 530, 167},
		{"470 beside a 470", 470, 530, 0},
		{"230 beside a 470 and a 230", 230, 300, 0},
		{"230 beside a 650: a 320's room for a 230", 230, 350, 83},
		{"160 beside an 810", 160, 190, 0},
		{"810 on an idle GPU", 810, 1000, 0},
		// 110 is not in the target: priced at what the plan puts in its
		// room (nothing), it loses nothing beside an 810 but takes a 230's
		// room beside a 470 and a 230.
		{"110 beside an 810", 110, 190, 0},
		{"110 beside a 470 and a 230", 110, 300, 250},
	} {
		if got := p.loss(c.s, c.free); got != c.want {
			t.Errorf("%s: loss(%d, %d) = %v, want %v", c.name, c.s, c.free, got, c.want)
		}
	}
	for s := int64(1); s < milliPerGPU; s++ {
		for f := s; f <= milliPerGPU; f++ {
			if l := p.loss(s, f); l < 0 {
				t.Fatalf("loss(%d, %d) = %v < 0", s, f, l)
			}
		}
	}
}

func TestPlanNeedsFractions(t *testing.T) {
	p, err := newPlan(Workload{{GPUs: 1, Milli: 1000, P: 0.5}, {P: 0.5}})
	if err != nil || p != nil {
		t.Errorf("newPlan without fractions = %v, %v; want nil, nil", p, err)
	}
}

// TestAllotKeepsToPlan: a 320 takes an idle GPU, where a 650 may join it,
// rather than the room beside a 470 that a second 470 would fill, though
// FGD's measure (which keeps idle GPUs for whole-GPU pods) and best fit
// both prefer the partly used GPU.
func TestAllotKeepsToPlan(t *testing.T) {
	w := Workload{
		{GPUs: 1, Milli: 650, CPU: 1000, P: 0.2}, {GPUs: 1, Milli: 320, CPU: 1000, P: 0.2},
		{GPUs: 1, Milli: 470, CPU: 1000, P: 0.4}, {GPUs: 1, Milli: 1000, CPU: 1000, P: 0.2},
	}
	r := &sched.Request{GPUs: 1, Milli: 320, CPU: 1000}
	for _, policy := range []string{"fgd", "allot"} {
		s, err := New(policy, WithWorkload(w))
		if err != nil {
			t.Fatal(err)
		}
		beside470, idle := node(64000, 530), node(64000, 1000)
		beside470.Index, idle.Index = 0, 1
		both := node(64000, 530, 1000)
		both.Index = 2
		sa, sb := s.Score(beside470, r), s.Score(idle, r)
		g := s.(sched.GPUChooser).ChooseGPUs(both, r, nil)
		if policy == "fgd" {
			// The case is only a test if FGD goes the other way.
			if sa <= sb || g[0] != 0 {
				t.Fatalf("fgd: scores %v beside the 470, %v idle, GPU %v: want the 470's", sa, sb, g)
			}
			continue
		}
		if sb <= sa {
			t.Errorf("allot: score beside the 470 %v, on the idle GPU %v: want the idle one higher", sa, sb)
		}
		if len(g) != 1 || g[0] != 1 {
			t.Errorf("allot: GPUs chosen on a node with both = %v, want [1]", g)
		}
	}
}
