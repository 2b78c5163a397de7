package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
)

func TestCreateInstance(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	create := func(r InstanceRequest) (*model.Job, error) {
		t.Helper()
		return h.srv.CreateInstance(ctx, copilot, r)
	}
	a100 := InstanceRequest{SKU: "NC24-A100x1", Region: "eastus", Count: 2}

	j, err := create(a100)
	if err != nil || j.Status.State != model.StateRunning || len(j.Status.Allocations) != 2 {
		t.Fatalf("first instance: %v %+v, want Running on 2 nodes", err, j)
	}
	if !j.Spec.IsInstance() || j.Spec.Placement.SKU != "NC24-A100x1" || j.Spec.Resources.CPUMilli != 24000 ||
		j.Spec.Resources.GPUsPerInstance != 1 || j.Spec.Duration != 0 {
		t.Errorf("instance spec %+v: want the whole NC24-A100x1 node, pinned, no duration", j.Spec)
	}

	one := a100
	one.Count = 1
	_, err = create(one)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeAllocationFailed || !strings.Contains(se.Msg, "free now in westus") {
		t.Fatalf("instance on a full region: %v, want AllocationFailed naming westus", err)
	}
	refused := mustJobs(t, h.srv, admin, JobFilter{State: model.StateCanceled})
	if len(refused) != 1 || refused[0].Status.Reason != string(CodeAllocationFailed) || len(refused[0].Status.Allocations) != 0 {
		t.Fatalf("refused instance recorded as %+v, want one Canceled AllocationFailed record holding nothing", refused)
	}
	if q := mustJobs(t, h.srv, admin, JobFilter{State: model.StateQueued}); len(q) != 0 {
		t.Errorf("%d queued jobs after AllocationFailed, want none", len(q))
	}

	one.Wait = true
	w, err := create(one)
	if err != nil || w.Status.State != model.StateQueued {
		t.Fatalf("with Wait: %v %+v, want Queued", err, w)
	}
	if _, err := h.srv.DeleteInstance(ctx, copilot, j.ID); err != nil {
		t.Fatal(err)
	}
	h.cycle()
	if got := h.job(w.ID); got.Status.State != model.StateRunning {
		t.Errorf("waiting instance after the delete: %s %s, want Running", got.Status.State, got.Status.Reason)
	}
	if _, err := h.srv.DeleteInstance(ctx, copilot, j.ID); !isCode(err, CodeConflict) {
		t.Errorf("deleting an ended instance: %v, want Conflict", err)
	}

	job := h.submit(copilot, chat)
	if _, err := h.srv.Instance(ctx, copilot, job.ID); !isCode(err, CodeNotFound) {
		t.Errorf("a job shown as an instance: %v, want NotFound", err)
	}
	if _, err := h.srv.DeleteInstance(ctx, copilot, job.ID); !isCode(err, CodeNotFound) {
		t.Errorf("a job deleted as an instance: %v, want NotFound", err)
	}
	if _, err := h.srv.Instance(ctx, Principal{Tenant: "acme"}, w.ID); !isCode(err, CodeForbidden) {
		t.Errorf("another tenant's instance: %v, want Forbidden", err)
	}
	list, err := h.srv.Instances(ctx, copilot, "", false)
	if err != nil || len(list) != 1 || list[0].ID != w.ID {
		t.Errorf("live instances %v (%v), want only %s", list, err, w.ID)
	}
	h.restart() // the record keeps the pin to the SKU
	if got := h.job(w.ID); got.Spec.Placement.SKU != "NC24-A100x1" || !got.Spec.IsInstance() {
		t.Errorf("instance after a restart: placement %+v labels %v", got.Spec.Placement, got.Spec.Labels)
	}
}

