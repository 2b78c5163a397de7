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
