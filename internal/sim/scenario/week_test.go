package scenario_test

import (
	"math"
	"testing"

	"github.com/allot-dev/allot/internal/sim/scenario"
	"github.com/allot-dev/allot/internal/sim/serving"
)

// TestWeekFollowsItsRules recomputes the week scenario's SLOs and
// throughput profiles by the rules its header states (docs/
// serving-model.md), so that a changed number is a changed rule, not a
// number tuned to a result: the SLO is twice the 99.9th percentile over a
// week of minutes of the idle per-minute p95 at the trough rate on the
// slowest GPU model allowed, rounded up to 100 ms; the throughput is
// serving.LoadTest over six hours on min_replicas replicas (at least
// LoadTestReplicas), the SLO met in 99 % of minutes, within the two digits
// the file gives.
// LoadTestReplicas is the smallest deployment the week's throughput
// profiles were load-tested on.
const LoadTestReplicas = 10

func TestWeekFollowsItsRules(t *testing.T) {
	if testing.Short() {
		t.Skip("recomputes every endpoint's profile (about a minute)")
	}
	f, err := scenario.Read("../../../examples/scenarios/week.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range f.Endpoints {
		t.Run(e.Name, func(t *testing.T) {
			p, err := f.RequestPattern(e.Load.Trace)
			if err != nil {
				t.Fatal(err)
			}
			ttft := e.SLO.Metric == scenario.MetricTTFT
			slowest, idle := "", 0.0
			for _, m := range e.GPUModels {
				prof, err := serving.NewProfile(*e.Serving, m, e.GPUsPerInstance)
				if err != nil {
					t.Fatal(err)
				}
				trough := e.Load.TroughRPS * min(e.Load.Weekend, 1) * 60
				if v := serving.IdleMinuteP95(prof, p, ttft, trough, 0.999, 168, 1); v > idle {
					slowest, idle = m, v
				}
			}
			slo := math.Ceil(2*idle*10-1e-9) / 10
			if got := e.SLO.P95Ms / 1000; math.Abs(got-slo) > 1e-9 {
				t.Errorf("slo.p95_ms = %g ms; the rule gives %g ms (2 × %.3f s idle on %s)", e.SLO.P95Ms, slo*1000, idle, slowest)
			}
			for _, m := range e.GPUModels {
				prof, _ := serving.NewProfile(*e.Serving, m, e.GPUsPerInstance)
				want := serving.LoadTest(prof, p, ttft, slo, max(e.MinReplicas, LoadTestReplicas), 0.99, 6, 1)
				if got := e.Throughput[m]; math.Abs(got-want) > 0.05*want+0.01 {
					t.Errorf("throughput.%s = %g; the rule gives %.3f", m, got, want)
				}
				t.Logf("%s on %s: SLO %g s, throughput %.3f requests/s", e.Name, m, slo, want)
			}
		})
	}
}
