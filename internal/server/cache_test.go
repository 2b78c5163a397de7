package server

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

// A cycle's snapshot holds exactly the jobs that are queued or hold
// capacity, however many have ended before them: the cache keeps the live
// ones apart, and a job moves in and out of that set with its state.
func TestSnapshotReadsOnlyLiveJobs(t *testing.T) {
	c := newCache(slog.New(slog.NewTextHandler(io.Discard, nil)), func(model.State, int) {})
	job := func(id string, s model.State) *model.Job {
		return &model.Job{ID: id, Status: model.JobStatus{State: s}}
	}
	rev := int64(0)
	put := func(j *model.Job) {
		rev++
		c.putJobs([]*model.Job{j}, rev)
	}
	for i, s := range []model.State{model.StateSucceeded, model.StateFailed, model.StateCanceled, model.StateTimedOut} {
		put(job(string(rune('a'+i)), s))
	}
	put(job("q", model.StateQueued))
	put(job("r", model.StateRunning))
	put(job("p", model.StatePreempted))
	ids := func() []string {
		var out []string
		for _, j := range c.snapshot().jobs {
			out = append(out, j.ID)
		}
		return out
	}
	if got := ids(); !slices.Equal(got, []string{"p", "q", "r"}) {
		t.Fatalf("snapshot %v, want p q r", got)
	}
	put(job("r", model.StateSucceeded)) // r ends
	put(job("a", model.StateQueued))    // a is requeued (a new version)
	if got := ids(); !slices.Equal(got, []string{"a", "p", "q"}) {
		t.Fatalf("after r ended and a came back: %v, want a p q", got)
	}
	rev++
	c.delKey(prefixJobs+"q", rev)
	if got := ids(); !slices.Equal(got, []string{"a", "p"}) {
		t.Fatalf("after q was deleted: %v, want a p", got)
	}
	if h := c.holding(); len(h) != 1 || h[0].ID != "p" {
		t.Fatalf("holding %v, want p", h)
	}
}