// FuzzCreateInstance: whatever is asked, a refusal before the cycle is an
// *Error naming the field and stores nothing; anything else is placed,
// or refused with the instance withdrawn, never left queued.
func FuzzCreateInstance(f *testing.F) {
	f.Add("", "NC24-A100x1", "eastus", 1, int64(0), 1, false)
	f.Add("x", "NC24-A100x1", "westus", 0, int64(0), 0, false)
	f.Add("x", "NC24-A100x1", "westus", -3, int64(0), 0, false)
	f.Add("x", "NC24-A100x1", "mars", 1, int64(0), 0, false)
	f.Add("x", "NOPE", "eastus", 1, int64(0), 0, false)
	f.Add("x", "ND96-A100x8-IB", "eastus", 1, int64(0), 0, false)
	f.Add("x", "ND96-H100x8-IB", "eastus", 65, int64(0), 0, false)
	f.Add("x", "ND96-H100x8-IB", "eastus", 9, int64(0), 0, true)
	f.Add("\x00bad", "NC4-T4x1", "westus", 1, int64(-time.Second), 0, false)
	f.Add("n", "NC4-T4x1", "westus", 1, int64(2*time.Hour), 2, false)
	f.Add("n", "", "", 1, int64(0), 7, false)
	fleet, ten := servertest.Example(f)
	srv, err := New(context.Background(), Config{Store: servertest.Store(f, f.TempDir()), Fleet: fleet, Tenancy: ten,
		Clock: NewManualClock(t0), CheckIncremental: true})
	if err != nil {
		f.Fatal(err)
	}
	h := &harness{srv: srv}
	f.Fuzz(func(t *testing.T, name, sku, region string, count int, grace int64, class int, wait bool) {
		ctx := context.Background()
		before := len(mustJobs(t, h.srv, admin, JobFilter{}))
		r := InstanceRequest{Name: name, SKU: sku, Region: region, Count: count, Grace: time.Duration(grace),
			Priority: model.Priority{Class: model.Class(class)}, Wait: wait}
		j, err := h.srv.CreateInstance(ctx, copilot, r)
		after := mustJobs(t, h.srv, admin, JobFilter{})
		if err == nil {
			if !j.Spec.IsInstance() || (!wait && !j.Status.State.Holds()) {
				t.Fatalf("created %+v", j)
			}
			if _, err := h.srv.DeleteInstance(ctx, copilot, j.ID); err != nil {
				t.Fatal(err)
			}
			return
		}
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("%+v: internal error %v", r, err)
		}
		switch se.Code {
		case CodeAllocationFailed, CodeQuotaExceeded:
			if len(after) == before+1 && after[0].Status.State == model.StateCanceled {
				return // refused by the cycle: withdrawn, holding nothing
			}
			if len(after) == before {
				return // refused by admission
			}
		}
		if se.Field == "" && se.Code != CodeQuotaExceeded && se.Code != CodeTopologyUnsatisfiable {
			t.Errorf("%+v: refusal %v names no field", r, err)
		}
		if len(after) != before {
			t.Fatalf("%+v: refused with %v but the jobs went from %d to %d", r, err, before, len(after))
		}
	})
}

// TestAllocationFailedEstimatesHere: when no region has the SKU free now,
// AllocationFailed gives the time the core expects it free here: the end
// of the work that holds it (its start plus its duration).
func TestAllocationFailedEstimatesHere(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sku := model.BuiltinCatalog()["NC24-A100x1"]
	for i, region := range []string{"eastus", "westus", "westeurope"} {
		spec := model.InstanceSpec("filler", "copilot", sku, region, 2, model.Priority{}, 0, nil)
		spec.Labels, spec.Duration = nil, time.Duration(i+1)*time.Hour
		if _, err := h.srv.Submit(ctx, copilot, spec); err != nil {
			t.Fatal(err)
		}
	}
	h.cycle()
	if q := mustJobs(t, h.srv, admin, JobFilter{State: model.StateRunning}); len(q) != 3 {
		t.Fatalf("%d fillers running, want 3", len(q))
	}
	_, err := h.srv.CreateInstance(ctx, copilot, InstanceRequest{SKU: sku.Name, Region: "westus", Count: 1})
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeAllocationFailed {
		t.Fatalf("instance with every NC24-A100x1 busy: %v, want AllocationFailed", err)
	}
	// eastus frees first (1 h), then here (2 h), then westeurope (3 h).
	want := []string{"eastus estimated free at 2026-06-01T13:00:00Z",
		"here in westus estimated free at 2026-06-01T14:00:00Z (in 2h0m0s; --wait queues for it)",
		"westeurope estimated free at 2026-06-01T15:00:00Z"}
	at := 0
	for _, w := range want {
		i := strings.Index(se.Msg[at:], w)
		if i < 0 {
			t.Fatalf("AllocationFailed %q lacks %q after position %d", se.Msg, w, at)
		}
		at += i + len(w)
	}
}

