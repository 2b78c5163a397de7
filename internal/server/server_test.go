package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/bolt"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type harness struct {
	t         *testing.T
	dir       string
	st        *bolt.Store
	srv       *Server
	clock     *ManualClock
	configure func(*Config) // changes the config of every open; nil: none
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with configure's changes to the server's
// config.
func newHarnessWith(t *testing.T, configure func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: NewManualClock(t0), configure: configure}
	h.open()
	return h
}

func (h *harness) open() {
	h.t.Helper()
	fleet, ten := servertest.Example(h.t)
	h.st = servertest.Store(h.t, h.dir)
	var err error
	cfg := Config{Store: h.st, Fleet: fleet, Tenancy: ten, Clock: h.clock, CheckIncremental: true}
	if h.configure != nil {
		h.configure(&cfg)
	}
	h.srv, err = New(context.Background(), cfg)
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) restart() {
	h.t.Helper()
	if err := h.st.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
}

func (h *harness) cycle() {
	h.t.Helper()
	if err := h.srv.Cycle(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) submit(p Principal, doc string) *model.Job {
	h.t.Helper()
	specs, err := spec.ParseJobs("test", []byte(doc), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	j, err := h.srv.Submit(context.Background(), p, specs[0])
	if err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	return j
}

func (h *harness) job(id string) *model.Job {
	h.t.Helper()
	j, err := h.srv.Job(h.t.Context(), admin, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

var (
	admin   = Principal{Admin: true}
	copilot = Principal{Tenant: "copilot"}
)

const chat = `{name: chat, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4], cpu: 2, memory: 8Gi}, placement: {regions: [eastus]}}`

func TestSubmitCycleRuns(t *testing.T) {
	h := newHarness(t)
	j := h.submit(copilot, chat)
	if j.Status.State != model.StateQueued || !j.Status.SubmittedAt.Equal(t0) {
		t.Fatalf("submitted job: %+v", j.Status)
	}
	h.clock.Advance(time.Second)
	h.cycle()
	got := h.job(j.ID)
	if got.Status.State != model.StateRunning {
		t.Fatalf("state %s (%s: %s), want Running", got.Status.State, got.Status.Reason, got.Status.Detail)
	}
	if !got.Status.StartedAt.Equal(t0.Add(time.Second)) || len(got.Status.Allocations) != 1 || len(got.Status.Attempts) != 1 {
		t.Fatalf("running job: %+v", got.Status)
	}
	if !h.srv.Ready() {
		t.Fatal("not ready after a cycle")
	}
}

func TestSubmitRefusals(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name string
		p    Principal
		doc  string
		code Code
	}{
		{"no such GPU", copilot, `{name: x, tenant: copilot, resources: {gpu_models: [Z999]}}`, CodeSkuNotAvailable},
		{"too big for any node", copilot, `{name: x, tenant: copilot, resources: {gpus_per_instance: 16}}`, CodeSkuNotAvailable},
		{"over quota alone", Principal{Tenant: "acme"}, `{name: x, tenant: acme, resources: {instance_count: 4, gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`, CodeQuotaExceeded},
		{"other tenant", copilot, `{name: x, tenant: acme, resources: {gpus_per_instance: 1}}`, CodeForbidden},
		{"unknown tenant", admin, `{name: x, tenant: nobody, resources: {gpus_per_instance: 1}}`, CodeInvalidSpec},
		{"larger than the fleet", copilot, `{name: x, tenant: copilot, resources: {instance_count: 100, gpus_per_instance: 8, gpu_models: [H100]}}`, CodeSkuNotAvailable},
		{"no IB for T4", copilot, `{name: x, tenant: copilot, resources: {instance_count: 2, gpus_per_instance: 4, gpu_models: [T4]}, placement: {interconnect: infiniband}}`, CodeTopologyUnsatisfiable},
		{"residency", Principal{Tenant: "globex"}, `{name: x, tenant: globex, resources: {gpus_per_instance: 8, gpu_models: [A100]}, placement: {residency: eu}}`, CodeResidencyForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := spec.ParseJobs("t", []byte(tc.doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.srv.Submit(context.Background(), tc.p, specs[0])
			var se *Error
			if !errors.As(err, &se) || se.Code != tc.code {
				t.Fatalf("err %v, want code %s", err, tc.code)
			}
		})
	}
	if n := len(mustJobs(t, h.srv, admin, JobFilter{})); n != 0 {
		t.Fatalf("%d jobs stored after refusals", n)
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t)
	j := h.submit(copilot, chat)
	h.cycle()
	if _, err := h.srv.Cancel(context.Background(), Principal{Tenant: "acme"}, j.ID); !isCode(err, CodeForbidden) {
		t.Fatalf("cancel by another tenant: %v", err)
	}
	c, err := h.srv.Cancel(context.Background(), copilot, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.State != model.StateCanceled || c.Status.Allocations != nil || c.Status.EndedAt.IsZero() {
		t.Fatalf("canceled job: %+v", c.Status)
	}
	if _, err := h.srv.Cancel(context.Background(), copilot, j.ID); !isCode(err, CodeConflict) {
		t.Fatalf("second cancel: %v", err)
	}
	h.cycle()
	if got := h.job(j.ID); got.Status.State != model.StateCanceled {
		t.Fatalf("after a cycle: %s", got.Status.State)
	}
}

func TestSimulatedCompletion(t *testing.T) {
	h := newHarness(t)
	j := h.submit(copilot, `{name: short, tenant: copilot, duration: 1h, resources: {gpu_models: [T4]}}`)
	h.cycle()
	h.clock.Advance(59 * time.Minute)
	h.cycle()
	if s := h.job(j.ID).Status.State; s != model.StateRunning {
		t.Fatalf("after 59m: %s", s)
	}
	h.clock.Advance(time.Minute)
	h.cycle()
	got := h.job(j.ID)
	if got.Status.State != model.StateSucceeded || got.Status.Allocations != nil || !got.Status.EndedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after 1h: %+v", got.Status)
	}
}

// TestStalePlanReplans changes a job behind the cycle's back between its
// snapshot and its commit: the commit must fail and the cycle plan again.
func TestStalePlanReplans(t *testing.T) {
	h := newHarness(t)
	a := h.submit(copilot, chat)
	b := h.submit(copilot, chat)
	fired := false
	beforeCommit = func() {
		if fired {
			return
		}
		fired = true
		// Cancel a directly in the store, as another writer would.
		kv, err := h.st.Get(context.Background(), prefixJobs+a.ID)
		if err != nil {
			t.Error(err)
			return
		}
		old, _ := decodeJob(kv.Value)
		c := endJob(old, model.StateCanceled, "Canceled", "behind the cycle's back", -1, t0)
		if _, err := h.st.Txn(context.Background(), store.Txn{If: []store.Cond{store.ModRevIs(kv.Key, kv.ModRev)},
			Then: []store.Op{store.PutOp(kv.Key, encodeJob(c))}}); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { beforeCommit = nil })
	h.cycle()
	if !fired {
		t.Fatal("hook did not run")
	}
	if s := h.job(a.ID).Status.State; s != model.StateCanceled {
		t.Fatalf("a: %s, want Canceled (the stale plan bound it)", s)
	}
	if s := h.job(b.ID).Status.State; s != model.StateRunning {
		t.Fatalf("b: %s, want Running after the re-plan", s)
	}
}

// reserveLater reserves copilot 4 eastus H100 nodes from a day on and
// returns a job that waits for them (ReservationNotActive).
func reserveLater(h *harness) string {
	h.t.Helper()
	r := model.Reservation{Name: "later", Owner: "copilot", SKU: "ND96-H100x8-IB", Region: "eastus", Count: 4,
		Start: t0.Add(24 * time.Hour), End: t0.Add(48 * time.Hour)}
	if _, _, err := h.srv.CreateReservation(h.t.Context(), admin, r); err != nil {
		h.t.Fatal(err)
	}
	return `{name: big, tenant: copilot, resources: {instance_count: 4, gpus_per_instance: 8, gpu_models: [H100]}, placement: {reservation: later}}`
}

func TestRestartRebuilds(t *testing.T) {
	h := newHarness(t)
	var ids []string
	for range 5 {
		ids = append(ids, h.submit(copilot, chat).ID)
	}
	big := h.submit(copilot, reserveLater(h))
	h.cycle()
	before := map[string]model.JobStatus{}
	for _, id := range append(ids, big.ID) {
		before[id] = h.job(id).Status
	}
	if before[big.ID].Reason == "" {
		t.Fatalf("big job has no pending reason: %+v", before[big.ID])
	}
	h.restart()
	for id, st := range before {
		got := h.job(id).Status
		if got.State != st.State || got.Reason != st.Reason || len(got.Allocations) != len(st.Allocations) {
			t.Fatalf("%s after restart: %+v, before %+v", id, got, st)
		}
	}
	h.cycle() // resumes: must not bind anything twice
	checkNoDoubleBinding(t, mustJobs(t, h.srv, admin, JobFilter{}))
	for _, id := range ids {
		if s := h.job(id).Status; s.State != model.StateRunning || len(s.Attempts) != 1 {
			t.Fatalf("%s after restart and a cycle: %+v", id, s)
		}
	}
}

func TestPendingReasonWrittenOnlyWhenChanged(t *testing.T) {
	h := newHarness(t)
	big := h.submit(copilot, reserveLater(h))
	h.cycle()
	_, rev1, _ := h.srv.cache.job(big.ID)
	h.cycle()
	h.cycle()
	_, rev2, _ := h.srv.cache.job(big.ID)
	if rev1 != rev2 {
		t.Fatalf("unchanged pending job rewritten: mod rev %d -> %d", rev1, rev2)
	}
	w, err := h.srv.Explain(t.Context(), copilot, big.ID)
	if err != nil || w.Job.Status.Reason == "" {
		t.Fatalf("why: %+v %v", w, err)
	}
}

func TestManyJobsNoDoubleBinding(t *testing.T) {
	h := newHarness(t)
	docs := []string{
		chat,
		`{name: t, tenant: research, priority: spot, duration: 2h, resources: {gpus_per_instance: 1, gpu_models: [T4]}}`,
		`{name: h, tenant: copilot, duration: 3h, resources: {instance_count: 2, gpus_per_instance: 8, gpu_models: [H100]}, placement: {interconnect: infiniband}}`,
		`{name: a, tenant: acme, duration: 1h, resources: {gpus_per_instance: 4, gpu_models: [A100]}}`,
	}
	for i := range 60 {
		h.submit(Principal{Admin: true}, docs[i%len(docs)])
		if i%7 == 0 {
			h.clock.Advance(20 * time.Minute)
			h.cycle()
			checkNoDoubleBinding(t, mustJobs(t, h.srv, admin, JobFilter{}))
		}
	}
	for range 20 {
		h.clock.Advance(30 * time.Minute)
		h.cycle()
		checkNoDoubleBinding(t, mustJobs(t, h.srv, admin, JobFilter{}))
	}
}

// checkNoDoubleBinding fails when a GPU holds more than one whole GPU's
// worth of work, or a running job lacks an allocation per instance.
func checkNoDoubleBinding(t *testing.T, jobs []*model.Job) {
	t.Helper()
	type gpu struct {
		node string
		i    int
	}
	used := map[gpu]int64{}
	for _, j := range jobs {
		if !j.Status.State.Holds() {
			if len(j.Status.Allocations) != 0 {
				t.Fatalf("%s is %s with allocations", j.ID, j.Status.State)
			}
			continue
		}
		if len(j.Status.Allocations) != j.Spec.Resources.InstanceCount {
			t.Fatalf("%s holds %d allocations for %d instances", j.ID, len(j.Status.Allocations), j.Spec.Resources.InstanceCount)
		}
		for _, a := range j.Status.Allocations {
			for _, g := range a.GPUs {
				used[gpu{a.Node, g}] += a.GPUMilli
				if used[gpu{a.Node, g}] > model.MilliPerGPU {
					t.Fatalf("GPU %s/%d bound beyond capacity (last: %s)", a.Node, g, j.ID)
				}
			}
		}
	}
}

func isCode(err error, c Code) bool {
	var se *Error
	return errors.As(err, &se) && se.Code == c
}

func TestReservationsAndTokens(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	now := h.clock.Now()
	r := model.Reservation{Name: "acme-t4", SKU: "NC64-T4x4", Region: "eastus", Count: 1, Start: now, End: now.Add(24 * time.Hour)}
	if _, _, err := h.srv.CreateReservation(ctx, Principal{Tenant: "acme"}, r); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.srv.CreateReservation(ctx, Principal{Tenant: "acme"}, r); !isCode(err, CodeConflict) {
		t.Fatalf("duplicate: %v", err)
	}
	found := false
	for _, x := range h.srv.Tenancy().Reservations {
		found = found || (x.Name == "acme-t4" && x.Owner == "acme")
	}
	if !found {
		t.Fatal("API reservation missing from the tenancy the core sees")
	}
	if err := h.srv.DeleteReservation(ctx, copilot, "acme-t4"); !isCode(err, CodeForbidden) {
		t.Fatalf("delete by another tenant: %v", err)
	}
	if err := h.srv.DeleteReservation(ctx, admin, "globex-h100"); !isCode(err, CodeConflict) {
		t.Fatalf("delete of a file reservation: %v", err)
	}
	tok, err := h.srv.CreateToken(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	h.restart()
	if p, ok := h.srv.Authenticate(tok); !ok || p.Tenant != "acme" {
		t.Fatalf("token after restart: %+v %v", p, ok)
	}
	if err := h.srv.DeleteReservation(ctx, Principal{Tenant: "acme"}, "acme-t4"); err != nil {
		t.Fatal(err)
	}
	admTok, created, err := h.srv.EnsureAdminToken(ctx, filepath.Join(h.dir, "admin-token"))
	if err != nil || !created {
		t.Fatal(err, created)
	}
	h.restart()
	again, created, err := h.srv.EnsureAdminToken(ctx, filepath.Join(h.dir, "admin-token"))
	if err != nil || created || again != admTok {
		t.Fatalf("second start: %q %v %v", again, created, err)
	}
	if p, ok := h.srv.Authenticate(admTok); !ok || !p.Admin {
		t.Fatal("admin token not valid")
	}
}

func TestEstimate(t *testing.T) {
	h := newHarness(t)
	// Fill every eastus T4 GPU (10) with jobs of one hour, then ask for one more.
	for range 10 {
		h.submit(copilot, `{name: f, tenant: copilot, duration: 1h, resources: {gpu_models: [T4]}, placement: {regions: [eastus]}}`)
	}
	h.cycle()
	j := h.submit(copilot, `{name: w, tenant: copilot, resources: {gpu_models: [T4]}, placement: {regions: [eastus]}}`)
	h.clock.Advance(10 * time.Minute)
	h.cycle()
	w, err := h.srv.Explain(t.Context(), copilot, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Job.Status.State != model.StateQueued || w.EstimatedStart == nil || !w.EstimatedStart.Equal(t0.Add(time.Hour)) {
		t.Fatalf("why: state %s reason %s, estimate %v, want %v", w.Job.Status.State, w.Job.Status.Reason, w.EstimatedStart, t0.Add(time.Hour))
	}
}

// mustJobs lists jobs as p sees them, failing the test on a store error.
func mustJobs(t testing.TB, srv *Server, p Principal, f JobFilter) []*model.Job {
	t.Helper()
	jobs, err := srv.Jobs(t.Context(), p, f)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// wholeJob returns job id whole, read from the store when the cache keeps
// it compact.
func wholeJob(t testing.TB, srv *Server, id string) *model.Job {
	t.Helper()
	j, err := srv.Job(t.Context(), Principal{Admin: true}, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestSubmitNeedsCommandWithAgents checks that a job without a command is
// refused when agents run the jobs (it could only fail), and accepted by
// simulated nodes, which run nothing.
func TestSubmitNeedsCommandWithAgents(t *testing.T) {
	h := newHarness(t)
	doc := `{name: x, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4]}}`
	specs, err := spec.ParseJobs("t", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Submit(context.Background(), copilot, specs[0]); err != nil {
		t.Fatalf("simulated nodes: %v, want the job accepted", err)
	}
	h.srv.agentMode = true
	_, err = h.srv.Submit(context.Background(), copilot, specs[0])
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeInvalidSpec || se.Field != "command" {
		t.Fatalf("agents: %v, want InvalidSpec naming command", err)
	}
}

func TestUnknownTenantSuggested(t *testing.T) {
	h := newHarness(t)
	specs, err := spec.ParseJobs("t", []byte(`{name: x, tenant: copilt, resources: {gpus_per_instance: 1}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.srv.Submit(context.Background(), admin, specs[0])
	var se *Error
	if !errors.As(err, &se) || se.Msg != `unknown tenant "copilt" (did you mean copilot?)` {
		t.Fatalf("err %v, want the tenant meant", err)
	}
}

// TestKicksCycle: a change the next cycle may decide on asks for one;
// jobs (the loop follows them), the fence and records nothing reads to
// plan do not.
func TestKicksCycle(t *testing.T) {
	for key, want := range map[string]bool{
		prefixReservations + "r1": true, prefixNodes + "h100-01": true, prefixQuotas + "acme/eastus/ND": true,
		keyPolicies: true, prefixEndpoints + "chat": true, prefixTokens + "abc": true,
		prefixJobs + "j1": false, keyFence: false, keyAlerts: false, prefixAudit + "0001": false,
		prefixIdempotency + "k": false, prefixQuotaRequests + "q1": false, prefixBudgetAlerts + "2026-12/acme/80": false,
	} {
		if got := kicksCycle(key); got != want {
			t.Errorf("kicksCycle(%q) = %v, want %v", key, got, want)
		}
	}
}

// No token begins with '-' or '_': "--token -k…" would read as flags to a
// shell completion (seen: 'job why' completion failed with "does not
// support flag 'k'"). Without the rule, 2,000 tokens would all miss such
// a start once in about 4·10^27.
func TestTokensDoNotBeginWithADash(t *testing.T) {
	for range 2000 {
		if tok := newToken(); tok[0] == '-' || tok[0] == '_' || len(tok) != 43 {
			t.Fatalf("token %q", tok)
		}
	}
}
