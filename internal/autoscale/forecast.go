package autoscale

import (
	"math"
	"time"
)

// forecast is the arrival rate to plan for and how it was made.
type forecast struct {
	peak  float64 // highest rate in the peak window, requests/s
	trend float64 // rising slope over the trend window, requests/s per second; never negative
	rate  float64 // peak + trend × lead time
}

// predict forecasts the arrival rate lead after the newest sample of
// samples (sorted by time, not empty): the peak of the samples within
// peakWindow of the newest plus the least-squares slope of those within
// trendWindow, when it rises, times lead. Planning from the peak rather
// than the mean covers the bursts between samples; the trend covers the
// rise while a new replica starts.
//
// The slope counts only when its samples span at least half of
// trendWindow. Over a few seconds of samples a slope is the edge of a
// step, not a trend: an endpoint whose load went from nothing to 600 req/s
// in ten seconds, sampled every five, had a slope of 42 req/s per s, which
// over a lead of three minutes planned for 8,100 req/s and asked for every
// replica up to max_replicas. The step itself is in the peak.
func predict(samples []Sample, peakWindow, trendWindow, lead time.Duration) forecast {
	newest := samples[len(samples)-1].At
	var f forecast
	var n, st, sy, stt, sty float64
	var span time.Duration
	for _, s := range samples {
		age := newest.Sub(s.At)
		if age <= peakWindow {
			f.peak = max(f.peak, s.RequestsPerSec)
		}
		if age <= trendWindow {
			span = max(span, age)
			t := -age.Seconds()
			n++
			st += t
			sy += s.RequestsPerSec
			stt += t * t
			sty += t * s.RequestsPerSec
		}
	}
	if d := n*stt - st*st; n >= 2 && d > 0 && 2*span >= trendWindow {
		f.trend = max(0, (n*sty-st*sy)/d)
	}
	if math.IsNaN(f.trend) || math.IsInf(f.trend, 0) {
		f.trend = 0
	}
	f.rate = f.peak + f.trend*lead.Seconds()
	if math.IsInf(f.rate, 0) || math.IsNaN(f.rate) {
		f.rate = f.peak
	}
	return f
}
