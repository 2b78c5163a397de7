package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/store"
)

// With a job retention, a purge deletes the jobs that ended longer ago
// than it, from the store and the cache, and keeps those that ended since
// and those that have not ended; a report over a period before the
// retention says what it lacks. A retention under a month is refused.
func TestPurgeEnded(t *testing.T) {
	const retention = 40 * 24 * time.Hour
	h := &harness{t: t, dir: t.TempDir(), clock: NewManualClock(t0)}
	fleet, ten := servertest.Example(t)
	h.st = servertest.Store(t, h.dir)
	var err error
	h.srv, err = New(context.Background(), Config{Store: h.st, Fleet: fleet, Tenancy: ten, Clock: h.clock, JobRetention: retention})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	old := h.submit(copilot, chat)
	recent := h.submit(copilot, strings.Replace(chat, "name: chat", "name: recent", 1))
	running := h.submit(copilot, strings.Replace(chat, "name: chat", "name: running", 1))
	h.cycle()
	if _, err := h.srv.Cancel(ctx, copilot, old.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := h.srv.purgeEnded(ctx, h.clock.Now()); err != nil || n != 0 {
		t.Fatalf("just ended: %d purged, %v", n, err)
	}
	h.clock.Advance(30 * 24 * time.Hour)
	if _, err := h.srv.Cancel(ctx, copilot, recent.ID); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(11 * 24 * time.Hour) // old ended 41 days ago, recent 11
	if w := h.srv.RetentionWarning(h.clock.Now().Add(-30 * 24 * time.Hour)); w != "" {
		t.Errorf("a report within the retention warns %q", w)
	}
	if w := h.srv.RetentionWarning(h.clock.Now().Add(-50 * 24 * time.Hour)); !strings.Contains(w, "--job-retention 960h0m0s") {
		t.Errorf("a report before the retention: warning %q", w)
	}
	if n, err := h.srv.purgeEnded(ctx, h.clock.Now()); err != nil || n != 1 {
		t.Fatalf("%d purged, %v; want old's 1", n, err)
	}
	if _, err := h.st.Get(ctx, prefixJobs+old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old is still in the store: %v", err)
	}
	if _, err := h.srv.Job(ctx, admin, old.ID); !isCode(err, CodeNotFound) {
		t.Errorf("old through the API: %v, want NotFound", err)
	}
	for _, id := range []string{recent.ID, running.ID} {
		if _, err := h.srv.Job(ctx, admin, id); err != nil {
			t.Errorf("%s: %v, want it kept", id, err)
		}
	}
	h.restart() // the kept ones come back from the store; old does not
	if n := len(mustJobs(t, h.srv, admin, JobFilter{})); n != 2 {
		t.Errorf("%d jobs after a restart, want 2", n)
	}
	if _, err := New(ctx, Config{Store: h.st, Fleet: fleet, Tenancy: ten, JobRetention: 24 * time.Hour}); err == nil {
		t.Error("a retention of a day was accepted")
	}
}
