package serving

import (
	"math"
	"testing"

	"github.com/allot-dev/allot/internal/trace/azurellm"
)

// tokenPattern is testPattern's arrivals with every request of ctx
// context and gen generated tokens.
func tokenPattern(ctx, gen int) *azurellm.Pattern {
	p := testPattern(600)
	for i := range p.Context {
		p.Context[i], p.Generated[i] = ctx, gen
	}
	return p
}

// The rate a load test finds is the replica's capacity or one of the 5 %
// steps below it, and a looser SLO never finds a lower one.
func TestLoadTestRateIsBoundedAndMonotoneInTheSLO(t *testing.T) {
	prof, err := NewProfile(DefaultModel, "T4", 1)
	if err != nil {
		t.Fatal(err)
	}
	p := testPattern(600)
	for i := range p.Context { // 200 to 1700 context, 20 to 200 generated
		p.Context[i] = 200 + 1500*(i*37%100)/100
		p.Generated[i] = 20 + 180*(i*53%100)/100
	}
	capacity := prof.Capacity(p.MeanTokens())
	for _, tc := range []struct {
		name string
		ttft bool
		slos []float64 // tightest first
	}{
		{"latency", false, []float64{8, 10, 15, 30}},
		{"ttft", true, []float64{0.5, 1, 2, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := 0.0
			for _, slo := range tc.slos {
				rate := LoadTest(prof, p, tc.ttft, slo, 2, 0.9, 1, 1)
				t.Logf("SLO %g s: %.3f requests/s a replica (capacity %.3f)", slo, rate, capacity)
				if rate > capacity*(1+1e-9) {
					t.Errorf("SLO %g s: %g requests/s a replica, above its capacity %g", slo, rate, capacity)
				}
				if k := math.Round(math.Log(rate/capacity) / math.Log(0.95)); rate > 0 && math.Abs(capacity*math.Pow(0.95, k)-rate) > 1e-9*rate {
					t.Errorf("SLO %g s: %g requests/s is not the capacity %g less a number of 5 %% steps", slo, rate, capacity)
				}
				if rate < last {
					t.Errorf("SLO %g s: %g requests/s, below the %g of a tighter SLO", slo, rate, last)
				}
				last = rate
			}
			if !(last > 0) {
				t.Errorf("the loosest SLO, %g s, finds no rate", tc.slos[len(tc.slos)-1])
			}
		})
	}
}

// With every request alike, the idle per-minute p95 is that request's
// time alone, at the histogram's resolution.
func TestIdleMinuteP95OfConstantTokens(t *testing.T) {
	prof, err := NewProfile(DefaultModel, "A100", 1)
	if err != nil {
		t.Fatal(err)
	}
	const ctx, gen = 1200, 150
	p := tokenPattern(ctx, gen)
	prefill := float64(ctx) / prof.PrefillTokensPerSec
	for _, tc := range []struct {
		name string
		ttft bool
		v    float64
	}{
		{"ttft", true, prefill},
		{"latency", false, prefill + float64(gen)*prof.Step(1, ctx+gen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			h.Add(tc.v, 1)
			want := h.Quantile(0.95)
			for _, q := range []float64{0.5, 0.999} {
				if got := IdleMinuteP95(prof, p, tc.ttft, 30, q, 2, 1); got != want {
					t.Errorf("q %g: %g s, want %g (%g s alone)", q, got, want, tc.v)
				}
			}
			if !(want >= tc.v && want < tc.v*HistogramGrowth*1.001) {
				t.Errorf("the histogram puts %g s at %g", tc.v, want)
			}
		})
	}
	if got := IdleMinuteP95(prof, p, true, 0, 0.5, 1, 1); !math.IsNaN(got) {
		t.Errorf("no requests: %g, want NaN", got)
	}
}
