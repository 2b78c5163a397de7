package alert

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// step is one evaluation: the values at t0+at and the states expected of
// the rule's alerts afterwards (by name, "" for none listed).
type step struct {
	at     time.Duration
	values Values
	want   State // the state of the only alert listed; "" for none
	fired  bool  // a Firing transition is returned
	solved bool  // a Resolved transition is returned
}

func fleet(allocated, total float64) Values {
	v := Values{}
	v.Add("allot_gpus", total, "region", "eu", "cluster", "c1", "gpu_model", "H100", "health", "Ready")
	v.Add("allot_gpus_allocated", allocated, "region", "eu", "cluster", "c1", "gpu_model", "H100", "partition", "p")
	return v
}

func partition(allocated, guaranteed, queued float64) Values {
	v := Values{}
	v.Add("allot_gpus_allocated", allocated, "region", "eu", "cluster", "c1", "gpu_model", "H100", "partition", "p")
	v.Add("allot_gpus_guaranteed", guaranteed, "region", "eu", "gpu_model", "H100", "partition", "p")
	v.Add("allot_queue_guaranteed_jobs", queued, "region", "eu", "gpu_model", "H100", "partition", "p")
	// Work of another pool (T4) waits too: it never makes the H100
	// shortfall a broken guarantee.
	v.Add("allot_queue_guaranteed_jobs", 5, "region", "eu", "gpu_model", "T4", "partition", "p")
	v.Add("allot_queue_depth", queued+5, "tenant", "a", "partition", "p", "class", "batch")
	return v
}

func endpoint(p95, slo float64) Values {
	v := Values{}
	v.Add("allot_endpoint_p95_latency_seconds", p95, "endpoint", "chat")
	v.Add("allot_endpoint_slo_p95_seconds", slo, "endpoint", "chat")
	return v
}

func node(health string) Values {
	v := Values{}
	for _, h := range []string{"Ready", "NotReady", "Draining"} {
		var x float64
		if h == health {
			x = 1
		}
		v.Add("allot_node_health", x, "node", "n1", "region", "eu", "cluster", "c1", "health", h)
	}
	return v
}

// cycles is the cycle histogram with fast cycles under 0.1 s and slow ones
// between 2 s and 5 s (cumulative buckets).
func cycles(fast, slow float64) Values {
	v := Values{}
	for _, b := range []struct {
		le string
		n  float64
	}{{"0.1", fast}, {"1", fast}, {"2", fast}, {"5", fast + slow}, {"+Inf", fast + slow}} {
		v.Add("allot_cycle_duration_seconds_bucket", b.n, "le", b.le)
	}
	return v
}

func panics(n float64) Values {
	v := Values{}
	v.Add("allot_cycle_panics_total", n)
	return v
}

// failed is the failed-attempt counters of nodes n1 and n2.
// autoDrained is allot_node_auto_drained with n1 at v, n2 at 0.
func autoDrained(v float64) Values {
	vs := Values{}
	vs.Add("allot_node_auto_drained", v, "node", "n1", "region", "eu", "cluster", "c1")
	vs.Add("allot_node_auto_drained", 0, "node", "n2", "region", "eu", "cluster", "c1")
	return vs
}

func failed(n1, n2 float64) Values {
	v := Values{}
	v.Add("allot_node_failed_attempts_total", n1, "node", "n1")
	v.Add("allot_node_failed_attempts_total", n2, "node", "n2")
	return v
}

