package endpoint

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

func TestCrashLoopDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second,
		5: 160 * time.Second, 6: 5 * time.Minute, 40: 5 * time.Minute} {
		if got := crashLoopDelay(n); got != want {
			t.Errorf("crashLoopDelay(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestNoteCrashes: replicas that fail together are one failure; one that
// fails after the wait doubles it; a replica started after the last
// failure and running for crashLoopReset ends the back-off; failures
// older than that, and other states, do not count.
func TestNoteCrashes(t *testing.T) {
	now := t0
	replica := func(id string, st model.State, ended time.Time) *model.Job {
		return &model.Job{ID: id, Status: model.JobStatus{State: st, EndedAt: ended, StartedAt: ended.Add(-time.Second)}}
	}
	e := &Endpoint{}
	ended := []*model.Job{
		replica("old", model.StateFailed, now.Add(-time.Hour)),
		replica("done", model.StateCanceled, now),
		replica("a", model.StateFailed, now.Add(-2*time.Second)),
		replica("b", model.StateFailed, now.Add(-time.Second)),
	}
	if !e.noteCrashes(nil, ended, now) || e.CrashLoop.Failures != 1 || !e.CrashLoop.Until.Equal(now.Add(8*time.Second)) {
		t.Fatalf("two replicas failing together: %+v, want 1 failure until a's end + 10s", e.CrashLoop)
	}
	if len(e.Events) != 1 || e.Events[0].Kind != EventBackOff {
		t.Fatalf("events %+v, want one BackOff", e.Events)
	}
	if e.noteCrashes(nil, ended, now.Add(time.Second)) {
		t.Fatal("the same failures changed the back-off again")
	}
	if !e.backingOff(now.Add(7*time.Second)) || e.backingOff(now.Add(8*time.Second)) {
		t.Fatal("backingOff does not end at Until")
	}
	later := now.Add(20 * time.Second)
	ended = append(ended, replica("c", model.StateFailed, later))
	if !e.noteCrashes(nil, ended, later) || e.CrashLoop.Failures != 2 || !e.CrashLoop.Until.Equal(later.Add(20*time.Second)) {
		t.Fatalf("a failure after the wait: %+v, want 2 failures until +20s", e.CrashLoop)
	}
	running := &model.Job{ID: "d", Status: model.JobStatus{State: model.StateRunning, StartedAt: later.Add(30 * time.Second)}}
	if e.noteCrashes([]*model.Job{running}, ended, later.Add(5*time.Minute)) {
		t.Fatalf("reset after 4m30s of running: %+v", e.CrashLoop)
	}
	if !e.noteCrashes([]*model.Job{running}, ended, later.Add(30*time.Second+crashLoopReset)) || e.CrashLoop != (CrashLoop{}) {
		t.Fatalf("a replica ran for %s: %+v, want no back-off", crashLoopReset, e.CrashLoop)
	}
}
