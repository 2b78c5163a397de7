package engine_test

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// With a cycle period, what changes between two boundaries is scheduled
// at the next one: a and b, submitted at 10:00:20 and 10:00:40, start
// together at 10:01:00 in one cycle; a's completion at 10:03:30 frees the
// room c (submitted at 10:02:00) takes at 10:04:00. Without a period each
// change is scheduled at once.
func TestPeriodBatchesChangesToItsBoundary(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	clock := func(m, s int) time.Time {
		return start.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	for _, tc := range []struct {
		name       string
		period     time.Duration
		a, b, c    time.Time // starts
		aEnds      time.Time
		cycles0130 int // by 10:01:30
	}{
		{"one minute", time.Minute, clock(1, 0), clock(1, 0), clock(4, 0), clock(3, 30), 1},
		{"none", 0, clock(0, 20), clock(0, 40), clock(2, 50), clock(2, 50), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := oneNode()
			l := &log{}
			e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: start, CheckIncremental: true,
				Recorder: l, Period: tc.period})
			l.eng = e
			jobs := map[string]*model.Job{}
			submit := func(id string, at time.Time, work time.Duration) {
				jobs[id] = job(id, "owner", 4, 0)
				e.At(at, func(time.Time) {
					if err := e.Submit(jobs[id], work); err != nil {
						t.Error(err)
					}
				})
			}
			submit("a", clock(0, 20), 2*time.Minute+30*time.Second)
			submit("b", clock(0, 40), time.Hour)
			submit("c", clock(2, 0), time.Hour) // the node is full: c waits for a
			var cBefore model.State
			e.At(tc.c.Add(-time.Second), func(time.Time) { cBefore = jobs["c"].Status.State })
			if err := e.Run(clock(1, 30)); err != nil {
				t.Fatal(err)
			}
			if got := e.Cycles(); got != tc.cycles0130 {
				t.Errorf("%d cycles by 10:01:30, want %d", got, tc.cycles0130)
			}
			if err := e.Run(clock(30, 0)); err != nil {
				t.Fatal(err)
			}
			for id, want := range map[string]time.Time{"a": tc.a, "b": tc.b, "c": tc.c} {
				if got := jobs[id].Status.StartedAt; !got.Equal(want) {
					t.Errorf("%s started at %s, want %s", id, got.Format(time.TimeOnly), want.Format(time.TimeOnly))
				}
			}
			if got := l.endedAt["a"]; !got.Equal(tc.aEnds) {
				t.Errorf("a ended at %s, want %s", got.Format(time.TimeOnly), tc.aEnds.Format(time.TimeOnly))
			}
			if cBefore != model.StateQueued {
				t.Errorf("a second before its start c was %s, want queued", cBefore)
			}
			if len(l.started) != 3 {
				t.Errorf("started %v, want a, b and c once each", l.started)
			}
		})
	}
}
