package autoscale

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestLearnFromMissedMinutes: a sample that missed the SLO with every
// ready replica reporting raises the rate planned for by MissBoost, once;
// the raise halves every MissHalfLife; it stops at MissBoostMax; misses
// measured before a replica was ready do not count; MissBoost 0 learns
// nothing.
func TestLearnFromMissedMinutes(t *testing.T) {
	spec := endpoint()
	now := t0.Add(time.Hour)
	t4 := Replica{GPUModel: "T4", Ready: true}
	ok := steady(now, 200, 60, 3)    // within the 150 ms SLO
	miss := steady(now, 200, 180, 3) // the newest sample missed it

	d0, st0 := Decide(spec, ok, repeat(t4, 3), now, State{})
	if st0.Boost != 0 || !st0.LastMiss.IsZero() {
		t.Fatalf("no miss, yet State %+v", st0)
	}
	d1, st1 := Decide(spec, miss, repeat(t4, 3), now, State{})
	if math.Abs(st1.Boost-1.1) > 1e-9 || !st1.LastMiss.Equal(now) {
		t.Fatalf("one miss: State %+v, want a boost of 1.1 at %s", st1, now)
	}
	if math.Abs(d1.Forecast-1.1*d0.Forecast) > 1e-9 {
		t.Errorf("one miss: forecast %g, want 1.1 × %g", d1.Forecast, d0.Forecast)
	}
	if _, again := Decide(spec, miss, repeat(t4, 3), now, st1); again.Boost != st1.Boost {
		t.Errorf("the same missed sample counted twice: boost %g", again.Boost)
	}

	// A half-life later, without a miss, the raise is halved; the State
	// does not change.
	later := now.Add(DefaultParams.MissHalfLife)
	d2, st2 := Decide(spec, steady(later, 200, 60, 3), repeat(t4, 3), later, st1)
	if st2 != st1 {
		t.Errorf("a minute within the SLO changed the State: %+v → %+v", st1, st2)
	}
	if want := d0.Forecast * 1.05; math.Abs(d2.Forecast-want) > 1e-9 || !strings.Contains(d2.Reason, "× 1.05 learnt from minutes that missed the SLO") {
		t.Errorf("a half-life later: forecast %g, want %g; reason %q", d2.Forecast, want, d2.Reason)
	}

	// Minute after minute of misses: the boost stops at MissBoostMax.
	st := State{}
	for m := range 20 {
		at := now.Add(time.Duration(m) * time.Minute)
		_, st = Decide(spec, steady(at, 200, 180, 3), repeat(t4, 3), at, st)
	}
	if math.Abs(st.Boost-DefaultParams.MissBoostMax) > 1e-9 {
		t.Errorf("after 20 missed minutes: boost %g, want the cap %g", st.Boost, DefaultParams.MissBoostMax)
	}

	// Measured by two replicas while three are ready: not counted.
	if _, st := Decide(spec, steady(now, 200, 180, 2), repeat(t4, 3), now, State{}); st.Boost != 0 {
		t.Errorf("a miss measured before a replica was ready counted: %+v", st)
	}

	off := DefaultParams
	off.MissBoost = 0
	if d, st := off.Decide(spec, miss, repeat(t4, 3), now, st1); st.Boost != 0 || d.Forecast != d0.Forecast {
		t.Errorf("MissBoost 0: State %+v, forecast %g, want no boost and %g", st, d.Forecast, d0.Forecast)
	}
}
