package policy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched/schedtest"
	"github.com/allot-dev/allot/internal/spec"
)

var t0 = schedtest.Epoch

func seed(t *testing.T) *model.PolicySet {
	t.Helper()
	ps, err := spec.ReadPolicies("../../examples/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// fired returns the names of the firings whose conditions hold.
func fired(fs []Firing) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		if f.Held {
			out[f.Policy] = true
		}
	}
	return out
}

func TestUtilizationCondition(t *testing.T) {
	ps := seed(t)
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		samples []Sample
		want    bool
	}{
		{"above", []Sample{{now.Add(-time.Minute), 0.86}}, true},
		{"just above", []Sample{{now, 0.8501}}, true},
		{"exactly the threshold", []Sample{{now, 0.85}}, false},
		{"below", []Sample{{now, 0.5}}, false},
		{"the latest sample counts", []Sample{{now.Add(-2 * time.Minute), 0.99}, {now.Add(-time.Minute), 0.80}}, false},
		{"a sample after now is not read", []Sample{{now.Add(-time.Minute), 0.80}, {now.Add(time.Second), 0.99}}, false},
		{"stale: older than MaxSampleAge", []Sample{{now.Add(-MaxSampleAge - time.Second), 0.99}}, false},
		{"at MaxSampleAge still in force", []Sample{{now.Add(-MaxSampleAge), 0.99}}, true},
		{"no samples", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Metrics
			for _, s := range tc.samples {
				m.Add(MetricUtilization, "fleet", s.At, s.Value)
			}
			m.Add(MetricUtilization, "region/eastus", now, 0.99) // another scope never counts
			fs := Evaluate(ps, State{}, &m, now)
			if got := fired(fs)["ai_training_priority"]; got != tc.want {
				t.Fatalf("fired = %v, want %v (%+v)", got, tc.want, fs)
			}
			if tc.want {
				v := fs[0].Values[0]
				if v.Key != "fleet" || v.Threshold != 0.85 || !v.Seen || v.Current != tc.samples[len(tc.samples)-1].Value {
					t.Errorf("value = %+v", v)
				}
			}
			if fired(fs)["customer_sla_protection"] {
				t.Error("the latency policy fired without latency samples")
			}
		})
	}
}

func TestUtilizationScope(t *testing.T) {
	ps := &model.PolicySet{Targets: model.BuiltinTargets(), Policies: []model.Policy{{Name: "p",
		Conditions: []model.Condition{{Kind: model.ConditionUtilization, Scope: model.Scope{Kind: "cluster", Name: "c1"}, Utilization: 0.5}},
		Actions:    []model.Action{{Kind: model.ActionMigrate, Targets: []string{"batch_jobs"}, Destination: "low_priority_pool"}}}}}
	var m Metrics
	m.Add(MetricUtilization, "fleet", t0, 0.9)
	m.Add(MetricUtilization, "cluster/c2", t0, 0.9)
	if fs := Evaluate(ps, State{}, &m, t0); len(fs) != 0 {
		t.Fatalf("fired on other scopes: %+v", fs)
	}
	m.Add(MetricUtilization, "cluster/c1", t0, 0.51)
	if fs := Evaluate(ps, State{}, &m, t0); !fired(fs)["p"] || fs[0].Values[0].Key != "cluster/c1" {
		t.Fatalf("did not fire on its cluster: %+v", fs)
	}
}

// latency adds one sample a minute for endpoint from start to end.
func latency(m *Metrics, endpoint string, start, end time.Time, seconds float64) {
	for at := start; !at.After(end); at = at.Add(time.Minute) {
		m.Add("p95_latency", endpoint, at, seconds)
	}
}

