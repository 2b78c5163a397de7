package server

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
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

// The snapshot reads the live jobs in ID order by merging the jobs that
// joined or left since the last snapshot into the order it kept: over
// random puts, ends and deletes its order is the sorted one, with and
// without a snapshot between the changes, and when so many moved that the
// cache dropped its order and sorted again.
func TestSnapshotOrderMerged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 47))
	states := []model.State{model.StateQueued, model.StateRunning, model.StatePreempted, model.StatePreparing,
		model.StateBlocked, model.StateSucceeded, model.StateFailed}
	for _, every := range []int{1, 7, 50, 2500} { // changes between snapshots
		t.Run(fmt.Sprint(every), func(t *testing.T) {
			c := newCache(slog.New(slog.DiscardHandler), nil)
			rev := int64(0)
			want := map[string]model.State{} // the cache's live jobs, by ID
			dropped := false                 // the cache dropped its order once
			for step := range 6000 {
				rev++
				id := fmt.Sprintf("j%04d", rng.IntN(4000))
				if rng.IntN(10) == 0 {
					c.delKey(prefixJobs+id, rev)
					delete(want, id)
				} else {
					st := states[rng.IntN(len(states))]
					c.putJobs([]*model.Job{{ID: id, Status: model.JobStatus{State: st}}}, rev)
					if st.Terminal() {
						delete(want, id)
					} else {
						want[id] = st
					}
				}
				if step%every != 0 {
					continue
				}
				dropped = dropped || (step > 0 && c.order == nil)
				s := c.snapshot()
				var got, blocked []string
				for _, j := range s.jobs {
					got = append(got, j.ID)
				}
				for _, j := range s.blocked {
					blocked = append(blocked, j.ID)
				}
				var wantJobs, wantBlocked []string
				for _, id := range slices.Sorted(maps.Keys(want)) {
					if want[id] == model.StateBlocked {
						wantBlocked = append(wantBlocked, id)
					} else {
						wantJobs = append(wantJobs, id)
					}
				}
				if !slices.Equal(got, wantJobs) || !slices.Equal(blocked, wantBlocked) {
					t.Fatalf("step %d: snapshot %d jobs, %d blocked; want %d and %d in ID order", step, len(got), len(blocked),
						len(wantJobs), len(wantBlocked))
				}
			}
			if dropped != (every == 2500) {
				t.Fatalf("the order was dropped: %v", dropped)
			}
		})
	}
}

// A job the server writes itself reaches the cache from the watch without
// its record being decoded, when the watch applies the write first; a
// record that is not the one written is decoded as before, and so is one
// that arrives after the writer forgot it.
func TestWatchTakesOwnWrites(t *testing.T) {
	c := newCache(slog.New(slog.DiscardHandler), nil)
	j := &model.Job{ID: "j1", Spec: model.JobSpec{Tenant: "t"}, Status: model.JobStatus{State: model.StateQueued}}
	rec := encodeJob(j)
	put := func(rev int64, value []byte) {
		c.event(store.Event{Type: store.Put, Rev: rev, KV: store.KV{Key: prefixJobs + j.ID, Value: value, ModRev: rev}})
	}
	cached := func() *model.Job {
		ref, _, ok := c.job(j.ID)
		if !ok {
			t.Fatal("not cached")
		}
		return ref.job
	}
	forget := c.writing([]*model.Job{j}, [][]byte{rec})
	put(1, rec)
	if cached() != j {
		t.Fatal("the watch decoded the server's own write")
	}
	other := *j
	other.Status.Reason = "elsewhere"
	put(2, encodeJob(&other))
	if got := cached(); got == j || got.Status.Reason != "elsewhere" {
		t.Fatalf("another record: %+v", got.Status)
	}
	forget()
	put(3, rec)
	if got := cached(); got == j || got.ID != j.ID {
		t.Fatalf("after forget: the registered job (%v) or another (%+v)", got == j, got)
	}
}
