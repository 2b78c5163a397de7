package autoscale

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Sample is the endpoint measured over one report interval, all replicas
// together.
type Sample struct {
	At             time.Time // the end of the interval
	RequestsPerSec float64   // requests that arrived, per second: the offered load, not the completions
	P95Ms          float64   // p95 latency of the requests of the interval, in ms; 0 when there were none
	Utilisation    float64   // busy share of the reporting replicas' capacity, 0 to 1
	Replicas       int       // replicas that reported in the interval
	// P50Ms is the median latency of the interval in ms, 0 when not
	// measured; the lowest in the window stands for the service time of an
	// endpoint that does not state one (queue.go).
	P50Ms float64
}

// Replica is one replica of the endpoint as the caller knows it.
type Replica struct {
	GPUModel string
	Ready    bool // serving; a replica not ready is placed or starting, its capacity coming
}

// Event says which way a Decision moves the replica count.
type Event int

const (
	Hold     Event = iota // Desired is the current count
	ScaleOut              // Desired is above it
	ScaleIn               // Desired is below it
)

func (e Event) String() string {
	switch e {
	case Hold:
		return "Hold"
	case ScaleOut:
		return "ScaleOut"
	case ScaleIn:
		return "ScaleIn"
	}
	return fmt.Sprintf("Event(%d)", int(e))
}

// Decision is what Decide wants.
type Decision struct {
	Desired int
	Event   Event
	// Reason is a sentence with the numbers behind the decision, for a
	// person and the endpoint's event log.
	Reason string
	// Forecast is the arrival rate planned for, requests/s; 0 without
	// samples.
	Forecast float64
	// PredictedP95Ms is the model's p95 for Desired replicas at Forecast,
	// in ms; +Inf when they would be overloaded, 0 without samples.
	PredictedP95Ms float64
}

// State is what Decide remembers between calls; the zero value is the
// start. The caller stores it and passes it back unchanged.
type State struct {
	// LowSince is when the count that holds the SLO with the scale-in
	// margin first fell below the replica count, zero when it is not below.
	LowSince time.Time
	// LowMax is the largest such count since LowSince: a scale-in never
	// goes below it.
	LowMax int
	// LastScaleIn is the time of the last scale-in.
	LastScaleIn time.Time
	// Boost is the factor the autoscaler planned the forecast rate up by
	// right after LastMiss, the newest sample whose measured p95 missed
	// the SLO (Params.MissBoost); 0 or 1 is none. Its excess over 1 decays
	// from LastMiss on, so the State changes only when a minute misses.
	Boost    float64
	LastMiss time.Time
	// Unsettled is the last time a decision saw a replica not ready yet:
	// until Params.Settle after it, a sample over the SLO neither adds
	// replicas (step 5) nor teaches (step 0), as it may be the backlog
	// queued while the replicas were too few.
	Unsettled time.Time
}

