package autoscale

import (
	"math"
	"slices"
)

// The queueing model.
//
// Each replica is an M/M/1 queue: Poisson arrivals, exponential service at
// rate μ, first come first served. Its sojourn time (queueing plus
// service) is then exponential with rate μ−λ, so its p95 is ln(20)/(μ−λ).
// The throughput profile says replica of GPU model g sustains T_g
// requests/s with p95 = SLO; the M/M/1 rate that matches that point is
//
//	μ_g = T_g + ln(20)/SLO.
//
// The load balancer is assumed to route so that every replica has the same
// latency (least outstanding requests does about that): replica i takes
// λ_i = μ_i − θ with θ = (Σμ_i − λ)/n, so that n replicas at arrival rate λ
// have
//
//	p95(n, λ) = ln(20) · n / (Σμ_i − λ),
//
// which for n alike replicas is one replica's M/M/1 at λ/n. Asking for
// p95 ≤ SLO × headroom is asking for Σκ_i ≥ λ, where κ_i = μ_i − ln(20) /
// (SLO × headroom) is what a replica adds at that target: T_g at headroom
// 1, a little less below it.
//
// Why not M/M/c (Erlang C) over all replicas: it assumes one shared queue
// from which any idle replica takes the next request. An HTTP load balancer
// hands a request to a replica when it arrives, and the replica queues it
// (a GPU server batches what it holds); there is no pooling across
// replicas, and M/M/c would promise capacity (a third more for ten T4
// replicas rated 120 requests/s at 150 ms) that the endpoint does not have. Independent queues are the
// honest and the conservative choice, and they need only the profile.
//
// What the model does not know: the real service time distribution (a
// replica that batches is closer to M/D/k), so the p95 it predicts far
// below the profile's load is too low; it is exact at the profile's point,
// which is where the decisions are made. The observed-p95 rule (step 5)
// corrects a profile that is wrong.
const ln20 = 2.995732273553991 // -ln(0.05)

// fleet is the capacity of an endpoint's replicas under the model.
type fleet struct {
	rates []float64 // μ of each replica, ascending
	next  float64   // μ assumed for a replica asked for now
	l     float64   // ln(20)/(target p95 in seconds)
	// sloTarget is true when the target is the SLO itself: a replica of
	// the next model cannot reach SLO × headroom even idle.
	sloTarget bool
}

// newFleet builds the model of the replicas for an SLO of slo seconds.
// A replica's GPU model without a profile entry counts as the slowest
// entry. A replica asked for now is assumed to be of the slowest model
// among the replicas (else among the allowed models): whichever model the
// scheduler picks, the SLO holds. ok is false when the profile has no
// usable entry.
func newFleet(profile map[string]float64, allowed []string, replicas []Replica, slo, headroom float64) (f fleet, ok bool) {
	slowest := math.Inf(1)
	for _, t := range profile {
		if usable(t) {
			slowest = min(slowest, t)
		}
	}
	if math.IsInf(slowest, 1) || !(slo > 0) || math.IsInf(slo, 0) {
		return fleet{}, false
	}
	rate := func(model string) float64 {
		t, found := profile[model]
		if !found || !usable(t) {
			t = slowest
		}
		return t + ln20/slo
	}
	f.rates = make([]float64, 0, len(replicas))
	for _, r := range replicas {
		f.rates = append(f.rates, rate(r.GPUModel))
	}
	slices.Sort(f.rates)
	switch {
	case len(f.rates) > 0:
		f.next = f.rates[0]
	default:
		f.next = math.Inf(1)
		for _, m := range allowed {
			if _, found := profile[m]; found {
				f.next = min(f.next, rate(m))
			}
		}
		if math.IsInf(f.next, 1) {
			f.next = slowest + ln20/slo
		}
	}
	f.l = ln20 / (slo * headroom)
	if !(headroom > 0 && headroom <= 1) || f.next-f.l <= 0 {
		f.l, f.sloTarget = ln20/slo, true
	}
	return f, true
}

func usable(t float64) bool { return t > 0 && !math.IsInf(t, 0) }

// need is the smallest replica count whose predicted p95 at load is at
// most the target. Below the current count it keeps the slowest replicas,
// so the answer holds whichever ones the caller removes.
func (f fleet) need(load float64) int {
	sum := 0.0
	for i, mu := range f.rates {
		sum += max(0, mu-f.l)
		if sum >= load {
			return i + 1
		}
	}
	extra := math.Ceil((load - sum) / (f.next - f.l))
	if !(extra < 1e9) {
		extra = 1e9
	}
	return len(f.rates) + int(max(extra, 0))
}

// capacity is Σμ of n replicas: the n slowest, then replicas to come.
func (f fleet) capacity(n int) float64 {
	c := 0.0
	for i := 0; i < n && i < len(f.rates); i++ {
		c += f.rates[i]
	}
	if n > len(f.rates) {
		c += float64(n-len(f.rates)) * f.next
	}
	return c
}

// p95 is the predicted p95 latency in seconds of n replicas at load, +Inf
// when the load is at or beyond their capacity.
func (f fleet) p95(n int, load float64) float64 {
	c := f.capacity(n)
	if n < 1 || load >= c {
		return math.Inf(1)
	}
	return ln20 * float64(n) / (c - load)
}