func TestLatencyCondition(t *testing.T) {
	ps := seed(t)
	start := t0.Add(10 * time.Minute) // the latency rises at start
	for _, tc := range []struct {
		name string
		fill func(m *Metrics)
		now  time.Time
		want bool
	}{
		{"above for the whole duration", func(m *Metrics) { latency(m, "chat", start, start.Add(time.Hour), 0.2) },
			start.Add(5 * time.Minute), true},
		{"duration just short", func(m *Metrics) { latency(m, "chat", start, start.Add(time.Hour), 0.2) },
			start.Add(5*time.Minute - time.Second), false},
		{"exactly the threshold", func(m *Metrics) { latency(m, "chat", start, start.Add(time.Hour), 0.150) },
			start.Add(10 * time.Minute), false},
		{"one sample at the threshold inside the window", func(m *Metrics) {
			latency(m, "chat", start, start.Add(time.Hour), 0.2)
			m.Add("p95_latency", "chat", start.Add(7*time.Minute), 0.15)
		}, start.Add(11 * time.Minute), false},
		{"the dip is out of the window again", func(m *Metrics) {
			latency(m, "chat", start, start.Add(time.Hour), 0.2)
			m.Add("p95_latency", "chat", start.Add(7*time.Minute), 0.15)
		}, start.Add(13 * time.Minute), true},
		{"a gap longer than MaxSampleAge breaks it", func(m *Metrics) {
			latency(m, "chat", start, start.Add(2*time.Minute), 0.2)
			latency(m, "chat", start.Add(8*time.Minute), start.Add(20*time.Minute), 0.2)
		}, start.Add(10 * time.Minute), false},
		{"one bad endpoint is enough", func(m *Metrics) {
			latency(m, "chat", start.Add(-time.Hour), start.Add(time.Hour), 0.05)
			latency(m, "search", start, start.Add(time.Hour), 0.3)
		}, start.Add(6 * time.Minute), true},
		{"two endpoints each above half the time are not", func(m *Metrics) {
			latency(m, "a", start, start.Add(2*time.Minute), 0.3)
			latency(m, "a", start.Add(3*time.Minute), start.Add(6*time.Minute), 0.1)
			latency(m, "b", start, start.Add(2*time.Minute), 0.1)
			latency(m, "b", start.Add(3*time.Minute), start.Add(6*time.Minute), 0.3)
		}, start.Add(6 * time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Metrics
			m.Add(MetricUtilization, "fleet", tc.now, 0.1)
			tc.fill(&m)
			fs := Evaluate(ps, State{}, &m, tc.now)
			if got := fired(fs)["customer_sla_protection"]; got != tc.want {
				t.Fatalf("fired = %v, want %v (%+v)", got, tc.want, fs)
			}
			if fired(fs)["ai_training_priority"] {
				t.Error("the utilisation policy fired at 10 %")
			}
		})
	}
}

// The worst endpoint is the one reported, with the margin it kept.
func TestLatencyReportsWorstEndpoint(t *testing.T) {
	ps := seed(t)
	var m Metrics
	latency(&m, "chat", t0, t0.Add(10*time.Minute), 0.2)
	latency(&m, "search", t0, t0.Add(10*time.Minute), 0.4)
	m.Add("p95_latency", "search", t0.Add(8*time.Minute), 0.25)
	fs := Evaluate(ps, State{}, &m, t0.Add(10*time.Minute))
	if len(fs) != 1 {
		t.Fatalf("firings = %+v", fs)
	}
	v := fs[0].Values[0]
	if v.Key != "search" || v.Lowest != 0.25 || v.Current != 0.4 || v.Threshold != 0.15 || v.For != 5*time.Minute {
		t.Errorf("value = %+v, want search, lowest 0.25, current 0.4", v)
	}
}

// A policy keeps applying for its cooldown after its conditions clear, then
// stops; Since carries over while it applies.
func TestCooldown(t *testing.T) {
	ps := seed(t)
	var m Metrics
	var active []Firing
	step := func(at time.Time, util float64) Firing {
		m.Add(MetricUtilization, "fleet", at, util)
		active = Evaluate(ps, State{Active: active}, &m, at)
		for _, f := range active {
			if f.Policy == "ai_training_priority" {
				return f
			}
		}
		return Firing{}
	}
	if f := step(t0, 0.9); !f.Held || !f.Since.Equal(t0) || !f.Until.Equal(t0.Add(model.DefaultCooldown)) {
		t.Fatalf("at t0: %+v", f)
	}
	if f := step(t0.Add(time.Minute), 0.95); !f.Held || !f.Since.Equal(t0) || !f.LastHeld.Equal(t0.Add(time.Minute)) {
		t.Fatalf("still held: %+v", f)
	}
	cleared := t0.Add(2 * time.Minute)
	if f := step(cleared, 0.5); f.Policy == "" || f.Held || !f.Until.Equal(t0.Add(time.Minute+model.DefaultCooldown)) {
		t.Fatalf("cooling down: %+v", f)
	}
	if f := step(t0.Add(time.Minute+model.DefaultCooldown-time.Second), 0.5); f.Policy == "" {
		t.Fatal("stopped before its cooldown ended")
	}
	if f := step(t0.Add(time.Minute+model.DefaultCooldown), 0.5); f.Policy != "" {
		t.Fatalf("still applies when its cooldown ended: %+v", f)
	}
	again := t0.Add(time.Hour)
	if f := step(again, 0.9); !f.Held || !f.Since.Equal(again) {
		t.Fatalf("applies afresh: %+v", f)
	}
}

