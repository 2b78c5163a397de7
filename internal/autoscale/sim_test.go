package autoscale

import (
	"math"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// A small world for the tests: replicas that take startup to become
// ready after they are asked for, a true arrival rate curve, and the
// latency the queueing model gives the ready replicas at the true rate.
// The autoscaler sees only the samples (with the rate as measured).

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// endpoint is the copilot chat endpoint of the examples: p95 ≤ 150 ms,
// 2 to 16 replicas, rated T4 120, A100 500, H100 900 requests/s.
func endpoint(models ...string) model.EndpointSpec {
	if len(models) == 0 {
		models = []string{"T4"}
	}
	return model.EndpointSpec{Name: "chat", Tenant: "copilot", Model: "chat-8b",
		Resources:   model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: models},
		MinReplicas: 2, MaxReplicas: 16, SLO: model.SLO{P95: 150 * time.Millisecond},
		Throughput: map[string]float64{"T4": 120, "A100": 500, "H100": 900}}
}

type simReplica struct {
	model   string
	readyAt time.Time
}

// step is what happened at one tick.
type step struct {
	at       time.Time
	load     float64 // true arrival rate
	p95      float64 // true p95 in ms, of the ready replicas
	total    int     // replicas before the decision
	decision Decision
}

type world struct {
	spec     model.EndpointSpec
	params   Params
	tick     time.Duration
	startup  time.Duration         // asked for → ready
	newModel string                // GPU model of a new replica
	measured func(float64) float64 // the rate the replicas report for a true rate
	replicas []simReplica
	window   []Sample
	state    State
}

func newWorld(spec model.EndpointSpec, start int) *world {
	w := &world{spec: spec, params: DefaultParams, tick: 15 * time.Second, startup: 3 * time.Minute,
		newModel: spec.Resources.GPUModels[0], measured: func(r float64) float64 { return r }}
	for range start {
		w.replicas = append(w.replicas, simReplica{model: w.newModel, readyAt: t0})
	}
	return w
}

// trueP95 is the model's p95 in ms of the ready replicas at rate, capped at
// a minute (a queue that grows without bound).
func (w *world) trueP95(now time.Time, rate float64) (p95, util float64, ready int) {
	const capMs = 60_000
	slo := w.spec.SLO.P95.Seconds()
	mu := 0.0
	for _, r := range w.replicas {
		if !r.readyAt.After(now) {
			mu += w.spec.Throughput[r.model] + ln20/slo
			ready++
		}
	}
	if ready == 0 || rate >= mu {
		return capMs, 1, ready
	}
	return min(capMs, ln20*float64(ready)/(mu-rate)*1000), rate / mu, ready
}

// run drives the world over d from t0 with the true rate curve and returns
// every step.
func (w *world) run(d time.Duration, curve func(time.Duration) float64) []step {
	var steps []step
	for at := time.Duration(0); at <= d; at += w.tick {
		now := t0.Add(at)
		load := curve(at)
		p95, util, ready := w.trueP95(now, load)
		w.window = append(w.window, Sample{At: now, RequestsPerSec: w.measured(load), P95Ms: p95, Utilisation: util, Replicas: ready})
		for len(w.window) > 0 && now.Sub(w.window[0].At) > 15*time.Minute {
			w.window = w.window[1:]
		}
		view := make([]Replica, len(w.replicas))
		for i, r := range w.replicas {
			view[i] = Replica{GPUModel: r.model, Ready: !r.readyAt.After(now)}
		}
		var dec Decision
		dec, w.state = w.params.Decide(w.spec, w.window, view, now, w.state)
		steps = append(steps, step{at: now, load: load, p95: p95, total: len(w.replicas), decision: dec})
		for len(w.replicas) < dec.Desired {
			w.replicas = append(w.replicas, simReplica{model: w.newModel, readyAt: now.Add(w.startup)})
		}
		if len(w.replicas) > dec.Desired {
			w.replicas = w.replicas[:dec.Desired] // the newest go first
		}
	}
	return steps
}

// directionChanges counts the times a scale-out follows a scale-in or the
// other way round.
func directionChanges(steps []step) int {
	n, last := 0, Hold
	for _, s := range steps {
		if e := s.decision.Event; e != Hold {
			if last != Hold && e != last {
				n++
			}
			last = e
		}
	}
	return n
}

func maxP95(steps []step) (float64, time.Time) {
	worst, at := 0.0, time.Time{}
	for _, s := range steps {
		if s.p95 > worst {
			worst, at = s.p95, s.at
		}
	}
	return worst, at
}

// noise returns a deterministic multiplicative noise of about ±pct %, so
// that the tests need no random source.
func noise(pct float64) func(float64) float64 {
	i := 0
	return func(r float64) float64 {
		i++
		// A fixed, irregular sequence in [-1, 1].
		x := math.Sin(float64(i)*12.9898) * 43758.5453
		x = 2*(x-math.Floor(x)) - 1
		return r * (1 + pct/100*x)
	}
}
