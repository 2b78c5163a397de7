package sched_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestIncremental drives an Incremental (checking every Plan against the
// from-scratch one) through what drivers do between cycles: hand an equal
// copy of the tenancy (no Reset) or another one (a Reset), change a node's
// health in place, copy a running job (the same job to the core), and
// hand a Snapshot with a job twice (refused: planned from scratch).
func TestIncremental(t *testing.T) {
	w := twoLeaves()
	w.Job("run", "alice").GPUs(1, 8).Submitted(Epoch).Running(Epoch, On("h-l1-1", 0, 1, 2, 3, 4, 5, 6, 7))
	w.Job("q1", "bob").GPUs(1, 8).Submitted(Epoch)
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	inc := sched.NewIncremental(sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime}), true)
	var refused []error
	inc.OnRefused = func(err error) { refused = append(refused, err) }
	clock := now
	plan := func(jobs []*model.Job, tenancy *model.Tenancy) sched.Plan {
		t.Helper()
		clock = clock.Add(time.Minute)
		p, err := inc.Plan(&sched.Snapshot{Fleet: &w.Fleet, Tenancy: tenancy, Jobs: jobs}, clock)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	jobs := func() []*model.Job { return slices.Clone(w.Jobs) }

	plan(jobs(), &w.Tenancy)
	ss := inc.Session()
	if ss == nil || inc.Held() != 1 {
		t.Fatalf("after the first Plan: session %v, %d held; want one holding run", ss, inc.Held())
	}
	same := w.Tenancy
	plan(jobs(), &same)
	if inc.Resets() != 0 {
		t.Fatalf("an equal tenancy Reset the Session")
	}
	other := w.Tenancy
	other.Tenants = other.Tenants[:1] // bob leaves
	if p := plan(jobs(), &other); inc.Resets() != 1 || len(p.Binds) != 0 {
		t.Fatalf("another tenancy: %d resets, binds %v", inc.Resets(), p.Binds)
	}
	if plan(jobs(), &w.Tenancy); inc.Resets() != 2 {
		t.Fatalf("bob back: %d resets, want 2", inc.Resets())
	}
	// The node q1 would take goes NotReady in place: nothing binds there.
	for i := range w.Fleet.Nodes {
		if w.Fleet.Nodes[i].Name != "h-l1-1" {
			w.Fleet.Nodes[i].Health = model.NodeNotReady
		}
	}
	if p := plan(jobs(), &w.Tenancy); len(p.Binds) != 0 {
		t.Fatalf("every free node NotReady, yet binds %v", p.Binds)
	}
	copied := *w.Jobs[0]
	js := jobs()
	js[0] = &copied
	plan(js, &w.Tenancy)
	if inc.Session() != ss || len(refused) != 0 {
		t.Fatalf("the Session was replaced (%v) or refused %v", inc.Session() != ss, refused)
	}
	if p := plan(append(jobs(), w.Jobs[0]), &w.Tenancy); len(refused) != 1 || len(p.Binds) != 0 {
		t.Fatalf("a job twice: refused %v, binds %v", refused, p.Binds)
	}
	if inc.Session() != nil {
		t.Fatalf("a refused Snapshot kept the Session")
	}
	for i := range w.Fleet.Nodes {
		w.Fleet.Nodes[i].Health = model.NodeReady
	}
	if p := plan(jobs(), &w.Tenancy); len(p.Binds) != 1 || p.Binds[0].Job != "q1" {
		t.Fatalf("all nodes Ready again: binds %v", p.Binds)
	}
	if _, err := inc.Plan(&sched.Snapshot{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Jobs: jobs()}, clock); errors.Is(err, sched.ErrIncremental) {
		t.Fatal(err)
	}
}
