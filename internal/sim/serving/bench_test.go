package serving

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkRouteAndServe is the simulator's inner loop for one request:
// the router picks the least busy of the week's mean number of simulated
// replicas (6.5; internal/sim/scenario), the replica serves the request.
// Poisson arrivals at 80 % of the replicas' capacity.
func BenchmarkRouteAndServe(b *testing.B) {
	p := Profile{PrefillTokensPerSec: 20000, WeightsSec: 0.012, KVSecPerToken: 1e-8, ComputeSecPerToken: 1e-4, KVTokens: 400000, MaxBatch: 64}
	reps := make([]*Replica, 7)
	for i := range reps {
		reps[i] = NewReplica(p)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var r Router
	at := 0.0
	for b.Loop() {
		at += rng.ExpFloat64() / 40
		r.Pick(reps, at).Serve(at, 1500, 200)
	}
}
