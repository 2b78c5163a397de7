package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

func TestPageJobsOneRevision(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	var want []string
	for i := range 7 {
		j := h.submit(admin, fmt.Sprintf(`{name: p%d, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4]}}`, i))
		want = append(want, j.ID)
	}
	h.submit(admin, `{name: other, tenant: research, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	slices.Sort(want)
	var got []string
	var from *JobCursor
	for pages := 0; ; pages++ {
		page, err := h.srv.PageJobs(ctx, copilot, JobQuery{Name: "p*"}, from, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Jobs) > 3 {
			t.Fatalf("page of %d", len(page.Jobs))
		}
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if page.Next == nil {
			break
		}
		from = page.Next
		if pages == 0 {
			// Changes after the first page are not seen by this listing.
			h.submit(admin, `{name: p0a, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
			if _, err := h.srv.Cancel(ctx, admin, want[5]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
	if _, err := h.srv.PageJobs(ctx, copilot, JobQuery{}, nil, 0); !isCode(err, CodeInvalidSpec) {
		t.Errorf("limit 0: %v", err)
	}
	if _, err := h.srv.PageJobs(ctx, copilot, JobQuery{}, &JobCursor{Rev: 1 << 40, After: "x"}, 5); !isCode(err, CodeInvalidSpec) {
		t.Errorf("a cursor from the future: %v", err)
	}
	// A selective query over many jobs still answers with a cursor.
	q := JobQuery{States: []model.State{model.StateCanceled}}
	page, err := h.srv.PageJobs(ctx, admin, q, nil, 1)
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != want[5] {
		t.Errorf("Canceled page: %v %v", page.Jobs, err)
	}
}

func TestJobQueryMatch(t *testing.T) {
	j := &model.Job{Spec: model.JobSpec{Name: "train-llama-7b", Tenant: "acme"}, Status: model.JobStatus{State: model.StateRunning}}
	for _, c := range []struct {
		q    JobQuery
		want bool
	}{
		{JobQuery{}, true},
		{JobQuery{Name: "llama"}, true},
		{JobQuery{Name: "train-*"}, true},
		{JobQuery{Name: "llama*"}, false},
		{JobQuery{Name: "train-llama-?b"}, true},
		{JobQuery{States: []model.State{model.StateQueued, model.StateRunning}}, true},
		{JobQuery{States: []model.State{model.StateQueued}}, false},
		{JobQuery{Tenant: "acme", Name: "7b"}, true},
		{JobQuery{Tenant: "globex"}, false},
		{JobQuery{Name: "*llama-[7]b"}, true},
		{JobQuery{Name: "sweep[3]"}, false},
	} {
		if got := c.q.Match(j); got != c.want {
			t.Errorf("%+v.Match = %v, want %v", c.q, got, c.want)
		}
	}
	arr := &model.Job{Spec: model.JobSpec{Name: "sweep[3]"}}
	if !(JobQuery{Name: "sweep[3]"}).Match(arr) || !(JobQuery{Name: "sweep\\[*"}).Match(arr) {
		t.Error("an array job's name does not match as written, or escaped in a glob")
	}
	if CheckNamePattern("a[") == nil || CheckNamePattern("a[b-c]*") != nil || CheckNamePattern("plain") != nil {
		t.Error("CheckNamePattern")
	}
}

func TestHoldKeepsJobOutOfCycles(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	j := h.submit(admin, chat)
	if _, err := h.srv.Hold(ctx, Principal{Tenant: "research"}, j.ID); !isCode(err, CodeForbidden) {
		t.Fatalf("another tenant held the job: %v", err)
	}
	if _, err := h.srv.Hold(ctx, copilot, j.ID); err != nil {
		t.Fatal(err)
	}
	h.cycle()
	h.cycle()
	if got := h.job(j.ID); got.Status.State != model.StateQueued || got.Status.Reason != ReasonHeld || !got.Status.Held {
		t.Fatalf("held job after cycles: %s %s", got.Status.State, got.Status.Reason)
	}
	h.restart()
	h.cycle()
	if got := h.job(j.ID); got.Status.State != model.StateQueued || !got.Status.Held {
		t.Fatalf("the hold did not survive a restart: %s held=%v", got.Status.State, got.Status.Held)
	}
	if _, err := h.srv.SetPriority(ctx, copilot, j.ID, model.Priority{Class: model.ClassSpot, Value: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Release(ctx, copilot, j.ID); err != nil {
		t.Fatal(err)
	}
	h.cycle()
	got := h.job(j.ID)
	if got.Status.State == model.StateQueued || got.Spec.Priority != (model.Priority{Class: model.ClassSpot, Value: 3}) {
		t.Fatalf("released job: %s, priority %v", got.Status.State, got.Spec.Priority)
	}
	for name, err := range map[string]error{
		"hold":     func() error { _, err := h.srv.Hold(ctx, copilot, j.ID); return err }(),
		"priority": func() error { _, err := h.srv.SetPriority(ctx, copilot, j.ID, model.Priority{}); return err }(),
	} {
		if !isCode(err, CodeConflict) {
			t.Errorf("%s of a started job: %v, want Conflict", name, err)
		}
	}
}

func TestGPUSeconds(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	j := &model.Job{Spec: model.JobSpec{Resources: model.Resources{InstanceCount: 2, GPUsPerInstance: 4}},
		Status: model.JobStatus{Attempts: []model.Attempt{
			{Number: 1, Started: at(0), Ended: at(60)},
			{Number: 2, Started: at(90)}, // running
		}}}
	for _, c := range []struct {
		since, until int
		want         float64
		n            int
	}{
		{0, 120, (60 + 30) * 60 * 8, 2},
		{30, 60, 30 * 60 * 8, 1},
		{60, 90, 0, 0},
		{-60, 0, 0, 0},
	} {
		got, n := GPUSeconds(j, at(c.since), at(c.until))
		if math.Abs(got-c.want) > 1e-6 || n != c.n {
			t.Errorf("[%d,%d): %v GPU-s over %d attempts, want %v over %d", c.since, c.until, got, n, c.want, c.n)
		}
	}
	quarter := &model.Job{Spec: model.JobSpec{Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUMilli: 250}},
		Status: model.JobStatus{State: model.StateSucceeded, EndedAt: at(40), Attempts: []model.Attempt{{Number: 1, Started: at(0)}}}}
	if got, _ := GPUSeconds(quarter, at(0), at(120)); math.Abs(got-40*60*0.25) > 1e-6 {
		t.Errorf("a quarter GPU for 40 minutes: %v GPU-s", got)
	}
}

func TestTokenExpiryAndRevoke(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tok, info, err := h.srv.CreateTokenFor(ctx, TokenOptions{Tenant: "acme", Name: "ci", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.srv.Authenticate(tok); !ok {
		t.Fatal("a fresh token is refused")
	}
	h.clock.Advance(time.Hour)
	if _, ok := h.srv.Authenticate(tok); ok {
		t.Fatal("an expired token is accepted")
	}
	if at, ok := h.srv.TokenExpired(tok); !ok || !at.Equal(t0.Add(time.Hour)) {
		t.Fatalf("TokenExpired = %v %v", at, ok)
	}
	h.restart()
	if _, ok := h.srv.Authenticate(tok); ok {
		t.Fatal("an expired token is accepted after a restart")
	}
	node, _, err := h.srv.CreateTokenFor(ctx, TokenOptions{Node: "eastus-t4x4-01", Name: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.srv.Authenticate(node); !ok {
		t.Fatal("a node token is refused")
	}
	toks, err := h.srv.Tokens(ctx)
	if err != nil || len(toks) != 2 || toks[0].ID != info.ID || toks[1].Kind != "node" {
		t.Fatalf("Tokens = %+v, %v", toks, err)
	}
	if !toks[0].LastUsed.IsZero() || !toks[1].LastUsed.Equal(h.clock.Now()) {
		t.Errorf("last used: %v (expired, unused since the restart), %v (want now)", toks[0].LastUsed, toks[1].LastUsed)
	}
	if _, err := h.srv.RevokeToken(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.srv.Authenticate(node); ok {
		t.Fatal("a revoked token is accepted")
	}
	if _, err := h.srv.RevokeToken(ctx, "n1"); !isCode(err, CodeNotFound) {
		t.Fatalf("revoking twice: %v", err)
	}
	for _, o := range []TokenOptions{{Tenant: "acme", TTL: -time.Second}, {Tenant: "acme", TTL: time.Millisecond},
		{Tenant: "acme", Name: "a b"}, {Tenant: "nobody"}, {Node: "nowhere"}, {}} {
		if _, _, err := h.srv.CreateTokenFor(ctx, o); !isCode(err, CodeInvalidSpec) {
			t.Errorf("CreateTokenFor(%+v): %v, want InvalidSpec", o, err)
		}
	}
}
