package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/store"
)

// With a job retention, a purge deletes the jobs that ended longer ago
// than it, from the store and the cache, and keeps those that ended since
// and those that have not ended; a report by job over a period before the
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
	if w := h.srv.RetentionWarning(h.clock.Now().Add(-30*24*time.Hour), h.clock.Now(), ByJob); w != "" {
		t.Errorf("a report within the retention warns %q", w)
	}
	if w := h.srv.RetentionWarning(h.clock.Now().Add(-50*24*time.Hour), h.clock.Now(), ByJob); !strings.Contains(w, "--job-retention 960h0m0s") {
		t.Errorf("a report by job before the retention: warning %q", w)
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

// Purging keeps the bills: cost by tenant, region and SKU, usage by tenant
// and a reservation's use over whole UTC days read the same after the jobs
// are deleted (from the roll-ups), across a restart; a report by job lacks
// them and says so, as does one over part of a day before the retention.
func TestPurgeKeepsTheBills(t *testing.T) {
	const retention = 40 * 24 * time.Hour
	h := &harness{t: t, dir: t.TempDir(), clock: NewManualClock(t0)}
	fleet, ten := servertest.Example(t)
	h.st = servertest.Store(t, h.dir)
	open := func() {
		var err error
		h.srv, err = New(context.Background(), Config{Store: h.st, Fleet: fleet, Tenancy: ten, Clock: h.clock, JobRetention: retention})
		if err != nil {
			t.Fatal(err)
		}
	}
	open()
	ctx := context.Background()
	// Three jobs across UTC midnights (t0 is noon): a T4 quarter of
	// copilot's and an A100 of acme's for 36 hours, and 8 H100s in globex's
	// reservation for 66.
	chatJob := h.submit(copilot, chat)
	acmeJob := h.submit(admin, `{name: a100, tenant: acme, resources: {gpus_per_instance: 1, gpu_models: [A100]}}`)
	resJob := h.submit(admin, `{name: res, tenant: globex, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {reservation: globex-h100}}`)
	h.cycle()
	for _, id := range []string{chatJob.ID, acmeJob.ID, resJob.ID} {
		if st := h.job(id).Status.State; st != model.StateRunning {
			t.Fatalf("%s is %s", id, st)
		}
	}
	h.clock.Advance(36 * time.Hour)
	for _, id := range []string{chatJob.ID, acmeJob.ID} {
		if _, err := h.srv.Cancel(ctx, admin, id); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(30 * time.Hour)
	if _, err := h.srv.Cancel(ctx, admin, resJob.ID); err != nil {
		t.Fatal(err)
	}
	since, until := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	report := func() (map[string]CostRow, []AccountingRow, ReservationUse) {
		t.Helper()
		costs := map[string]CostRow{}
		for _, by := range []string{ByTenant, ByRegion, BySKU} {
			rows, err := h.srv.Cost(ctx, admin, CostQuery{Since: since, Until: until, By: by})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				costs[by+":"+r.key()] = r
			}
		}
		usage, err := h.srv.Accounting(ctx, admin, AccountingQuery{Since: since, Until: until, By: ByTenant})
		if err != nil {
			t.Fatal(err)
		}
		_, use, err := h.srv.ReservationUse(ctx, admin, "globex-h100")
		if err != nil {
			t.Fatal(err)
		}
		commitments, err := h.srv.ReservationCosts(ctx, admin, "globex", since, until)
		if err != nil || len(commitments) != 1 || !near(commitments[0].Used, use.Used) {
			t.Fatalf("the cost report's commitment of globex-h100: %+v, %v; want %.1f GPU-hours used", commitments, err, use.Used)
		}
		return costs, usage, use
	}
	h.clock.Advance(45 * 24 * time.Hour)
	costs, usage, use := report()
	if len(costs) < 7 || len(usage) != 3 || use.Used != 8*66 || use.Jobs != 1 || use.Pricing != "reserved-1y" || use.Rate <= 0 {
		t.Fatalf("before the purge: %d cost rows, usage %+v, reservation used %.1f GPU-hours by %d jobs", len(costs), usage, use.Used, use.Jobs)
	}
	if n, err := h.srv.purgeEnded(ctx, h.clock.Now()); err != nil || n != 3 {
		t.Fatalf("%d purged, %v; want 3", n, err)
	}
	for _, restart := range []bool{false, true} {
		if restart {
			if err := h.st.Close(); err != nil {
				t.Fatal(err)
			}
			h.st = servertest.Store(t, h.dir)
			open()
		}
		after, afterUsage, afterUse := report()
		if len(after) != len(costs) {
			t.Fatalf("restart %v: %d cost rows after the purge, want %d: %v", restart, len(after), len(costs), after)
		}
		for k, want := range costs {
			got := after[k]
			if !near(got.USD, want.USD) || !near(got.GPUHours, want.GPUHours) || got.Attempts != want.Attempts || len(got.ByKind) != len(want.ByKind) {
				t.Errorf("restart %v: %s: %+v, want %+v", restart, k, got, want)
			}
			for kind, usd := range want.ByKind {
				if !near(got.ByKind[kind], usd) {
					t.Errorf("restart %v: %s %s: %v, want %v", restart, k, kind, got.ByKind[kind], usd)
				}
			}
		}
		for i, want := range usage {
			if got := afterUsage[i]; got.Tenant != want.Tenant || got.Jobs != want.Jobs || got.Attempts != want.Attempts || !near(got.GPUHours, want.GPUHours) {
				t.Errorf("restart %v: usage %+v, want %+v", restart, got, want)
			}
		}
		if !near(afterUse.Used, use.Used) || afterUse.Jobs != use.Jobs {
			t.Errorf("restart %v: reservation used %.2f by %d jobs, want %.2f by %d", restart, afterUse.Used, afterUse.Jobs, use.Used, use.Jobs)
		}
	}
	if rows, err := h.srv.Cost(ctx, admin, CostQuery{Since: since, Until: until, By: ByJob}); err != nil || len(rows) != 0 {
		t.Errorf("by job after the purge: %+v, %v", rows, err)
	}
	if w := h.srv.RetentionWarning(since, until, ByJob); !strings.Contains(w, "does not list them") {
		t.Errorf("by job: warning %q", w)
	}
	if w := h.srv.RetentionWarning(since, until, ByTenant); w != "" {
		t.Errorf("whole days by tenant: warning %q", w)
	}
	if w := h.srv.RetentionWarning(t0, until, ByTenant); !strings.Contains(w, "not on 2026-06-01") {
		t.Errorf("from noon: warning %q", w)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// A purge of jobs of many tenants, each across a month's end, writes its
// deletes and roll-ups in transactions of at most deleteBatch operations,
// and the roll-ups add up to what the jobs ran.
func TestUsageBatchesFitATransaction(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	start := time.Date(2026, 5, 31, 18, 0, 0, 0, time.UTC)
	var refs []store.KV
	for i := range 150 {
		j := &model.Job{ID: fmt.Sprintf("j%03d", i), Spec: model.JobSpec{Name: "j", Tenant: []string{"copilot", "acme", "globex"}[i%3],
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1}}}
		j.Status = model.JobStatus{State: model.StateSucceeded, SubmittedAt: start, EndedAt: start.Add(12 * time.Hour),
			Attempts: []model.Attempt{{Number: 1, Nodes: []string{"eastus-t4x1-01"}, Started: start, Ended: start.Add(12 * time.Hour),
				Pricing: "on-demand", Rates: []float64{2}}}}
		rev, err := h.st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(prefixJobs+j.ID, encodeJob(j))}})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, store.KV{Key: prefixJobs + j.ID, ModRev: rev})
	}
	batches, err := h.srv.usageBatches(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	w := h.srv.world()
	tb := price.NewTable(w.fleet)
	purged := 0
	for _, b := range batches {
		keys := map[string]bool{}
		for _, kv := range b {
			j, _ := decodeJob(kv.Value)
			for _, k := range usageKeys(j) {
				keys[k] = true
			}
		}
		if ops := len(b) + len(keys); ops > deleteBatch || len(keys) != 6 {
			t.Errorf("a batch of %d jobs and %d roll-ups (%d operations; want at most %d, and 3 tenants × 2 months)", len(b), len(keys), ops, deleteBatch)
		}
		gone, _, err := h.srv.purgeJobs(ctx, b, w, tb)
		if err != nil {
			t.Fatal(err)
		}
		purged += len(gone)
	}
	if purged != 150 {
		t.Fatalf("%d purged, want 150", purged)
	}
	var usd, hours float64
	days := map[string]int{}
	err = h.srv.usageDays(ctx, time.Time{}, start.AddDate(1, 0, 0), func(string) bool { return true }, func(_ string, r usageRow) {
		usd += r.USD
		hours += r.GPUHours
		days[r.Kind] += r.Jobs
	})
	if err != nil || !near(usd, 150*12*2) || !near(hours, 150*12) || days["on-demand"] != 150 {
		t.Fatalf("roll-ups: $%.2f, %.1f GPU-hours, %v jobs, %v; want $3600, 1800 GPU-hours, 150 jobs", usd, hours, days, err)
	}
}
