package serving

import (
	"math"
	"testing"
)

func TestFastLogIsCloseEnough(t *testing.T) {
	for x := 1.0; x < 1e7; x *= 1.013 {
		if d := math.Abs(fastLog(x) - math.Log(x)); d > 1e-4 {
			t.Fatalf("fastLog(%g) = %g, math.Log %g", x, fastLog(x), math.Log(x))
		}
	}
}

func TestHistogramQuantileWithinItsResolution(t *testing.T) {
	var h Histogram
	if !math.IsNaN(h.Quantile(0.95)) {
		t.Error("an empty histogram has a quantile")
	}
	for i := 1; i <= 1000; i++ {
		h.Add(float64(i)/100, 1) // 0.01 s … 10 s
	}
	if q := h.Quantile(0.95); math.Abs(q-9.5)/9.5 > 0.025 {
		t.Errorf("p95 %g, want 9.5 within 2.5 %%", q)
	}
	h.Add(math.Inf(1), 100) // dropped requests, a tenth of the weight
	if q := h.Quantile(0.95); !math.IsInf(q, 1) {
		t.Errorf("p95 with 9 %% dropped = %g, want +Inf", q)
	}
	h.Reset()
	h.Add(0.5, 3)
	if h.Total() != 3 || math.Abs(h.Quantile(0.5)-0.5)/0.5 > 0.025 {
		t.Errorf("after Reset: total %g, median %g", h.Total(), h.Quantile(0.5))
	}
}