// scale_down's baseline is what the target held when the policy began to
// apply, and stays so while it applies.
func TestBaselineAtActivation(t *testing.T) {
	ps := seed(t)
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 2, "ND96-H100x8-IB", "l1").Tenant("dev", "")
	w.Tenancy.Tenants[0].Labels = map[string]string{"workload": "developer"}
	for i := range 4 {
		w.Job(string(rune('a'+i)), "dev").Running(t0, schedtest.On("n-1", i))
	}
	var m Metrics
	m.Add(MetricUtilization, "fleet", t0, 0.9)
	fs := Evaluate(ps, State{World: w.Snapshot()}, &m, t0)
	a := fs[0].Actions[0]
	if a.Kind != model.ActionScaleDown || !a.BaselineKnown || a.Baseline != 4000 {
		t.Fatalf("scale_down = %+v, want a baseline of 4 GPUs", a)
	}
	if fs[0].Actions[1].BaselineKnown {
		t.Error("migrate has a baseline")
	}
	w.Jobs = w.Jobs[:1] // three were preempted meanwhile
	m.Add(MetricUtilization, "fleet", t0.Add(time.Minute), 0.9)
	fs = Evaluate(ps, State{World: w.Snapshot(), Active: fs}, &m, t0.Add(time.Minute))
	if a := fs[0].Actions[0]; a.Baseline != 4000 {
		t.Fatalf("baseline moved to %d with the work", a.Baseline)
	}
}

// Property: Evaluate never fires a policy whose conditions do not all hold,
// and fires every policy whose conditions do, checked against a plain
// reading of the rule: at every instant of [now-duration, now] a sample no
// older than MaxSampleAge is in force and above the threshold.
func TestEvaluateFiresExactlyWhenAllHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	outcomes := map[bool]int{}
	for iter := range 400 {
		ps := &model.PolicySet{Targets: model.BuiltinTargets()}
		var conds []model.Condition
		for range 1 + rng.IntN(3) {
			d := time.Duration(rng.IntN(4)) * time.Minute
			if rng.IntN(2) == 0 {
				conds = append(conds, model.Condition{Kind: model.ConditionUtilization, Scope: model.ScopeFleet,
					Utilization: 0.5 + 0.1*float64(rng.IntN(4)), For: d})
			} else {
				conds = append(conds, model.Condition{Kind: model.ConditionLatency, Metric: "p95_latency",
					Latency: time.Duration(100+50*rng.IntN(3)) * time.Millisecond, For: d})
			}
		}
		ps.Policies = []model.Policy{{Name: "p", Conditions: conds, Cooldown: 0,
			Actions: []model.Action{{Kind: model.ActionMigrate, Targets: []string{"batch_jobs"}, Destination: "low_priority_pool"}}}}
		var m Metrics
		keys := map[string][]string{MetricUtilization: {"fleet"}, "p95_latency": {"e1", "e2"}}
		for metric, ks := range keys {
			for _, k := range ks {
				at := t0
				for at.Before(t0.Add(20 * time.Minute)) {
					v := 0.4 + 0.1*float64(rng.IntN(6))
					if metric != MetricUtilization {
						v = 0.05 * float64(1+rng.IntN(5))
					}
					m.Add(metric, k, at, v)
					at = at.Add(time.Duration(1+rng.IntN(400)) * time.Second)
				}
			}
		}
		now := t0.Add(time.Duration(rng.IntN(25*60)) * time.Second)
		want := true
		for _, c := range conds {
			if c.Kind == model.ConditionUtilization {
				want = want && plainHolds(m.Series(MetricUtilization, "fleet"), c.Utilization, c.For, now)
			} else {
				any := false
				for _, e := range keys["p95_latency"] {
					any = any || plainHolds(m.Series("p95_latency", e), c.Latency.Seconds(), c.For, now)
				}
				want = want && any
			}
		}
		fs := Evaluate(ps, State{}, &m, now)
		outcomes[want]++
		if got := fired(fs)["p"]; got != want {
			t.Fatalf("iteration %d at %v: fired = %v, the rule says %v\nconditions %+v\nfirings %+v",
				iter, now.Sub(t0), got, want, conds, fs)
		}
		for _, f := range fs {
			for i, v := range f.Values {
				if f.Held && !v.Held {
					t.Fatalf("iteration %d: held firing with condition %d not held: %+v", iter, i, f)
				}
			}
		}
	}
	if outcomes[true] < 40 || outcomes[false] < 40 {
		t.Fatalf("the generator is lopsided: %v firing and not", outcomes)
	}
}

// plainHolds is the rule read every half second (samples and now fall on
// whole seconds, so a gap just over MaxSampleAge shows between them).
func plainHolds(s []Sample, threshold float64, d time.Duration, now time.Time) bool {
	for at := now.Add(-d); !at.After(now); at = at.Add(time.Second / 2) {
		var in *Sample
		for i := range s {
			if !s[i].At.After(at) {
				in = &s[i]
			}
		}
		if in == nil || at.Sub(in.At) > MaxSampleAge || in.Value <= threshold {
			return false
		}
	}
	return true
}
