package autoscale

import (
	"math"
	"slices"
	"time"
)

// forecast is the arrival rate to plan for and how it was made.
type forecast struct {
	peak  float64 // highest rate in the peak window, requests/s
	trend float64 // rising slope over the trend window, requests/s per second; never negative
	rate  float64 // peak + trend × lead time, at most peak × (1 + the trend share)
	// capped is true when the bound on extrapolation cut the trend.
	capped bool
}

// maxTrendSamples bounds the samples the slope is fitted on (the server
// keeps one a second at most, 121 over the default window); more are
// thinned evenly, so a decision costs at most maxTrendSamples² / 2 slopes.
const maxTrendSamples = 256

// predict forecasts the arrival rate lead after the newest sample of
// samples (sorted by time, not empty): the peak of the samples within
// peakWindow of the newest plus the slope of those within trendWindow, when
// it rises, times lead. Planning from the peak rather than the mean covers
// the bursts between samples; the trend covers the rise while a new replica
// starts.
//
// The slope is the Theil-Sen estimate, the median of the slopes between
// every two samples, so that a step is not taken for a trend: the step
// itself is in the peak. A least-squares slope reads a level that went from
// nothing to 80 req/s a minute ago as a rise of about 1 req/s per s and,
// over a lead of three minutes, planned for 250 req/s; the median of the
// pairwise slopes is 0 there (only pairs across the step rise, fewer than
// half of them unless the step is in the window's middle), and on a steady
// rise it is the rise. For the same reason the slope counts only when its
// samples span at least half of trendWindow: over a few seconds even the
// median slope is the edge of a step (an endpoint whose load went from
// nothing to 600 req/s in ten seconds, sampled every five, rose 40 req/s
// per s, which over three minutes planned for 7,800 req/s).
//
// The extrapolation is bounded: the trend adds at most share × peak
// (Params.MaxTrendShare), so the forecast never exceeds (1 + share) × the
// peak actually measured; a share of 0 or less means no bound.
func predict(samples []Sample, peakWindow, trendWindow, lead time.Duration, share float64) forecast {
	newest := samples[len(samples)-1].At
	var f forecast
	var window []Sample
	for _, s := range samples {
		age := newest.Sub(s.At)
		if age <= peakWindow {
			f.peak = max(f.peak, s.RequestsPerSec)
		}
		if age <= trendWindow {
			window = append(window, s)
		}
	}
	if len(window) >= 2 && 2*newest.Sub(window[0].At) >= trendWindow {
		f.trend = max(0, medianSlope(window))
	}
	if math.IsNaN(f.trend) || math.IsInf(f.trend, 0) {
		f.trend = 0
	}
	add := f.trend * lead.Seconds()
	if share > 0 && add > share*f.peak {
		add, f.capped = share*f.peak, true
	}
	f.rate = f.peak + add
	if math.IsInf(f.rate, 0) || math.IsNaN(f.rate) {
		f.rate = f.peak
	}
	return f
}

// medianSlope is the median of the slopes, in requests/s per second,
// between every two of samples (sorted by time) taken at different times;
// 0 when there are none. Over more than maxTrendSamples it uses that many,
// evenly spread and the newest among them.
func medianSlope(samples []Sample) float64 {
	if n := len(samples); n > maxTrendSamples {
		thin := make([]Sample, maxTrendSamples)
		for i := range thin {
			thin[i] = samples[n-1-(maxTrendSamples-1-i)*(n-1)/(maxTrendSamples-1)]
		}
		samples = thin
	}
	slopes := make([]float64, 0, len(samples)*(len(samples)-1)/2)
	for i, a := range samples {
		for _, b := range samples[i+1:] {
			if dt := b.At.Sub(a.At).Seconds(); dt > 0 {
				slopes = append(slopes, (b.RequestsPerSec-a.RequestsPerSec)/dt)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	slices.Sort(slopes)
	m := len(slopes) / 2
	if len(slopes)%2 == 1 {
		return slopes[m]
	}
	return (slopes[m-1] + slopes[m]) / 2
}
