package server

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// TestCancelJobAgentMode: with agents, a cancel of a running job stops its
// processes (Preempted, Canceling; the attempt billed on), a second one
// kills them, and their exits end the job Canceled with the attempt billed
// to then. Without live processes, or without agents, it ends at once.
func TestCancelJobAgentMode(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	j := cancelJob(running2(0), "team", false, true, time.Minute, now)
	if j.Status.State != model.StatePreempted || !j.Status.Canceling || j.Status.Kill || j.Status.Reason != "Canceling" {
		t.Fatalf("first cancel: %s %s canceling %v kill %v, want Preempted Canceling without kill", j.Status.State, j.Status.Reason,
			j.Status.Canceling, j.Status.Kill)
	}
	if a := j.Status.Attempts[0]; !a.Ended.IsZero() || !a.StopOrdered.Equal(now) {
		t.Errorf("canceled attempt ended %v, stop ordered %v; want billed on, ordered at %v", a.Ended, a.StopOrdered, now)
	}
	k := cancelJob(j, "team", false, true, time.Minute, now.Add(time.Second))
	if !k.Status.Kill || k.Status.State != model.StatePreempted {
		t.Fatalf("second cancel: %s kill %v, want Preempted with kill", k.Status.State, k.Status.Kill)
	}
	done := k
	for r := range done.Status.Instances {
		var msg string
		var err error
		done, msg, err = applyEvent(done, 1, Event{Type: EventExited, Rank: r, Node: "n1", ExitCode: -1, Outcome: OutcomeStopped}, now.Add(2*time.Second), limits{maxLost: 5})
		if err != nil || done == nil {
			t.Fatalf("exit of rank %d: %v %q", r, err, msg)
		}
	}
	if done.Status.State != model.StateCanceled || !done.Status.Attempts[0].Ended.Equal(now.Add(2*time.Second)) {
		t.Errorf("after the exits: %s, attempt ended %v; want Canceled, billed to %v", done.Status.State, done.Status.Attempts[0].Ended, now.Add(2*time.Second))
	}
	if f := cancelJob(running2(0), "team", true, true, time.Minute, now); !f.Status.Kill || !f.Status.Canceling {
		t.Errorf("cancel with force: kill %v canceling %v, want both", f.Status.Kill, f.Status.Canceling)
	}
	if c := cancelJob(running2(0), "team", false, false, time.Minute, now); c.Status.State != model.StateCanceled {
		t.Errorf("without agents: %s, want Canceled at once", c.Status.State)
	}
}

// TestStopGraceBounded: a stop order gives at most the server's maximum
// grace, and none once a kill was asked.
func TestStopGraceBounded(t *testing.T) {
	s := &Server{cfg: Config{MaxGrace: time.Minute}}
	j := running2(0)
	j.Spec.Checkpoint.Grace = 8760 * time.Hour
	if g := s.stopGrace(j); g != time.Minute {
		t.Errorf("stop grace %v for a job stored with a year, want the 1m maximum", g)
	}
	j.Status.Kill = true
	if g := s.stopGrace(j); g != 0 {
		t.Errorf("stop grace %v once a kill was asked, want 0", g)
	}
	if err := s.checkGrace(2*time.Minute, "checkpoint.grace"); !isCode(err, CodeInvalidSpec) {
		t.Errorf("grace over the maximum: %v, want InvalidSpec", err)
	}
}
