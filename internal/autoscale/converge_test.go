package autoscale

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// Steady load needs about the count the throughput profile implies: at
// least ⌈λ/T⌉ replicas and at most one more, at the default headroom, for
// the examples' profiles with and without a service time.
func TestNeedMatchesProfile(t *testing.T) {
	spec := endpoint("T4", "A100", "H100")
	for _, m := range []string{"T4", "A100", "H100"} {
		for _, d := range []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond} {
			for _, n := range []int{1, 3, 4, 12} {
				load := float64(n) * spec.Throughput[m] * 0.97
				reps := make([]Replica, n)
				for i := range reps {
					reps[i] = Replica{GPUModel: m, Ready: true}
				}
				fl, ok := newFleet(spec.Throughput, spec.Resources.GPUModels, reps, spec.SLO.P95.Seconds(), d.Seconds(), DefaultParams.Headroom)
				if !ok {
					t.Fatal("newFleet: not ok")
				}
				implied := int(math.Ceil(load / spec.Throughput[m]))
				if got := fl.need(load); got < implied || got > implied+1 {
					t.Errorf("%s, service time %s, %.0f req/s: need %d, want %d or %d", m, d, load, got, implied, implied+1)
				}
			}
		}
	}
}

// However many replicas serve however little load, the predicted p95 is
// never below the service time: the spec's, or the lowest median the
// gateway measured when the spec states none.
func TestPredictedP95NeverBelowServiceTime(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		service time.Duration
		p50     float64
	}{
		{"stated", 20 * time.Millisecond, 0},
		{"measured", 0, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := endpoint("H100")
			spec.ServiceTime = tc.service
			for _, load := range []float64{0.5, 10, 100, 1000, 5000} {
				for _, n := range []int{2, 5, 16} {
					window := steady(now, load, 25, n)
					for i := range window {
						window[i].P50Ms = tc.p50
					}
					d, _ := Decide(spec, window, repeat(Replica{GPUModel: "H100", Ready: true}, n), now, State{})
					if d.PredictedP95Ms < 20 {
						t.Errorf("%d replicas at %.1f req/s: predicted p95 %.1f ms, below the 20 ms service time (%s)", n, load, d.PredictedP95Ms, d.Reason)
					}
				}
			}
			if p := PredictP95(spec, repeat(Replica{GPUModel: "H100", Ready: true}, 16), 1); tc.service > 0 && p < 0.020 {
				t.Errorf("PredictP95 of 16 idle replicas: %.4f s, below the service time", p)
			}
		})
	}
}

// A ramp from nothing to 1,100 req/s within a minute reads as a slope of
// about 18 req/s per s; over a lead of three minutes that is 3,300 req/s
// more. The forecast stays within twice the measured peak, and says so.
func TestForecastBoundedOnRamp(t *testing.T) {
	var window []Sample
	for i := range 13 {
		window = append(window, Sample{At: t0.Add(time.Duration(i) * 5 * time.Second), RequestsPerSec: min(1100, float64(i)*92), P95Ms: 40, Replicas: 3})
	}
	now := window[len(window)-1].At
	spec := endpoint("H100")
	spec.MaxReplicas = 100
	p := DefaultParams
	p.TrendWindow = time.Minute
	d, _ := p.Decide(spec, window, repeat(Replica{GPUModel: "H100", Ready: true}, 3), now, State{})
	if d.Forecast > 2*1100+1e-9 {
		t.Errorf("forecast %.0f req/s, above twice the 1,100 req/s peak: %s", d.Forecast, d.Reason)
	}
	if !strings.Contains(d.Reason, "bounded to 100% of the peak") {
		t.Errorf("the reason does not say the trend was bounded: %s", d.Reason)
	}
	p.MaxTrendShare = 0
	if u, _ := p.Decide(spec, window, repeat(Replica{GPUModel: "H100", Ready: true}, 3), now, State{}); u.Forecast < 3000 {
		t.Errorf("unbounded, the forecast is %.0f req/s; the ramp does not run away and the test cannot tell", u.Forecast)
	}
}