func TestRules(t *testing.T) {
	m := time.Minute
	tests := []struct {
		name  string
		steps []step
	}{
		{"AllotGPUAllocationHigh", []step{
			{at: 0, values: fleet(8, 10)},                                 // 80 %: not above
			{at: m, values: fleet(9, 10), want: Pending},                  // 90 %
			{at: 5 * m, values: fleet(9, 10), want: Pending},              // 4 m held
			{at: 6 * m, values: fleet(10, 10), want: Firing, fired: true}, // 5 m held
			{at: 7 * m, values: fleet(2, 10), want: Resolved, solved: true},
		}},
		{"AllotGPUAllocationHigh", []step{ // pending, then dropped without firing
			{at: 0, values: fleet(9, 10), want: Pending},
			{at: m, values: fleet(1, 10)},
		}},
		{"AllotPartitionBelowGuarantee", []step{
			{at: 0, values: partition(2, 4, 0)}, // below, nothing queued
			{at: m, values: partition(4, 4, 3)}, // at its guarantee
			{at: 2 * m, values: partition(2, 4, 3), want: Pending},
			{at: 11 * m, values: partition(2, 4, 3), want: Pending},
			{at: 12 * m, values: partition(3, 4, 1), want: Firing, fired: true},
			{at: 13 * m, values: partition(3, 4, 0), want: Resolved, solved: true},
		}},
		{"AllotEndpointSLOBreach", []step{
			{at: 0, values: endpoint(0.2, 0.3)},
			{at: m, values: endpoint(0.4, 0.3), want: Pending},
			{at: 6 * m, values: endpoint(0.5, 0.3), want: Firing, fired: true},
			{at: 7 * m, values: endpoint(0.3, 0.3), want: Resolved, solved: true},
		}},
		{"AllotNodeNotReady", []step{
			{at: 0, values: node("Ready")},
			{at: m, values: node("NotReady"), want: Pending},
			{at: 5 * m, values: node("NotReady"), want: Pending},
			{at: 6 * m, values: node("NotReady"), want: Firing, fired: true},
			{at: 7 * m, values: node("Draining"), want: Resolved, solved: true},
		}},
		{"AllotNodeFailingJobs", []step{
			{at: 0, values: failed(0, 0)},
			{at: m, values: failed(1, 1)},
			{at: 2 * m, values: failed(2, 2)},
			{at: 3 * m, values: failed(3, 2), want: Firing, fired: true},     // 3 on n1 in 10 m; no `for`
			{at: 10 * m, values: failed(3, 2), want: Firing},                 // the 0 at 0 m is still in the window
			{at: 11 * m, values: failed(3, 2), want: Resolved, solved: true}, // from the 1 at 1 m: 2
		}},
		{"AllotNodeFailingJobs", []step{ // spread out: never 3 within 10 minutes
			{at: 0, values: failed(0, 0)},
			{at: 6 * m, values: failed(1, 0)},
			{at: 12 * m, values: failed(2, 0)},
			{at: 18 * m, values: failed(3, 0)},
		}},
		{"AllotNodeAutoDrained", []step{
			{at: 0, values: autoDrained(0)},
			{at: m, values: autoDrained(1), want: Firing, fired: true}, // no `for`: a drain is news at once
			{at: 30 * m, values: autoDrained(1), want: Firing},
			{at: 31 * m, values: autoDrained(0), want: Resolved, solved: true},
		}},
		{"AllotCycleSlow", []step{
			{at: 0, values: cycles(0, 0)},
			{at: m, values: cycles(1000, 1)}, // p99 within 0.1 s
			{at: 2 * m, values: cycles(1000, 100), want: Pending},
			{at: 7 * m, values: cycles(1005, 150), want: Pending},
			{at: 12 * m, values: cycles(1010, 200), want: Firing, fired: true},
			// Slow cycles stop; once they leave the 5 m window the p99 falls.
			{at: 15 * m, values: cycles(2000, 200), want: Resolved, solved: true},
		}},
		{"AllotCyclePanicked", []step{
			{at: 0, values: panics(0)},
			{at: m, values: panics(0)},
			{at: 2 * m, values: panics(1), want: Firing, fired: true}, // no `for`
			{at: 11 * m, values: panics(1), want: Firing},
			{at: 13 * m, values: panics(1), want: Resolved, solved: true}, // the 0 left the 10 m window
		}},
		{"AllotCyclePanicked", []step{ // a restart is not a decrease
			{at: 0, values: panics(3)},
			{at: m, values: panics(0)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(only(t, tt.name), Options{})
			for i, s := range tt.steps {
				changed := e.Evaluate(s.values, t0.Add(s.at))
				var fired, solved bool
				for _, a := range changed {
					fired = fired || a.State == Firing
					solved = solved || a.State == Resolved
				}
				if fired != s.fired || solved != s.solved {
					t.Errorf("step %d: transitions %+v, want fired %v resolved %v", i, changed, s.fired, s.solved)
				}
				all := e.Alerts()
				var got State
				switch {
				case len(all) > 1:
					t.Fatalf("step %d: %d alerts: %+v", i, len(all), all)
				case len(all) == 1:
					got = all[0].State
					if all[0].Name != tt.name || all[0].Summary == "" {
						t.Errorf("step %d: alert %+v", i, all[0])
					}
				}
				if got != s.want {
					t.Errorf("step %d: state %q, want %q (%+v)", i, got, s.want, all)
				}
			}
		})
	}
}

func only(t *testing.T, name string) []Rule {
	for _, r := range Rules {
		if r.Name == name {
			return []Rule{r}
		}
	}
	t.Fatalf("no rule %s", name)
	return nil
}

func TestAlertFields(t *testing.T) {
	e := New(Rules, Options{For: time.Minute})
	e.Evaluate(fleet(9, 10), t0)
	changed := e.Evaluate(fleet(9.5, 10), t0.Add(time.Minute))
	if len(changed) != 1 {
		t.Fatalf("changed %+v", changed)
	}
	a := changed[0]
	if a.Labels["region"] != "eu" || a.Labels["gpu_model"] != "H100" || len(a.Labels) != 2 ||
		math.Abs(a.Value-0.95) > 1e-9 || !a.Since.Equal(t0) || !a.FiredAt.Equal(t0.Add(time.Minute)) ||
		a.Severity != "warning" || a.Summary != "H100 GPUs in eu are 95% allocated" {
		t.Errorf("alert %+v", a)
	}
}

func TestResolvedKept(t *testing.T) {
	e := New(only(t, "AllotNodeNotReady"), Options{MaxResolved: 2, KeepResolved: time.Hour})
	at := t0
	for range 3 {
		e.Evaluate(node("NotReady"), at)
		at = at.Add(6 * time.Minute)
		e.Evaluate(node("NotReady"), at)
		at = at.Add(time.Minute)
		e.Evaluate(node("Ready"), at)
	}
	if got := e.Alerts(); len(got) != 2 || got[0].ResolvedAt.Before(got[1].ResolvedAt) {
		t.Errorf("kept %+v, want the 2 newest, newest first", got)
	}
	e.Evaluate(node("Ready"), at.Add(2*time.Hour))
	if got := e.Alerts(); len(got) != 0 {
		t.Errorf("kept %+v after KeepResolved", got)
	}
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		les, counts []float64
		q, want     float64
	}{
		{[]float64{1, 2, inf}, []float64{0, 10, 10}, 0.5, 1.5},
		{[]float64{1, 2, inf}, []float64{10, 10, 10}, 0.99, 0.99},
		{[]float64{1, 2, inf}, []float64{0, 0, 10}, 0.99, 2},
		{[]float64{1, 2, inf}, []float64{0, 0, 0}, 0.99, math.NaN()},
	}
	for _, tt := range tests {
		got := quantile(tt.q, tt.les, tt.counts)
		if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)) && math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("quantile(%v, %v, %v) = %v, want %v", tt.q, tt.les, tt.counts, got, tt.want)
		}
	}
}
