package serving

import "testing"

// TestRouterPicksTheReplicaWithFewestInFlight: a long prompt holds one
// replica; the next request goes to the other, and once both are free
// again the ties rotate instead of piling onto the first.
func TestRouterPicksTheReplicaWithFewestInFlight(t *testing.T) {
	p := Profile{PrefillTokensPerSec: 1000, WeightsSec: 0.01, KVTokens: 1e6, MaxBatch: 8}
	reps := []*Replica{NewReplica(p), NewReplica(p)}
	var r Router
	first := r.Pick(reps, 0)
	first.Serve(0, 4000, 10) // 4 s of prefill
	second := r.Pick(reps, 0.1)
	if second == first {
		t.Fatal("the router sent a request to the replica still prefilling while the other was idle")
	}
	if o := second.Serve(0.1, 100, 1); o.TTFT > 0.2 {
		t.Errorf("the second request's TTFT is %.2f s: it waited behind the long prompt", o.TTFT)
	}
	seen := map[*Replica]int{}
	for i := range 10 {
		at := 100 + float64(i)*10 // each done before the next
		rep := r.Pick(reps, at)
		rep.Serve(at, 10, 1)
		seen[rep]++
	}
	if seen[reps[0]] == 0 || seen[reps[1]] == 0 {
		t.Errorf("ties all went to one replica: %d and %d", seen[reps[0]], seen[reps[1]])
	}
}
