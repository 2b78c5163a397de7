package autoscale

import (
	"math"
	"slices"
)

// The queueing model.
//
// Each replica is an M/M/1 queue behind a fixed delay: every request first
// takes the endpoint's service time D (what one request costs an idle
// replica: a forward pass that no count of replicas shortens), and then
// waits in a queue that serves at rate μ, first come first served. Its
// sojourn time is then D plus an exponential of rate μ−λ, so its p95 is
// D + ln(20)/(μ−λ): never below D, however many replicas there are. (The
// plain M/M/1, D = 0, predicted 7.2 ms for an endpoint whose requests take
// 20 ms each.) The throughput profile says a replica of GPU model g
// sustains T_g requests/s with p95 = SLO; the rate that matches that point
// is
//
//	μ_g = T_g + ln(20)/(SLO − D).
//
// The load balancer is assumed to route so that every replica has the same
// latency (least outstanding requests does about that): replica i takes
// λ_i = μ_i − θ with θ = (Σμ_i − λ)/n, so that n replicas at arrival rate λ
// have
//
//	p95(n, λ) = D + ln(20) · n / (Σμ_i − λ),
//
// which for n alike replicas is one replica's at λ/n. Asking for
// p95 ≤ SLO × headroom is asking for Σκ_i ≥ λ, where κ_i = μ_i − ln(20) /
// (SLO × headroom − D) is what a replica adds at that target: T_g at
// headroom 1, a little less below it. So steady load λ needs about λ/T_g
// replicas: the count the profile implies, and one more than it at most
// while the headroom costs less than a replica in all (n·(T_g − κ_g) <
// T_g): for the examples' profiles with a service time up to 20 ms, up to
// a dozen replicas (TestNeedMatchesProfile).
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
// below the profile's load is too low but never below D; it is exact at the
// profile's point, which is where the decisions are made. The
// observed-p95 rule (step 5) corrects a profile that is wrong. D comes from
// the endpoint's service_time_ms, or, when that is not given, from the
// lowest median latency the gateway measured in the window (a median under
// load is at least D, so this errs towards more replicas).
const ln20 = 2.995732273553991 // -ln(0.05)

// fleet is the capacity of an endpoint's replicas under the model.
type fleet struct {
	rates []float64 // μ of each replica, ascending
	next  float64   // μ assumed for a replica asked for now
	l     float64   // ln(20)/(target p95 − d, in seconds)
	d     float64   // the service time D in seconds: the floor of every p95
	// sloTarget is true when the target is the SLO itself: a replica of
	// the next model cannot reach SLO × headroom even idle.
	sloTarget bool
}

// newFleet builds the model of the replicas for an SLO of slo seconds and
// a service time of d seconds (0 when not known; at or above the SLO it is
// taken as 0, as no replica could meet the SLO and the profile says one
// does).
// A replica's GPU model without a profile entry counts as the slowest
// entry. A replica asked for now is assumed to be of the slowest model
// among the replicas (else among the allowed models): whichever model the
// scheduler picks, the SLO holds. ok is false when the profile has no
// usable entry.
func newFleet(profile map[string]float64, allowed []string, replicas []Replica, slo, d, headroom float64) (f fleet, ok bool) {
	slowest := math.Inf(1)
	for _, t := range profile {
		if usable(t) {
			slowest = min(slowest, t)
		}
	}
	if math.IsInf(slowest, 1) || !(slo > 0) || math.IsInf(slo, 0) {
		return fleet{}, false
	}
	if !(d > 0 && d < slo) {
		d = 0
	}
	f.d = d
	rate := func(model string) float64 {
		t, found := profile[model]
		if !found || !usable(t) {
			t = slowest
		}
		return t + ln20/(slo-d)
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
			f.next = rate("")
		}
	}
	if target := slo*headroom - d; headroom > 0 && headroom <= 1 && target > 0 {
		f.l = ln20 / target
	}
	if f.l == 0 || f.next-f.l <= 0 {
		f.l, f.sloTarget = ln20/(slo-d), true
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
// when the load is at or beyond their capacity; never below the service
// time.
func (f fleet) p95(n int, load float64) float64 {
	c := f.capacity(n)
	if n < 1 || load >= c {
		return math.Inf(1)
	}
	return f.d + ln20*float64(n)/(c-max(load, 0))
}
