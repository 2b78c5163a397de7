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
		// A level that went from nothing to 80 req/s, sampled every five
		// seconds for a minute and ten: a least-squares slope is 0.74 req/s
		// per s and plans for 214 req/s.
		{"a step a minute ago: no trend", stepAt(at, 0, 80, 10, 70), 0, 80},
		{"a step and its level for most of the window: no trend", stepAt(at, 20, 80, 20, 120), 0, 80},
		{"a rise with an outlier", []Sample{at(0, 100), at(20, 120), at(40, 140), at(60, 160), at(80, 180), at(100, 900), at(120, 220)},
			1, 900 + 180},
		{"a rise of more samples than are fitted", rampOf(0.5), 0.5, 60 + 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := predict(tc.samples, w, w, 3*time.Minute, 0)
			if math.Abs(f.trend-tc.trend) > 1e-9 || math.Abs(f.rate-tc.rate) > 1e-6 {
				t.Errorf("trend %.3f rate %.1f, want %.3f and %.1f", f.trend, f.rate, tc.trend, tc.rate)
			}
		})
	}
}

// stepAt samples every five seconds from 0 to end: rate from before
// until second step, rate to from then on.
func stepAt(at func(int, float64) Sample, from, to float64, step, end int) []Sample {
	var out []Sample
	for sec := 0; sec <= end; sec += 5 {
		rate := from
		if sec >= step {
			rate = to
		}
		out = append(out, at(sec, rate))
	}
	return out
}

// rampOf samples a rate rising by slope req/s per s from 0, five times a
// second for two minutes: 601 samples, more than maxTrendSamples.
func rampOf(slope float64) []Sample {
	out := make([]Sample, 601)
	for i := range out {
		out[i] = Sample{At: t0.Add(time.Duration(i) * 200 * time.Millisecond), RequestsPerSec: slope * float64(i) / 5}
	}
	return out
}
