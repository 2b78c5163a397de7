package server

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// A tenant reading its job sees no other tenant's job ID, reservation
// name or tenant name in the explanations; its own names, and what the
// administrator reads, stay as the core wrote them.
func TestRedactForTenants(t *testing.T) {
	h := newHarness(t)
	mine := h.submit(copilot, chat)
	theirs := h.submit(Principal{Tenant: "acme"}, `{name: train, tenant: acme, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`)
	detail := "preempted for " + theirs.ID + " (standard) needs 8 GPUs; nodes kept for reservation \"globex-h100\" of globex (2 × ND96-H100x8-IB in westeurope); " +
		mine.ID + " of copilot waits; 2026-06-01T12:05:00Z"
	j := *mine
	j.Status.Detail = detail
	j.Status.Attempts = []model.Attempt{{Number: 1, Reason: "Preempted", Detail: detail}}

	got := h.srv.ForViewer(copilot, &j)
	want := "preempted for another tenant's job (standard) needs 8 GPUs; nodes kept for reservation \"another tenant's reservation\" of another tenant (2 × ND96-H100x8-IB in westeurope); " +
		mine.ID + " of copilot waits; 2026-06-01T12:05:00Z"
	if got.Status.Detail != want || got.Status.Attempts[0].Detail != want {
		t.Fatalf("tenant reads\n%q\n%q\nwant\n%q", got.Status.Detail, got.Status.Attempts[0].Detail, want)
	}
	if j.Status.Detail != detail || j.Status.Attempts[0].Detail != detail {
		t.Fatal("the job itself was changed")
	}
	if a := h.srv.ForViewer(admin, &j); a.Status.Detail != detail {
		t.Fatalf("admin reads %q", a.Status.Detail)
	}
	// A name that ends a sentence is still a name.
	if got := h.srv.redact("copilot", "kept for "+theirs.ID+". Owner acme..."); got != "kept for another tenant's job. Owner another tenant..." {
		t.Fatalf("copilot reads %q", got)
	}
	// The owner of the other objects reads them by name.
	if got := h.srv.redact("acme", detail); !strings.Contains(got, theirs.ID) || strings.Contains(got, mine.ID) || !strings.Contains(got, "of another tenant waits") {
		t.Fatalf("acme reads %q", got)
	}
}

// The whole path: hobbyist's spot work on eastus's T4 nodes is preempted
// for copilot's job; hobbyist reads its job without copilot's job ID or
// name, the administrator reads both.
func TestPreemptedTenantDoesNotLearnWhoFor(t *testing.T) {
	h := newHarness(t)
	hobbyist := Principal{Tenant: "hobbyist"}
	spot := h.submit(hobbyist, `{name: sweep, tenant: hobbyist, priority: spot, resources: {instance_count: 2, gpus_per_instance: 4, gpu_models: [T4]}, placement: {regions: [eastus]}}`)
	h.cycle()
	if j := h.job(spot.ID); j.Status.State != model.StateRunning && j.Status.State != model.StatePreparing {
		t.Fatalf("spot job %s: %s", j.Status.State, j.Status.Detail)
	}
	h.clock.Advance(time.Hour)
	big := h.submit(copilot, `{name: secret-project, tenant: copilot, resources: {instance_count: 2, gpus_per_instance: 4, gpu_models: [T4]}, placement: {regions: [eastus]}}`)
	h.cycle()
	seen := func(p Principal) string {
		j, err := h.srv.Job(t.Context(), p, spot.ID)
		if err != nil {
			t.Fatal(err)
		}
		j = h.srv.ForViewer(p, j)
		text := j.Status.Detail
		for _, a := range j.Status.Attempts {
			text += "\n" + a.Detail
		}
		return text
	}
	all := seen(admin)
	if !strings.Contains(all, big.ID) {
		t.Fatalf("no preemption for %s recorded:\n%s", big.ID, all)
	}
	if got := seen(hobbyist); strings.Contains(got, "secret-project") || strings.Contains(got, "copilot") ||
		!strings.Contains(got, "another tenant's job") {
		t.Fatalf("hobbyist reads:\n%s", got)
	}
}