// Params tune the autoscaler; DefaultParams suits GPU replicas that take a
// few minutes to place, start and load their model.
type Params struct {
	// LeadTime is from asking for a replica to its serving: scheduling,
	// start, model load. The forecast looks this far ahead.
	LeadTime time.Duration
	// PeakWindow is how far back the forecast takes the peak rate.
	PeakWindow time.Duration
	// TrendWindow is how far back the forecast fits the trend.
	TrendWindow time.Duration
	// Headroom: plan for a predicted p95 of at most SLO × Headroom, (0, 1].
	Headroom float64
	// ScaleInMargin: a smaller count must hold the SLO with this much more
	// load than forecast (0.15 is 15 %): the hysteresis between scaling in
	// and out.
	ScaleInMargin float64
	// Stabilisation is how long the smaller count must have sufficed before
	// the first scale-in step.
	Stabilisation time.Duration
	// ScaleInStep is the share of the replicas one scale-in removes, at
	// least one; ScaleInInterval the least time between two.
	ScaleInStep     float64
	ScaleInInterval time.Duration
	// BreachStep is the share of the replicas (at least one) added when the
	// observed p95 is above the SLO although the model says it is not.
	BreachStep float64
	// StaleAfter: a newest sample older than this holds the count.
	StaleAfter time.Duration
	// MissBoost: each sample whose measured p95 missed the SLO raises the
	// rate planned for by this share (0.1 is 10 %), up to MissBoostMax
	// times the forecast; the boost falls back by the same factor every
	// MissEvery without a miss. The model (the profile and M/M/1) plans for
	// the p95 of a typical minute; misses it does not foresee, in minutes
	// of bursty traffic or of few requests (a p95 over 60 requests is
	// noisy), teach it the headroom the endpoint's traffic needs. The
	// boost is an integral controller on the miss rate: it rises while the
	// endpoint misses more than one sample in MissEvery and falls while it
	// misses fewer, so it settles where misses come that often (with a
	// sample a minute, the default 2,000 minutes is 99.95 % of minutes,
	// half the misses a 99.9 % objective allows). A halving every 24 h
	// instead settled where the decay of a large boost matched the raises,
	// at 3.5 misses a day (99.75 %), whatever the objective.
	// 0 turns learning off.
	MissBoost    float64
	MissBoostMax float64
	MissEvery    time.Duration
	// MaxTrendShare bounds the extrapolation: the trend adds at most this
	// share of the peak (1: the forecast is at most twice the peak
	// measured in the peak window, whatever the slope). A ramp that the median slope reads as
	// 18 req/s per s over a lead of three minutes added 3,300 req/s to a
	// peak of 1,100 and scaled the endpoint to four times what the load
	// needed; bounded, a rise that goes on is still met one lead time at a
	// time, as each new peak raises the bound.
	MaxTrendShare float64
	// Settle is how long every replica must have been ready before a
	// sample over the SLO counts as the model's miss (steps 0 and 5): the
	// requests that queued while the endpoint had too few replicas are
	// served late after the new ones come, and that backlog, measured,
	// scaled a converged endpoint from 4 replicas to 8 and taught it to
	// plan 1.8 times the load.
	Settle time.Duration
}

// DefaultParams are the parameters Decide uses.
var DefaultParams = Params{
	LeadTime:        3 * time.Minute,
	PeakWindow:      2 * time.Minute,
	TrendWindow:     2 * time.Minute,
	Headroom:        0.8,
	ScaleInMargin:   0.15,
	Stabilisation:   10 * time.Minute,
	ScaleInStep:     0.1,
	ScaleInInterval: time.Minute,
	BreachStep:      0.2,
	StaleAfter:      time.Minute,
	MissBoost:       0.2,
	MissBoostMax:    3,
	MissEvery:       2000 * time.Minute,
	MaxTrendShare:   1,
	Settle:          30 * time.Second,
}

// Decide is DefaultParams.Decide.
func Decide(spec model.EndpointSpec, window []Sample, replicas []Replica, now time.Time, last State) (Decision, State) {
	return DefaultParams.Decide(spec, window, replicas, now, last)
}

// Decide returns the replica count spec's endpoint should have now, given
// the samples of window (any order), the replicas that exist (ready or
// coming) and the State of the previous call, and the State for the next
// one. The steps are those of the package documentation.
func (p Params) Decide(spec model.EndpointSpec, window []Sample, replicas []Replica, now time.Time, last State) (Decision, State) {
	ready := 0
	for _, r := range replicas {
		if r.Ready {
			ready++
		}
	}
	if ready < len(replicas) || last.Unsettled.After(now) {
		last.Unsettled = now
	}
	settled := last.Unsettled.IsZero() || now.Sub(last.Unsettled) >= p.Settle
	boost, next := p.learn(spec, window, replicas, ready, now, last, settled)
	d, st := p.decide(spec, window, replicas, now, next, boost, settled)
	st.Boost, st.LastMiss, st.Unsettled = next.Boost, next.LastMiss, last.Unsettled
	return d, st
}

