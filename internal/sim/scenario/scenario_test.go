package scenario_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/scenario"
	"github.com/allot-dev/allot/internal/spec"
)

func small(t *testing.T) *scenario.File {
	t.Helper()
	f, err := scenario.Read("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParseErrorsNameLineAndField(t *testing.T) {
	base, err := os.ReadFile("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to string
		line           int
		field          string
	}{
		{"unknown field", "seed: 1", "sede: 1", 3, "sede"},
		{"bad duration", "duration: 24h", "duration: 1d", 5, "duration"},
		{"negative hold_after", "duration: 24h", "duration: 24h\nhold_after: -1h", 6, "hold_after"},
		{"unknown SKU", "sku: NC64-T4x4, count: 4", "sku: NC64-T5x4, count: 4", 17, "fleet.regions[0].clusters[1].nodes[0].sku"},
		{"negative count", "sku: NC64-T4x4, count: 4", "sku: NC64-T4x4, count: -4", 17, "fleet.regions[0].clusters[1].nodes[0].count"},
		{"opens after the end", "opens: 12h", "opens: 30h", 19, "reservations[0].opens"},
		{"zero duration", "duration: 10h, checkpoint: 1h", "duration: 0, checkpoint: 1h", 23, "jobs[0].duration"},
		{"bad class", "class: spot", "class: urgent", 25, "arrivals[0].class"},
		{"trough above peak", "trough_rps: 5", "trough_rps: 500", 36, "endpoints[0].curve.trough_rps"},
		{"throughput not a number", "throughput: {T4: 10}", "throughput: {T4: fast}", 32, "endpoints[0].throughput.T4"},
		{"min replicas", "min_replicas: 1", "min_replicas: 0", 33, "endpoints[0].min_replicas"},
		{"slo", "slo_ms: 150", "slo_ms: -1", 35, "endpoints[0].slo_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(string(base), tc.from, tc.to, 1)
			if data == string(base) {
				t.Fatalf("%q is not in the file", tc.from)
			}
			_, err := scenario.Parse("small.yaml", []byte(data))
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *spec.Error", err)
			}
			if se.Field != tc.field || se.Line != tc.line {
				t.Errorf("err = %v (field %q line %d), want field %q line %d", err, se.Field, se.Line, tc.field, tc.line)
			}
		})
	}
}

func TestBuildScalesTheFleetAndChecksTenants(t *testing.T) {
	f := small(t)
	w, err := f.Build(0.5, model.StrategyStatic)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Fleet.Nodes) != 4 || w.Tenancy.Strategy != model.StrategyStatic {
		t.Errorf("factor 0.5: %d nodes, strategy %q; want 4 and static", len(w.Fleet.Nodes), w.Tenancy.Strategy)
	}
	// Guarantees are percentages: half of the 2 H100 nodes left.
	if g := w.Promised.Partitions[0].Guarantees[0].GPUs; g != 8 {
		t.Errorf("ai guarantee at factor 0.5 = %d GPUs, want 8", g)
	}
	if _, err := f.Build(0.1, ""); err == nil {
		t.Error("factor 0.1 (no H100 node for the reservation) built")
	}
	f.Jobs[0].Tenant = "nobody"
	if _, err := f.Build(1, ""); err == nil || !strings.Contains(err.Error(), "jobs[0].tenant") {
		t.Errorf("unknown tenant: err = %v", err)
	}
}

func TestWorkloadIsDeterministic(t *testing.T) {
	f := small(t)
	a, err := f.Workload()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Workload()
	if !reflect.DeepEqual(a, b) || len(a) < 20 {
		t.Fatalf("two workloads of one seed differ or are tiny (%d jobs)", len(a))
	}
	f.Seed++
	c, _ := f.Workload()
	if reflect.DeepEqual(a, c) {
		t.Error("another seed gave the same workload")
	}
	for i := 1; i < len(a); i++ {
		if a[i].At < a[i-1].At {
			t.Fatal("workload not in submit order")
		}
	}
}

func TestRunMeasuresEachStrategy(t *testing.T) {
	f := small(t)
	ps, err := spec.ReadPolicies("../../../examples/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range model.Strategies {
		res, err := scenario.Run(context.Background(), f, scenario.Options{Strategy: s, Policies: ps, CheckIncremental: true})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if res.Strategy != string(s) || len(res.Endpoints) != 1 || len(res.Partitions) != 3 || len(res.Reservations) != 1 {
			t.Fatalf("%s: result shape %+v", s, res)
		}
		ep := res.Endpoints[0]
		if ep.Minutes != 24*60 || ep.AttainmentPct <= 50 || ep.AttainmentPct > 100 || ep.PeakReplicas < 2 {
			t.Errorf("%s: endpoint %+v", s, ep)
		}
		// About 2.8 M requests a day: a mean of ~32 req/s.
		if ep.RequestsPerDayM < 2 || ep.RequestsPerDayM > 4 {
			t.Errorf("%s: %.2f M requests/day", s, ep.RequestsPerDayM)
		}
		if res.UtilisationPct <= 0 || res.UtilisationPct > 100 || res.SpotGPUHours <= 0 {
			t.Errorf("%s: utilisation %.1f %%, spot %.1f GPU-h", s, res.UtilisationPct, res.SpotGPUHours)
		}
		var trainer float64
		for _, tu := range res.Tenants {
			if tu.Tenant == "trainer" {
				trainer = tu.GPUHours
			}
		}
		if trainer < 160 { // 16 GPUs for 10 h, more if preempted work reruns
			t.Errorf("%s: trainer ran %.1f GPU-h, want at least 160", s, trainer)
		}
		if res.Meets != (len(res.Misses) == 0) {
			t.Errorf("%s: meets %v with misses %v", s, res.Meets, res.Misses)
		}
		again, _ := scenario.Run(context.Background(), f, scenario.Options{Strategy: s, Policies: ps})
		if !reflect.DeepEqual(res, again) {
			t.Errorf("%s: two runs differ", s)
		}
	}
}

