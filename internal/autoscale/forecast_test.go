package autoscale

import (
	"math"
	"testing"
	"time"
)

func TestPredict(t *testing.T) {
	at := func(sec int, rate float64) Sample {
		return Sample{At: t0.Add(time.Duration(sec) * time.Second), RequestsPerSec: rate}
	}
	w := 2 * time.Minute
	for _, tc := range []struct {
		name        string
		samples     []Sample
		trend, rate float64
	}{
		{"one sample: its rate", []Sample{at(0, 300)}, 0, 300},
		// A step seen over ten seconds is no trend: planning from its
		// slope (40 req/s per s) would ask for 7,800 req/s.
		{"a step's edge", []Sample{at(0, 200), at(5, 400), at(10, 600)}, 0, 600},
		{"a rise over a minute", []Sample{at(0, 300), at(30, 330), at(60, 360)}, 1, 360 + 180},
		{"a rise over the whole window, older samples ignored",
			[]Sample{at(0, 5000), at(60, 100), at(120, 160), at(180, 220)}, 1, 220 + 180},
		{"a fall: no trend, the peak of the window", []Sample{at(0, 400), at(60, 300), at(120, 200)}, 0, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := predict(tc.samples, w, w, 3*time.Minute)
			if math.Abs(f.trend-tc.trend) > 1e-9 || math.Abs(f.rate-tc.rate) > 1e-6 {
				t.Errorf("trend %.3f rate %.1f, want %.3f and %.1f", f.trend, f.rate, tc.trend, tc.rate)
			}
		})
	}
}
