package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
)

// A tenant's jobs not ended are bounded: a submit, batch or endpoint (its
// min_replicas) past the bound is refused whole, naming the tenant, while other tenants and the
// administrator submit on; once jobs end, the tenant submits again; a
// replay of an idempotent submit is not a new job.
func TestJobLimit(t *testing.T) {
	h := &harness{t: t, dir: t.TempDir(), clock: NewManualClock(t0)}
	fleet, ten := servertest.Example(t)
	h.st = servertest.Store(t, h.dir)
	var err error
	h.srv, err = New(context.Background(), Config{Store: h.st, Fleet: fleet, Tenancy: ten, Clock: h.clock, MaxJobsPerTenant: 5})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	doc := func(i int) model.JobSpec {
		return batchSpecs(t, fmt.Sprintf(`{name: j%d, tenant: copilot, resources: {gpus_per_instance: 8, gpu_models: [H100]}}`, i))[0]
	}
	var ids []string
	for i := range 3 {
		j, err := h.srv.Submit(ctx, copilot, doc(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if _, _, err := h.srv.SubmitBatchKeyed(ctx, copilot, "", []model.JobSpec{doc(3), doc(4), doc(5)}); !isCode(err, CodeQuotaExceeded) ||
		err.(*Error).Field != "tenant" {
		t.Fatalf("a batch of 3 over 3 of 5: %v, want QuotaExceeded naming tenant", err)
	}
	if n := len(mustJobs(t, h.srv, admin, JobFilter{Tenant: "copilot"})); n != 3 {
		t.Fatalf("%d jobs after the refused batch, want 3: a batch is all or nothing", n)
	}
	keyed, _, err := h.srv.SubmitKeyed(ctx, copilot, "k", doc(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Submit(ctx, copilot, doc(4)); err != nil {
		t.Fatalf("the fifth: %v", err)
	}
	if _, err := h.srv.Submit(ctx, copilot, doc(5)); !isCode(err, CodeQuotaExceeded) {
		t.Fatalf("the sixth: %v, want QuotaExceeded", err)
	}
	if _, err := h.srv.CreateEndpoint(ctx, copilot, parseEndpoint(t, chatEndpoint)); !isCode(err, CodeQuotaExceeded) ||
		err.(*Error).Field != "min_replicas" {
		t.Fatalf("an endpoint whose min_replicas pass the limit: %v, want QuotaExceeded naming min_replicas", err)
	}
	if _, err := h.srv.CreateEndpoint(ctx, admin, parseEndpoint(t, chatEndpoint)); !isCode(err, CodeQuotaExceeded) {
		t.Fatalf("the administrator creates copilot's endpoint past copilot's limit: %v, want QuotaExceeded: replicas are copilot's jobs", err)
	}
	if j, replayed, err := h.srv.SubmitKeyed(ctx, copilot, "k", doc(3)); err != nil || !replayed || j.ID != keyed.ID {
		t.Fatalf("a replay at the limit: %v replayed %v, %v", j, replayed, err)
	}
	other := batchSpecs(t, `{name: r, tenant: research, resources: {gpus_per_instance: 1, gpu_models: [T4]}}`)[0]
	if _, err := h.srv.Submit(ctx, Principal{Tenant: "research"}, other); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	if _, err := h.srv.Submit(ctx, admin, doc(6)); err != nil {
		t.Fatalf("the administrator for copilot: %v", err)
	}
	if _, err := h.srv.Cancel(ctx, copilot, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Cancel(ctx, copilot, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Submit(ctx, copilot, doc(7)); err != nil {
		t.Fatalf("after two ended (6 of 5 less 2): %v", err)
	}
	h.restart() // the count is the cache's, rebuilt from the store
	if got := h.srv.cache.liveOf("copilot"); got != 5 {
		t.Errorf("after a restart copilot has %d jobs not ended, want 5", got)
	}
}