// The case of issue 45: a steady 1,100 req/s, after a ramp of a minute,
// on replicas rated 400 req/s (3 suffice) with a 20 ms service time. The
// count converges to within one of 3 and stays there; during the ramp it
// never goes past what twice the peak needs; and no minute missed during
// the ramp teaches the autoscaler to plan the steady load up.
func TestSteadyLoadConvergesToProfile(t *testing.T) {
	spec := endpoint("H100")
	spec.Throughput = map[string]float64{"H100": 400}
	spec.ServiceTime = 20 * time.Millisecond
	spec.MinReplicas, spec.MaxReplicas = 1, 40
	curve := func(at time.Duration) float64 { return min(1100, 1100*at.Seconds()/60) }
	run := func(p Params) ([]step, *world) {
		w := newWorld(spec, 1)
		w.params = p
		w.tick = 5 * time.Second
		w.startup = 30 * time.Second
		return w.run(30*time.Minute, curve), w
	}
	steps, w := run(DefaultParams)
	implied := 3
	for _, s := range steps {
		if s.at.Sub(t0) >= 25*time.Minute && (s.total < implied-1 || s.total > implied+1) {
			t.Fatalf("at %s: %d replicas for a steady 1,100 req/s, want %d ± 1: %s", s.at.Sub(t0), s.total, implied, s.decision.Reason)
		}
		if s.total > 7 {
			t.Errorf("at %s: %d replicas, more than twice the peak needs: %s", s.at.Sub(t0), s.total, s.decision.Reason)
		}
	}
	if w.state.Boost > 1 {
		t.Errorf("the ramp's misses raised the boost to %.2f (last miss %s)", w.state.Boost, w.state.LastMiss.Sub(t0))
	}
	unbounded := DefaultParams
	unbounded.MaxTrendShare = 0
	most := 0
	s2, _ := run(unbounded)
	for _, s := range s2 {
		most = max(most, s.total)
	}
	if most <= 7 {
		t.Errorf("without the bound the ramp reached %d replicas at most; the test cannot tell the bound's effect", most)
	}
	for _, s := range steps {
		if s.decision.Event != Hold {
			t.Logf("%s %d → %d: %s", s.at.Sub(t0), s.total, s.decision.Desired, s.decision.Reason)
		}
	}
	t.Log(fmt.Sprintf("bounded: %d replicas at the end; unbounded: up to %d", steps[len(steps)-1].total, most))
}

// The backlog that queued while one replica served a load for four is
// served late once the other three are ready: samples over the SLO for a
// few seconds. Within Params.Settle of the last replica becoming ready
// they neither add replicas nor teach the autoscaler; a miss after it
// does both.
func TestBacklogIsNotAMiss(t *testing.T) {
	spec := endpoint("T4")
	spec.MinReplicas, spec.MaxReplicas = 1, 16
	spec.ServiceTime = 20 * time.Millisecond
	spec.SLO.P95 = 100 * time.Millisecond
	now := t0.Add(time.Hour)
	four := repeat(Replica{GPUModel: "T4", Ready: true}, 4)
	coming := append(repeat(Replica{GPUModel: "T4", Ready: true}, 1), repeat(Replica{GPUModel: "T4"}, 3)...)
	// Replicas were coming 10 s ago; now all four are ready and the
	// sample still shows the backlog.
	_, st := Decide(spec, steady(now.Add(-10*time.Second), 400, 30, 1), coming, now.Add(-10*time.Second), State{})
	backlog := steady(now, 400, 2800, 4)
	d, st2 := Decide(spec, backlog, four, now, st)
	if d.Desired != 4 || st2.Boost > 1 {
		t.Errorf("within the settle time: %d replicas, boost %.2f (%s); want 4 and no boost", d.Desired, st2.Boost, d.Reason)
	}
	later := now.Add(DefaultParams.Settle)
	d, st3 := Decide(spec, steady(later, 400, 2800, 4), four, later, st2)
	if d.Desired <= 4 || st3.Boost <= 1 {
		t.Errorf("a miss after the settle time: %d replicas, boost %.2f (%s); want more than 4 and a boost", d.Desired, st3.Boost, d.Reason)
	}
}
