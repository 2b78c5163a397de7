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
func predict(samples []Sample, peakWindow, trendWindow, lead time.Duration) forecast {
	newest := samples[len(samples)-1].At
	var f forecast
	var n, st, sy, stt, sty float64
	for _, s := range samples {
		age := newest.Sub(s.At)
		if age <= peakWindow {
			f.peak = max(f.peak, s.RequestsPerSec)
		}
		if age <= trendWindow {
			t := -age.Seconds()
			n++
			st += t
			sy += s.RequestsPerSec
			stt += t * t
			sty += t * s.RequestsPerSec
		}
	}
	if d := n*stt - st*st; n >= 2 && d > 0 {
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