// learn is step 0: the factor to plan the forecast up by now, and last with
// the boost's record updated (State.Boost, State.LastMiss). The newest
// sample, when it missed the SLO with every ready replica reporting (as
// step 5 asks) and is newer than the last miss counted, raises the boost
// by Params.MissBoost; the boost falls back by that factor every
// Params.MissEvery since the last miss, down to 1.
//
// A miss counts only when the model says the ready replicas sufficed for
// the load measured: a miss while the endpoint had too few replicas (a
// ramp, replicas still starting) is explained by the count, not by bursts,
// and learning from it planned a steady load up to twice over for a day.
func (p Params) learn(spec model.EndpointSpec, window []Sample, replicas []Replica, ready int, now time.Time, last State, settled bool) (float64, State) {
	if p.MissBoost <= 0 {
		last.Boost, last.LastMiss = 0, time.Time{}
		return 1, last
	}
	if last.LastMiss.After(now) {
		last.LastMiss = now // a clock that went back
	}
	if !(last.Boost > 1) { // none, or a value no Decide returns (below 1, NaN)
		last.Boost = 0
	}
	last.Boost = min(last.Boost, max(p.MissBoostMax, 1))
	boost := func(at time.Time) float64 {
		b := max(last.Boost, 1)
		if p.MissEvery > 0 && !last.LastMiss.IsZero() {
			steps := float64(at.Sub(last.LastMiss)) / float64(p.MissEvery)
			b = max(1, b*math.Pow(1+p.MissBoost, -steps))
		}
		return b
	}
	samples := usableSamples(window, now)
	sloMs := float64(spec.SLO.P95) / float64(time.Millisecond)
	if n := len(samples); n > 0 {
		s := samples[n-1]
		if settled && s.At.After(last.LastMiss) && sloMs > 0 && s.P95Ms > sloMs && s.RequestsPerSec > 0 && s.Replicas >= ready &&
			p.explained(spec, samples, replicas, s.RequestsPerSec) {
			last.Boost = min(boost(s.At)*(1+p.MissBoost), max(p.MissBoostMax, 1))
			last.LastMiss = s.At
		}
	}
	return boost(now), last
}

// explained reports whether the model predicts that the ready replicas hold
// the SLO at rate: then a miss at that rate is one the model did not
// foresee.
func (p Params) explained(spec model.EndpointSpec, samples []Sample, replicas []Replica, rate float64) bool {
	var serving []Replica
	for _, r := range replicas {
		if r.Ready {
			serving = append(serving, r)
		}
	}
	fl, ok := newFleet(spec.Throughput, spec.Resources.GPUModels, serving, spec.SLO.P95.Seconds(), serviceTime(spec, samples), 1)
	return ok && len(serving) > 0 && fl.p95(len(serving), rate) <= spec.SLO.P95.Seconds()
}

// serviceTime is D of the model in seconds (queue.go): the spec's, or the
// lowest median latency measured in samples, or 0.
func serviceTime(spec model.EndpointSpec, samples []Sample) float64 {
	if spec.ServiceTime > 0 {
		return spec.ServiceTime.Seconds()
	}
	d := math.Inf(1)
	for _, s := range samples {
		if s.P50Ms > 0 && s.RequestsPerSec > 0 {
			d = min(d, s.P50Ms/1000)
		}
	}
	if math.IsInf(d, 1) {
		return 0
	}
	return d
}

