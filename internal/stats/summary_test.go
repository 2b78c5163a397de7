package stats

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name string
		xs   []float64
		want Summary
	}{
		{"none", nil, Summary{N: 0, Mean: nan}},
		{"one", []float64{12.3}, Summary{N: 1, Mean: 12.3, HalfWidth: inf}},
		{"one to ten", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
			Summary{N: 10, Mean: 5.5, StdDev: 3.0276503540974917, HalfWidth: 2.165850589667973}},
		{"two", []float64{1, 3}, Summary{N: 2, Mean: 2, StdDev: math.Sqrt2, HalfWidth: 12.706204736174705}},
		{"constant", []float64{4, 4, 4}, Summary{N: 3, Mean: 4}},
		// Two passes keep a large offset from swamping the spread.
		{"offset", []float64{1e9 + 1, 1e9 + 2, 1e9 + 3}, Summary{N: 3, Mean: 1e9 + 2, StdDev: 1, HalfWidth: 2.484138}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Summarize(c.xs)
			if got.N != c.want.N || !near(got.Mean, c.want.Mean) || !near(got.StdDev, c.want.StdDev) ||
				!near(got.HalfWidth, c.want.HalfWidth) {
				t.Errorf("Summarize(%v) = %#v, want %#v", c.xs, got, c.want)
			}
		})
	}
}

// near says whether got is want to six significant digits, NaN and the
// infinities matching themselves.
func near(got, want float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= 1e-6*max(math.Abs(want), 1e-300)
}

func TestSummaryString(t *testing.T) {
	for _, c := range []struct {
		s    Summary
		want string
	}{
		{Summary{N: 10, Mean: 12.3456, HalfWidth: 0.4123}, "12.3 ± 0.4"},
		{Summary{N: 10, Mean: 12.3456, HalfWidth: 0.15}, "12.35 ± 0.15"},
		{Summary{N: 10, Mean: 5.5, HalfWidth: 2.165850589667973}, "5.5 ± 2.2"},
		{Summary{N: 10, Mean: 5.5, HalfWidth: 3.2}, "6 ± 3"},
		{Summary{N: 10, Mean: 5.4, HalfWidth: 3.2}, "5 ± 3"},
		{Summary{N: 10, Mean: 0.0123456, HalfWidth: 0.00071}, "0.0123 ± 0.0007"},
		{Summary{N: 10, Mean: 12345.6, HalfWidth: 1234}, "12300 ± 1200"},
		{Summary{N: 10, Mean: 12345.6, HalfWidth: 45}, "12350 ± 50"},
		{Summary{N: 10, Mean: -7.25, HalfWidth: 0.96}, "-7.2 ± 1.0"},
		{Summary{N: 3, Mean: 4}, "4 ± 0"},
		{Summary{N: 1, Mean: 12.3, HalfWidth: math.Inf(1)}, "12.3"},
		{Summary{N: 1, Mean: 12345.678, HalfWidth: math.Inf(1)}, "12346"},
		{Summary{N: 1, Mean: 0.00123456, HalfWidth: math.Inf(1)}, "0.00123"},
		{Summary{N: 1, Mean: 4, HalfWidth: math.Inf(1)}, "4"},
		{Summary{N: 1, Mean: 0.0012, HalfWidth: math.Inf(1)}, "0.0012"},
		{Summary{N: 1, Mean: 0, HalfWidth: math.Inf(1)}, "0"},
		{Summary{N: 0, Mean: math.NaN()}, "n/a"},
		{Summary{N: 2, Mean: 1, HalfWidth: math.Inf(1)}, "1 ± +Inf"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if got := c.s.String(); got != c.want {
				t.Errorf("%#v.String() = %q, want %q", c.s, got, c.want)
			}
		})
	}
}

func TestSummaryFormat(t *testing.T) {
	for _, c := range []struct {
		s        Summary
		decimals int
		want     string
	}{
		{Summary{N: 10, Mean: 12.3, HalfWidth: 0.4}, 2, "12.30 ± 0.40"},
		{Summary{N: 10, Mean: 12.3, HalfWidth: 0.4}, 0, "12 ± 0"},
		{Summary{N: 10, Mean: 12.3, HalfWidth: 0.4}, -3, "12 ± 0"},
		{Summary{N: 1, Mean: 12.3, HalfWidth: math.Inf(1)}, 1, "12.3"},
		{Summary{N: 0, Mean: math.NaN()}, 1, "n/a"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if got := c.s.Format(c.decimals); got != c.want {
				t.Errorf("%#v.Format(%d) = %q, want %q", c.s, c.decimals, got, c.want)
			}
		})
	}
}

func TestMean(t *testing.T) {
	if got := Mean([]float64{1, 2, 3, 4}); got != 2.5 {
		t.Errorf("Mean = %g, want 2.5", got)
	}
	if got := Mean(nil); !math.IsNaN(got) {
		t.Errorf("Mean(nil) = %g, want NaN", got)
	}
}

func TestQuantile(t *testing.T) {
	tens := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		name   string
		sorted []float64
		q      float64
		want   float64
	}{
		{"median of ten", tens, 0.5, 5},
		{"p90 of ten", tens, 0.9, 9},
		{"p91 of ten", tens, 0.91, 10},
		{"p99 of ten", tens, 0.99, 10},
		{"least", tens, 0, 1},
		{"below zero", tens, -1, 1},
		{"above one", tens, 2, 10},
		{"one value", []float64{7}, 0.5, 7},
		{"median of two", []float64{1, 2}, 0.5, 1},
		{"empty", nil, 0.5, math.NaN()},
		{"NaN q", tens, math.NaN(), math.NaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Quantile(c.sorted, c.q)
			if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
				t.Errorf("Quantile(%v, %g) = %g, want %g", c.sorted, c.q, got, c.want)
			}
		})
	}
}
