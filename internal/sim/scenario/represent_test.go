package scenario

import (
	"math"
	"testing"
	"time"
)

// TestMinuteP95IsTakenOverEnoughRequests: the world serves the requests of
// some replicas of an endpoint and takes the minute's p95 over them; that
// p95 must miss the SLO about as often as the p95 of every replica's
// requests does. copilot-eu at 9 req/s on 18 replicas gets 30 requests a
// minute per replica: four representatives, routed among themselves,
// measured a p95 over 120 requests and missed 40 minutes of a week where
// serving every replica misses one.
func TestMinuteP95IsTakenOverEnoughRequests(t *testing.T) {
	f, err := Read("../../../examples/scenarios/week.yaml")
	if err != nil {
		t.Fatal(err)
	}
	i := -1
	for k, e := range f.Endpoints {
		if e.Name == "copilot-eu" {
			i = k
		}
	}
	if i < 0 {
		t.Fatal("week.yaml has no endpoint copilot-eu")
	}
	const minutes = 7 * 24 * 60
	start := time.Time(f.Start)
	missed := func(represented float64) int {
		ep, err := f.newEndpointSim(f.Endpoints[i], 1, i, 1, start)
		if err != nil {
			t.Fatal(err)
		}
		ep.represented = represented
		n := 0
		for m := 1; m <= minutes; m++ {
			if _, within := ep.serve(9, map[string]int{"H100": 18}, start.Add(time.Duration(m)*time.Minute)); !within {
				n++
			}
		}
		return n
	}
	every, enough, four := missed(math.Inf(1)), missed(RepresentedRequests), missed(0)
	t.Logf("missed minutes of %d: every replica served %d, representatives for %d requests %d, four representatives %d",
		minutes, every, RepresentedRequests, enough, four)
	if tolerance := max(3, every/2); enough > every+tolerance || enough < every-tolerance {
		t.Errorf("representatives for %d requests a minute missed %d minutes, every replica %d", RepresentedRequests, enough, every)
	}
	if four <= every+max(3, every/2) {
		t.Errorf("four representatives missed %d minutes, every replica %d: the test no longer tells them apart", four, every)
	}
}