// decide is Decide planning for boost times the forecast rate.
func (p Params) decide(spec model.EndpointSpec, window []Sample, replicas []Replica, now time.Time, last State, boost float64, settled bool) (Decision, State) {
	// 1. Bounds.
	current := len(replicas)
	lo := max(spec.MinReplicas, 0)
	hi := max(spec.MaxReplicas, lo)
	ready := 0
	for _, r := range replicas {
		if r.Ready {
			ready++
		}
	}
	coming := current - ready
	// A State from a clock that went back counts from now.
	if last.LowSince.After(now) {
		last.LowSince = now
	}
	if last.LastScaleIn.After(now) {
		last.LastScaleIn = now
	}

	// 2. Samples.
	samples := usableSamples(window, now)
	if len(samples) == 0 {
		return p.hold(current, lo, hi, fmt.Sprintf("no metric samples in the window: holding %s", count(current, "replica"))), State{LastScaleIn: last.LastScaleIn}
	}
	newest := samples[len(samples)-1]
	if age := now.Sub(newest.At); age > p.StaleAfter {
		return p.hold(current, lo, hi, fmt.Sprintf("the newest metric sample is %s old (more than %s): holding %s",
			age.Round(time.Second), p.StaleAfter, count(current, "replica"))), State{LastScaleIn: last.LastScaleIn}
	}
	slo := spec.SLO.P95.Seconds()
	sloMs := slo * 1000
	fl, ok := newFleet(spec.Throughput, spec.Resources.GPUModels, replicas, slo, serviceTime(spec, samples), p.Headroom)
	if !ok {
		return p.hold(current, lo, hi, fmt.Sprintf("no usable throughput profile or SLO: holding %s", count(current, "replica"))), State{LastScaleIn: last.LastScaleIn}
	}

	// 3. Forecast.
	fc := predict(samples, p.PeakWindow, p.TrendWindow, p.LeadTime, p.MaxTrendShare)
	fc.rate *= boost
	d := Decision{Forecast: fc.rate}
	targetText := fmt.Sprintf("%s (SLO %s × %g)", ms(sloMs*p.Headroom), ms(sloMs), p.Headroom)
	if fl.sloTarget {
		targetText = fmt.Sprintf("%s (the SLO: a replica cannot reach %g of it)", ms(sloMs), p.Headroom)
	}
	forecastText := fmt.Sprintf("forecast %.0f req/s (peak %.0f in the last %s + trend %.2f req/s per s over the %s lead time)",
		fc.rate, fc.peak, p.PeakWindow, fc.trend, p.LeadTime)
	if fc.capped {
		forecastText = fmt.Sprintf("forecast %.0f req/s (peak %.0f in the last %s + trend %.2f req/s per s over the %s lead time, bounded to %g%% of the peak)",
			fc.rate, fc.peak, p.PeakWindow, fc.trend, p.LeadTime, p.MaxTrendShare*100)
	}
	if boost > 1.005 {
		forecastText = fmt.Sprintf("forecast %.0f req/s (peak %.0f in the last %s + trend %.2f req/s per s over the %s lead time, × %.2f learnt from minutes that missed the SLO, the last at %s)",
			fc.rate, fc.peak, p.PeakWindow, fc.trend, p.LeadTime, boost, last.LastMiss.UTC().Format(time.RFC3339))
	}
	have := count(current, "replica")
	if coming > 0 {
		have = fmt.Sprintf("%s (%d not ready)", count(current, "replica"), coming)
	}

	// 4. Model.
	out := fl.need(fc.rate)
	in := max(out, fl.need(fc.rate*(1+max(p.ScaleInMargin, 0))), lo)
	switch {
	case current > hi:
		d.Desired = hi
		d.Reason = fmt.Sprintf("%d replicas are more than max_replicas %d: scaling in to it (%s needs %d)", current, hi, forecastText, out)
		return p.finish(d, fl, current, lo, hi), State{LastScaleIn: now}
	case current < lo && out <= lo:
		d.Desired = lo
		d.Reason = fmt.Sprintf("%d replicas are fewer than min_replicas %d: scaling out to it (%s needs %d)", current, lo, forecastText, out)
		return p.finish(d, fl, current, lo, hi), State{LastScaleIn: last.LastScaleIn}
	}

	// 5. Observed.
	breach := newest.P95Ms > sloMs && newest.RequestsPerSec > 0 && newest.Replicas >= ready && (settled || coming > 0)
	if breach && coming == 0 {
		step := max(1, int(math.Ceil(p.BreachStep*float64(current))))
		if current+step > out {
			d.Desired = current + step
			d.Reason = fmt.Sprintf("observed p95 %s is above the SLO %s at %.0f req/s with all %d replicas ready (utilisation %.2f), although the model predicts %s: adding %d",
				ms(newest.P95Ms), ms(sloMs), newest.RequestsPerSec, ready, newest.Utilisation, ms(fl.p95(current, newest.RequestsPerSec)*1000), step)
			return p.finish(d, fl, current, lo, hi), State{LastScaleIn: last.LastScaleIn}
		}
	}
	if out > current {
		d.Desired = out
		d.Reason = fmt.Sprintf("%s needs %s for a predicted p95 of %s ≤ %s; %s would give %s",
			forecastText, count(out, "replica"), ms(fl.p95(out, fc.rate)*1000), targetText, have, ms(fl.p95(current, fc.rate)*1000))
		return p.finish(d, fl, current, lo, hi), State{LastScaleIn: last.LastScaleIn}
	}
	if breach {
		d.Desired = current
		d.Reason = fmt.Sprintf("observed p95 %s is above the SLO %s at %.0f req/s: waiting for %s not ready yet",
			ms(newest.P95Ms), ms(sloMs), newest.RequestsPerSec, count(coming, "replica"))
		return p.finish(d, fl, current, lo, hi), State{LastScaleIn: last.LastScaleIn}
	}

	// 6. Scale in slowly.
	next := State{LastScaleIn: last.LastScaleIn}
	if in >= current {
		d.Desired = current
		d.Reason = fmt.Sprintf("%s needs %s (%d with a %g%% margin for scaling in), predicted p95 %s with %s: holding",
			forecastText, count(out, "replica"), in, p.ScaleInMargin*100, ms(fl.p95(current, fc.rate)*1000), have)
		return p.finish(d, fl, current, lo, hi), next
	}
	next.LowSince, next.LowMax = last.LowSince, max(last.LowMax, in)
	if last.LowSince.IsZero() || last.LowMax >= current {
		next.LowSince, next.LowMax = now, in
	}
	lowFor := now.Sub(next.LowSince)
	sinceIn := now.Sub(last.LastScaleIn)
	if lowFor < p.Stabilisation || (!last.LastScaleIn.IsZero() && sinceIn < p.ScaleInInterval) {
		d.Desired = current
		d.Reason = fmt.Sprintf("%s would need at most %s with a %g%% margin; fewer than %s for %s of the %s stabilisation window: holding",
			forecastText, count(next.LowMax, "replica"), p.ScaleInMargin*100, have, lowFor.Round(time.Second), p.Stabilisation)
		if lowFor >= p.Stabilisation {
			d.Reason = fmt.Sprintf("%s would need at most %s with a %g%% margin; the last scale-in was %s ago (at most one per %s): holding %s",
				forecastText, count(next.LowMax, "replica"), p.ScaleInMargin*100, sinceIn.Round(time.Second), p.ScaleInInterval, have)
		}
		return p.finish(d, fl, current, lo, hi), next
	}
	step := max(1, int(p.ScaleInStep*float64(current)))
	d.Desired = max(next.LowMax, current-step)
	d.Reason = fmt.Sprintf("%s has needed at most %s with a %g%% margin for %s: scaling in from %d to %d (at most %g%% of the replicas, at least 1, per step), predicted p95 %s",
		forecastText, count(next.LowMax, "replica"), p.ScaleInMargin*100, lowFor.Round(time.Second), current, d.Desired, p.ScaleInStep*100, ms(fl.p95(d.Desired, fc.rate)*1000))
	d = p.finish(d, fl, current, lo, hi)
	if d.Event == ScaleIn {
		next.LastScaleIn = now
	}
	return d, next
}

