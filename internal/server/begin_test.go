package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// A job with a begin time waits Queued (reason BeginTime, nothing held)
// until then, across a restart, with an estimated start no earlier, and
// starts in the first cycle after it; a begin time already past changes
// nothing. A pipeline step with a begin time that its predecessor freed
// early waits for its begin time too.
func TestBeginTime(t *testing.T) {
	h := newHarness(t)
	copilot := Principal{Tenant: "copilot"}
	begin := t0.Add(2 * time.Hour)
	doc := func(name, extra string) string {
		return fmt.Sprintf(`{name: %s, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [T4]}, duration: 10m%s}`, name, extra)
	}
	nightly := h.submit(copilot, doc("nightly", ", begin: "+begin.Format(time.RFC3339)))
	past := h.submit(copilot, doc("past", ", begin: 2020-01-01"))
	prep := h.submit(copilot, doc("prep", ""))
	step := h.submit(copilot, doc("step", fmt.Sprintf(", after: [%s], begin: %s", prep.ID, t0.Add(time.Hour).Format(time.RFC3339))))
	h.cycle()
	waits := func(id string, until time.Time) {
		t.Helper()
		j := h.job(id)
		if j.Status.State != model.StateQueued || j.Status.Reason != ReasonBeginTime || len(j.Status.Allocations) != 0 ||
			!strings.Contains(j.Status.Detail, until.UTC().Format(time.RFC3339)) {
			t.Fatalf("%s at %s: %s %s %q holding %v, want Queued BeginTime until %s", j.Spec.Name, h.clock.Now(), j.Status.State,
				j.Status.Reason, j.Status.Detail, j.Status.Allocations, until)
		}
		if w := h.why(id); w.EstimatedStart == nil || w.EstimatedStart.Before(until) {
			t.Errorf("%s: estimated start %v, want no earlier than %s", j.Spec.Name, w.EstimatedStart, until)
		}
	}
	runs := func(id string) {
		t.Helper()
		if j := h.job(id); !j.Status.State.Holds() {
			t.Fatalf("%s at %s: %s %s, want it started", j.Spec.Name, h.clock.Now(), j.Status.State, j.Status.Reason)
		}
	}
	waits(nightly.ID, begin)
	runs(past.ID)
	runs(prep.ID)
	if j := h.job(step.ID); j.Status.State != model.StateBlocked {
		t.Fatalf("step: %s, want Blocked behind prep", j.Status.State)
	}

	h.restart()
	if got := h.job(nightly.ID).Spec.Begin; !got.Equal(begin) {
		t.Fatalf("begin after a restart: %s, want %s", got, begin)
	}
	h.clock.Advance(15 * time.Minute) // prep ended: step is queued, and waits for its own begin time
	h.cycle()
	h.cycle()
	waits(step.ID, t0.Add(time.Hour))
	waits(nightly.ID, begin)

	h.clock.Advance(45 * time.Minute)
	h.cycle()
	runs(step.ID)
	waits(nightly.ID, begin)
	h.clock.Advance(time.Hour)
	h.cycle()
	runs(nightly.ID)
}

// job update --begin postpones a queued job, brings it forward or removes
// its begin time; a retry's back-off is not the begin's to remove, and a
// held job keeps its reason until released.
func TestUpdateBegin(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	copilot := Principal{Tenant: "copilot"}
	now := h.clock.Now()
	j := h.submit(copilot, `{name: nightly, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [T4]}, begin: `+
		now.Add(time.Hour).Format(time.RFC3339)+`}`)
	later := now.Add(5 * time.Hour)
	got, err := h.srv.UpdateQueued(ctx, copilot, j.ID, QueuedChange{Begin: &later})
	if err != nil || !got.Spec.Begin.Equal(later) || !got.HeldUntil().Equal(later) || got.Status.Reason != ReasonBeginTime ||
		!strings.Contains(got.Status.Detail, later.UTC().Format(time.RFC3339)) {
		t.Fatalf("postponed: %+v (%v), want held until %s", got.Status, err, later)
	}
	h.clock.Advance(2 * time.Hour) // past the first begin: still waits for the new one
	h.cycle()
	if got := h.job(j.ID); got.Status.State != model.StateQueued || got.Status.Reason != ReasonBeginTime {
		t.Fatalf("after the old begin time: %s %s, want still waiting", got.Status.State, got.Status.Reason)
	}
	if _, err := h.srv.Hold(ctx, copilot, j.ID); err != nil {
		t.Fatal(err)
	}
	none := time.Time{}
	got, err = h.srv.UpdateQueued(ctx, copilot, j.ID, QueuedChange{Begin: &none})
	if err != nil || !got.Spec.Begin.IsZero() || !got.HeldUntil().IsZero() || got.Status.Reason != ReasonHeld {
		t.Fatalf("begin removed from a held job: %+v (%v), want no hold of time, reason Held", got.Status, err)
	}
	if _, err := h.srv.Release(ctx, copilot, j.ID); err != nil {
		t.Fatal(err)
	}
	h.cycle()
	if got := h.job(j.ID); !got.Status.State.Holds() {
		t.Fatalf("released without a begin time: %s %s, want started", got.Status.State, got.Status.Reason)
	}

	// A back-off's hold stays when a begin time is set and removed.
	k := h.submit(copilot, `{name: retried, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [T4]}}`)
	backoff := h.clock.Now().Add(time.Minute)
	_, _, _, err = h.srv.rewriteJob(ctx, k.ID, "test", func(old *model.Job) (*model.Job, error) {
		x := cloneJob(old)
		x.Status.NotBefore, x.Status.Reason = backoff, "Retrying"
		return x, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	soon := h.clock.Now().Add(30 * time.Second)
	if _, err = h.srv.UpdateQueued(ctx, copilot, k.ID, QueuedChange{Begin: &soon}); err != nil {
		t.Fatal(err)
	}
	got, err = h.srv.UpdateQueued(ctx, copilot, k.ID, QueuedChange{Begin: &none})
	if err != nil || !got.HeldUntil().Equal(backoff) || got.Status.Reason != "Retrying" {
		t.Errorf("after setting and removing a begin time: held until %s, %s (%v), want the back-off's %s and reason kept",
			got.HeldUntil(), got.Status.Reason, err, backoff)
	}
	later = h.clock.Now().Add(time.Hour)
	if got, err = h.srv.UpdateQueued(ctx, copilot, k.ID, QueuedChange{Begin: &later}); err != nil || !got.HeldUntil().Equal(later) ||
		got.Status.Reason != ReasonBeginTime {
		t.Errorf("a begin time after the back-off: held until %s, %s (%v), want %s, BeginTime", got.HeldUntil(), got.Status.Reason, err, later)
	}
}