func TestFindMinFleetBisects(t *testing.T) {
	f := small(t)
	m, err := scenario.FindMinFleet(context.Background(), f, scenario.Options{Strategy: model.StrategyHybrid})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tried) < 3 {
		t.Fatalf("tried %+v", m.Tried)
	}
	for _, tr := range m.Tried {
		if tr.Meets && tr.Factor < m.Factor {
			t.Errorf("factor %g met but the answer is %g", tr.Factor, m.Factor)
		}
	}
	if m.Factor > 0 {
		res, err := scenario.Run(context.Background(), f, scenario.Options{Strategy: model.StrategyHybrid, Factor: m.Factor})
		if err != nil || !res.Meets {
			t.Errorf("the answer %g does not meet: %v %v", m.Factor, err, res.Misses)
		}
	}
}

// TestHoldAfterPassesThrough: a scenario's hold_after reaches the core.
// In testdata/gang.yaml a stream of one-GPU jobs keeps two nodes busy and
// the 2×8 gang never starts without holds; with hold_after it holds both
// nodes and starts, evicting no more than the sixteen GPUs' worth of work
// that yields to it.
func TestHoldAfterPassesThrough(t *testing.T) {
	f, err := scenario.Read("testdata/gang.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gang := func(hold time.Duration) (*scenario.Result, float64) {
		t.Helper()
		f.HoldAfter = spec.Duration(hold)
		res, err := scenario.Run(context.Background(), f, scenario.Options{Strategy: model.StrategyDynamic, CheckIncremental: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, tu := range res.Tenants {
			if tu.Tenant == "trainer" {
				return res, tu.GPUHours
			}
		}
		t.Fatal("no trainer in the result")
		return nil, 0
	}
	if _, h := gang(0); h != 0 {
		t.Fatalf("without hold_after the gang ran %.1f GPU-h; the scenario no longer starves it", h)
	}
	res, h := gang(time.Hour)
	if h != 64 { // 2 × 8 GPUs for 4 h
		t.Errorf("with hold_after 1h the gang ran %.1f GPU-h, want 64", h)
	}
	if res.Preemptions > 16 {
		t.Errorf("with hold_after 1h: %d preemptions, want at most the 16 GPUs the gang needs", res.Preemptions)
	}
}

// TestWeekExampleMeetsTargets runs the week README and BENCHMARKS.md show
// and checks what they claim of it on the full fleet: with the example
// policies, dynamic and hybrid keep every endpoint's SLO, every guarantee
// and every reservation, and static does not.
func TestWeekExampleMeetsTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulated week three times")
	}
	f, err := scenario.Read("../../../examples/scenarios/week.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := spec.ReadPolicies("../../../examples/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range model.Strategies {
		res, err := scenario.Run(context.Background(), f, scenario.Options{Strategy: s, Policies: ps})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if want := s != model.StrategyStatic; res.Meets != want {
			t.Errorf("%s: meets targets %v, want %v; misses %v", s, res.Meets, want, res.Misses)
		}
	}
}

// A run says where the tenancy, as its strategy gives it to the core,
// promises a pool more GPUs than it has: with shop's reservation at three
// of east's four H100 nodes (24 GPUs), static keeps ai's 16 guaranteed
// GPUs from lending as well (40 of 32); hybrid lends them (24 of 32).
func TestRunWarnsOfOverpromisedPools(t *testing.T) {
	f := small(t)
	f.Reservations[0].Count = 3
	want := map[model.Strategy][]string{
		model.StrategyStatic: {"the tenancy promises more GPUs than a pool has: east H100 from 2026-03-02T12:00:00Z: " +
			"guarantees kept from lending (16 GPUs) and reservations shop-h100 (24 GPUs) promise 40 at once; the pool has 32"},
		model.StrategyHybrid: nil,
	}
	for s, w := range want {
		res, err := scenario.Run(context.Background(), f, scenario.Options{Strategy: s})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Warnings, w) {
			t.Errorf("%s: warnings %q, want %q", s, res.Warnings, w)
		}
	}
}
