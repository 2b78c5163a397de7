package replay

import (
	"context"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/trace/philly"
)

// TestObservedPreemptedNeighbour: a neighbour that was preempted and waits
// in the queue has run what it ran; the time since its last start is not
// run time (issue 12, 4a: it was counted on top of ran).
func TestObservedPreemptedNeighbour(t *testing.T) {
	// Ran 1000 s from t=0, preempted at t=1000, queued at t=5000.
	n := &simJob{started: true, ran: 1000, runStart: 0, pos: -1}
	if got := observed(n, 5000, 0); got != 2000 {
		t.Errorf("queued after 1000 s of run: observed %.0f, want 2 × 1000", got)
	}
	if got := observed(n, 5000, 3000); got != 3000 {
		t.Errorf("observed %.0f, want the mean of its kind, 3000", got)
	}
	// Running again since t=5000: 1000 s before plus 600 s now.
	n.runStart, n.pos = 5000, 0
	if got := observed(n, 5600, 0); got != 3200 {
		t.Errorf("running again: observed %.0f, want 2 × 1600", got)
	}
}

// TestPredictorLearnsObservedRunTime: allot's predictor learns what a
// finished job was seen to run (slowed by its spread, lost work included),
// never its true duration at full speed (issue 12, 4c).
func TestPredictorLearnsObservedRunTime(t *testing.T) {
	j := &simJob{vc: 0, gpus: 8, duration: 3600, pos: -1}
	q := newQSSF(1, []*simJob{j})
	q.started(j)
	j.started, j.done, j.ran = true, true, 5400
	q.finished(j)
	if m, _ := q.mean(j); m != 5400 {
		t.Errorf("learnt %.0f s, want the 5400 s observed (true duration 3600 s)", m)
	}
	if got := observed(j, 9000, 0); got != 5400 {
		t.Errorf("a finished neighbour says %.0f s, want the 5400 s observed", got)
	}
}

// TestUnevenGangGivesBackWhatItTook: a 20-GPU job is a gang of 3 × 8 GPUs
// (see shape); when it stops, its nodes are whole again, so a 24-GPU gang
// can start on them (issue 12, 4b: it gave back 20/3 per node).
func TestUnevenGangGivesBackWhatItTook(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	jobs := []philly.Job{
		{Line: 2, Submit: at(0), Duration: 10, GPUs: 20, VC: "a"},
		{Line: 3, Submit: at(100), Duration: 10, GPUs: 24, VC: "a"},
		{Line: 4, Submit: at(200), Duration: 10, GPUs: 20, VC: "a"},
	}
	vcs := []philly.VC{{Name: "a", Nodes: 3}}
	for _, policy := range []string{"fifo", "fifo-backfill", "allot"} {
		for _, sharing := range []Sharing{Static, Borrow} {
			r, err := Run(context.Background(), Config{Jobs: jobs, VCs: vcs, Policy: policy, Sharing: sharing,
				CheckIncremental: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.AvgJCT != 10 || r.AvgQueue != 0 {
				t.Errorf("%s/%s: avg JCT %.1f s, avg queue %.1f s; want 10 and 0 (every job starts on arrival)",
					policy, sharing, r.AvgJCT, r.AvgQueue)
			}
		}
	}
}