// count is n things: "1 replica", "3 replicas".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// usableSamples returns the samples of window taken by now with a finite,
// non-negative rate, sorted by time.
func usableSamples(window []Sample, now time.Time) []Sample {
	out := make([]Sample, 0, len(window))
	for _, s := range window {
		if s.At.After(now) || !(s.RequestsPerSec >= 0) || math.IsInf(s.RequestsPerSec, 0) {
			continue
		}
		if math.IsNaN(s.P95Ms) {
			s.P95Ms = 0
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b Sample) int { return a.At.Compare(b.At) })
	return out
}

// hold keeps the current count, clamped into the bounds.
func (p Params) hold(current, lo, hi int, reason string) Decision {
	d := Decision{Desired: current, Reason: reason}
	return p.finish(d, fleet{}, current, lo, hi)
}

// finish clamps d.Desired into [lo, hi], saying so in the reason, and sets
// the event and the prediction.
func (p Params) finish(d Decision, fl fleet, current, lo, hi int) Decision {
	switch {
	case d.Desired > hi:
		d.Reason += fmt.Sprintf("; capped at max_replicas %d, so the SLO is at risk", hi)
		d.Desired = hi
	case d.Desired < lo:
		d.Reason += fmt.Sprintf("; raised to min_replicas %d", lo)
		d.Desired = lo
	}
	switch {
	case d.Desired > current:
		d.Event = ScaleOut
	case d.Desired < current:
		d.Event = ScaleIn
	default:
		d.Event = Hold
	}
	if fl.rates != nil || fl.next > 0 {
		d.PredictedP95Ms = fl.p95(d.Desired, d.Forecast) * 1000
	}
	return d
}

// ms writes a latency in milliseconds, "∞" for an overload.
func ms(v float64) string {
	if math.IsInf(v, 1) {
		return "∞ (overloaded)"
	}
	if v < 10 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}
