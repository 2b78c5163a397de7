package serving

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/allot-dev/allot/internal/trace/azurellm"
)

// LoadTest is what an endpoint's owner measures to state the throughput
// of a replica (the autoscaler's profile): the largest rate, in requests/s
// a replica, at which an endpoint of replicas replicas of p, its requests
// drawn from pattern and spread evenly, keeps the p95 of each minute's
// requests within slo seconds in at least minutes (0.99 is 99 %) of the
// minutes of hours of load (seeded by seed). metric is the time to first
// token when ttft, else the whole request. The rates tried go down from
// the replicas' capacity in steps of 5 % (a light load is not surely
// easier: a minute of few requests has a noisy p95), and the first that
// meets is the answer; 0 when none down to a hundredth of capacity does.
func LoadTest(p Profile, pattern *azurellm.Pattern, ttft bool, slo float64, replicas int, minutes float64, hours int, seed uint64) float64 {
	meets := func(rate float64) bool {
		rs := make([]*Replica, replicas)
		for i := range rs {
			rs[i] = NewReplica(p)
		}
		a := NewArrivals(pattern, rand.New(rand.NewPCG(seed, 0)))
		var route Router
		var h Histogram
		ok, total := 0, 0
		for m := 0; m < hours*60; m++ {
			h.Reset()
			from := float64(m) * 60
			a.Span(from, from+60, rate*float64(replicas), 1, func(at float64, ctx, gen int) {
				o := route.Pick(rs, at).Serve(at, ctx, gen)
				if ttft {
					h.Add(o.TTFT, 1)
				} else {
					h.Add(o.Latency, 1)
				}
			})
			if h.Total() == 0 {
				continue
			}
			total++
			if h.Quantile(0.95) <= slo {
				ok++
			}
		}
		return total > 0 && float64(ok) >= minutes*float64(total)
	}
	ctx, gen := pattern.MeanTokens()
	capacity := p.Capacity(ctx, gen)
	for rate := capacity; rate >= capacity/100; rate *= 0.95 {
		if meets(rate) {
			return rate
		}
	}
	return 0
}

// IdleMinuteP95 is the q-quantile, over minutes hours of them, of the p95
// of each minute's requests on replicas of p that serve every request
// alone (no waiting, a batch of one), at rate requests a minute drawn from
// pattern: the noise of a per-minute p95 that no capacity removes, which
// an SLO over minutes must leave room for.
func IdleMinuteP95(p Profile, pattern *azurellm.Pattern, ttft bool, rate float64, q float64, hours int, seed uint64) float64 {
	a := NewArrivals(pattern, rand.New(rand.NewPCG(seed, 2)))
	var h Histogram
	var p95s []float64
	for m := 0; m < hours*60; m++ {
		h.Reset()
		from := float64(m) * 60
		a.Span(from, from+60, rate/60, 1, func(_ float64, ctx, gen int) {
			v := float64(ctx) / p.PrefillTokensPerSec
			if !ttft {
				v += float64(gen) * p.Step(1, float64(ctx+gen))
			}
			h.Add(v, 1)
		})
		if h.Total() > 0 {
			p95s = append(p95s, h.Quantile(0.95))
		}
	}
	if len(p95s) == 0 {
		return math.NaN()
	}
	slices.Sort(p95s)
	return p95s[min(int(math.Ceil(q*float64(len(p95s))))-1, len(p95s)-1)]
}