// TestCreateInstanceIdempotent: a repeated key leases nothing more and
// answers what the first request was answered, the instance as it is now
// or the same refusal; another request with the key is a Conflict.
func TestCreateInstanceIdempotent(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	a100 := InstanceRequest{SKU: "NC24-A100x1", Region: "eastus", Count: 2}
	j1, replayed, err := h.srv.CreateInstanceKeyed(ctx, copilot, "lease-1", a100)
	if err != nil || replayed || j1.Status.State != model.StateRunning {
		t.Fatalf("first create: %+v replayed %v, %v; want Running", j1, replayed, err)
	}
	h.restart() // the record is in the store, not in memory
	j2, replayed, err := h.srv.CreateInstanceKeyed(ctx, copilot, "lease-1", a100)
	if err != nil || !replayed || j2.ID != j1.ID || j2.Status.State != model.StateRunning {
		t.Fatalf("repeat: %+v replayed %v, %v; want %s Running, replayed", j2, replayed, err, j1.ID)
	}
	if n := len(mustJobs(t, h.srv, admin, JobFilter{})); n != 1 {
		t.Fatalf("%d instances after a repeated key, want 1", n)
	}

	// eastus is full now: the next request is refused, and so is its repeat,
	// with nothing more recorded.
	one := a100
	one.Count = 1
	_, replayed, err = h.srv.CreateInstanceKeyed(ctx, copilot, "lease-2", one)
	if !isCode(err, CodeAllocationFailed) || replayed {
		t.Fatalf("create on a full region: replayed %v, %v; want AllocationFailed", replayed, err)
	}
	_, replayed, err = h.srv.CreateInstanceKeyed(ctx, copilot, "lease-2", one)
	if !isCode(err, CodeAllocationFailed) || !replayed {
		t.Fatalf("repeat of the refused create: replayed %v, %v; want the same AllocationFailed, replayed", replayed, err)
	}
	if n := len(mustJobs(t, h.srv, admin, JobFilter{})); n != 2 {
		t.Fatalf("%d records after the refused create and its repeat, want 2", n)
	}

	_, _, err = h.srv.CreateInstanceKeyed(ctx, copilot, "lease-1", one)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeConflict || se.Field != IdempotencyField {
		t.Fatalf("the key with another request: %v, want Conflict naming %s", err, IdempotencyField)
	}
}

// TestInstanceByName: an instance answers to the name it was created with
// while it is the only one not ended of that name; two are told apart by
// ID, and a name nobody has is "no instance", not "no job".
func TestInstanceByName(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	box := InstanceRequest{Name: "box", SKU: "NC24-A100x1", Region: "eastus", Count: 1}
	first, err := h.srv.CreateInstance(ctx, copilot, box)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := h.srv.Instance(ctx, copilot, "box"); err != nil || j.ID != first.ID {
		t.Fatalf("show box: %v %v, want %s", j, err, first.ID)
	}
	if _, err := h.srv.Instance(ctx, Principal{Tenant: "acme"}, "box"); !isCode(err, CodeNotFound) {
		t.Errorf("another tenant's name: %v, want NotFound", err)
	}
	second, err := h.srv.CreateInstance(ctx, copilot, box)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.srv.DeleteInstance(ctx, copilot, "box")
	if !isCode(err, CodeConflict) || !strings.Contains(err.Error(), first.ID) || !strings.Contains(err.Error(), second.ID) {
		t.Fatalf("delete box with two of them: %v, want Conflict naming both IDs", err)
	}
	if _, err := h.srv.DeleteInstance(ctx, copilot, second.ID); err != nil {
		t.Fatal(err)
	}
	if j, err := h.srv.DeleteInstance(ctx, copilot, "box"); err != nil || j.ID != first.ID {
		t.Fatalf("delete box: %v %v, want %s canceled", j, err, first.ID)
	}
	_, err = h.srv.Instance(ctx, copilot, "box")
	if !isCode(err, CodeNotFound) || !strings.Contains(err.Error(), `no instance "box"`) {
		t.Errorf("box after both ended: %v, want NotFound saying no instance", err)
	}
}
