package engine_test

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// progress is what Engine.Progress said of a job at a moment.
type progress struct {
	done, work time.Duration
	ok         bool
}

// A job bound at speed s does s seconds of work per second of the clock;
// a speed that is not positive, or no Speed at all, is 1.
func TestSpeedScalesWork(t *testing.T) {
	for _, tc := range []struct {
		name  string
		speed func(*model.Job) float64
		ends  time.Duration // after its start
		at30m time.Duration // work done after 30 minutes
	}{
		{"twice", func(*model.Job) float64 { return 2 }, time.Hour, time.Hour},
		{"half", func(*model.Job) float64 { return 0.5 }, 4 * time.Hour, 15 * time.Minute},
		{"no Speed", nil, 2 * time.Hour, 30 * time.Minute},
		{"zero is 1", func(*model.Job) float64 { return 0 }, 2 * time.Hour, 30 * time.Minute},
		{"negative is 1", func(*model.Job) float64 { return -2 }, 2 * time.Hour, 30 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := oneNode()
			l := &log{}
			e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true,
				Recorder: l, Speed: tc.speed})
			l.eng = e
			if err := e.Submit(job("a", "owner", 8, 0), 2*time.Hour); err != nil {
				t.Fatal(err)
			}
			var mid progress
			e.At(schedtest.Epoch.Add(30*time.Minute), func(time.Time) { mid.done, mid.work, mid.ok = e.Progress("a") })
			if err := e.Run(schedtest.Epoch.Add(10 * time.Hour)); err != nil {
				t.Fatal(err)
			}
			if got, ok := l.endedAt["a"]; !ok || got.Sub(schedtest.Epoch) != tc.ends {
				t.Errorf("ended after %s (recorded %v), want %s", got.Sub(schedtest.Epoch), ok, tc.ends)
			}
			if want := (progress{tc.at30m, 2 * time.Hour, true}); mid != want {
				t.Errorf("progress after 30 minutes %+v, want %+v", mid, want)
			}
			if _, _, ok := e.Progress("a"); ok {
				t.Error("progress of an ended job")
			}
		})
	}
}

// A guest of 2 h of work runs at speed 2 on the owner's node, is evicted
// after 40 minutes of clock and keeps the work of its last checkpoint
// (15-minute interval: 30 minutes of clock, 1 h of work). The owner's job
// (1 h) ends at 1h40m, and the guest, rebound at the speed of its second
// attempt, has the other hour to do.
func TestPreemptionKeepsWorkAtTheAttemptsSpeed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		speed   float64       // of the guest's second attempt
		ends    time.Duration // the guest, from the start
		at1h50m time.Duration // the guest's work done then
	}{
		{"rebound at 1", 1, 2*time.Hour + 40*time.Minute, 70 * time.Minute},
		{"rebound at 3", 3, 2 * time.Hour, 90 * time.Minute},
		{"rebound at 0.5", 0.5, 3*time.Hour + 40*time.Minute, 65 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := oneNode()
			l := &log{}
			speed := func(j *model.Job) float64 {
				switch {
				case j.ID != "guest":
					return 1
				case len(j.Status.Attempts) == 1:
					return 2
				}
				return tc.speed
			}
			e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true,
				Recorder: l, Core: sched.Config{MinRunTime: 10 * time.Minute}, Speed: speed})
			l.eng = e
			if err := e.Submit(job("guest", "guest", 8, 15*time.Minute), 2*time.Hour); err != nil {
				t.Fatal(err)
			}
			e.At(schedtest.Epoch.Add(40*time.Minute), func(time.Time) {
				if err := e.Submit(job("owner", "owner", 8, 0), time.Hour); err != nil {
					t.Error(err)
				}
			})
			seen := map[time.Duration]progress{}
			for _, d := range []time.Duration{20 * time.Minute, 39 * time.Minute, 41 * time.Minute, 110 * time.Minute} {
				e.At(schedtest.Epoch.Add(d), func(time.Time) {
					var p progress
					p.done, p.work, p.ok = e.Progress("guest")
					seen[d] = p
				})
			}
			if err := e.Run(schedtest.Epoch.Add(10 * time.Hour)); err != nil {
				t.Fatal(err)
			}
			if len(l.preempted) != 1 || l.preempted[0].Job != "guest" {
				t.Fatalf("preemptions %+v, want the guest once", l.preempted)
			}
			if got := l.endedAt["owner"].Sub(schedtest.Epoch); got != 100*time.Minute {
				t.Errorf("the owner's job ended after %s, want 1h40m", got)
			}
			if got := l.endedAt["guest"].Sub(schedtest.Epoch); got != tc.ends {
				t.Errorf("the guest ended after %s, want %s", got, tc.ends)
			}
			for d, done := range map[time.Duration]time.Duration{
				20 * time.Minute:  40 * time.Minute, // running at 2
				39 * time.Minute:  78 * time.Minute, // not all of it saved
				41 * time.Minute:  time.Hour,        // queued: what its checkpoint kept
				110 * time.Minute: tc.at1h50m,       // 10 minutes into its second attempt
			} {
				if want := (progress{done, 2 * time.Hour, true}); seen[d] != want {
					t.Errorf("progress at %s %+v, want %+v", d, seen[d], want)
				}
			}
		})
	}
}
