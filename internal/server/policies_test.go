package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
)

// readyOnly is the simulated node layer with only some nodes Ready: the
// rest of the example fleet is NotReady, so it counts in no utilisation.
type readyOnly struct {
	Simulated
	ready func(model.Node) bool
}

func (r readyOnly) InitialHealth(n model.Node) model.Health {
	if r.ready(n) {
		return model.NodeReady
	}
	return model.NodeNotReady
}

// seedPolicies is examples/policies.yaml.
func seedPolicies(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newRackHarness opens a server over the example fleet of which only rack
// eastus-ib1-r2 is Ready: four 8×H100 nodes, 32 GPUs, under a power cap
// they fit.
func newRackHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: NewManualClock(t0)}
	fleet, ten := servertest.Example(t)
	h.st = servertest.Store(t, h.dir)
	var err error
	h.srv, err = New(context.Background(), Config{Store: h.st, Fleet: fleet, Tenancy: ten, Clock: h.clock,
		Nodes: readyOnly{ready: func(n model.Node) bool { return n.Rack == "eastus-ib1-r2" }}, CheckIncremental: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) apply(text []byte) PolicySetStatus {
	h.t.Helper()
	st, err := h.srv.ApplyPolicies(context.Background(), admin, text)
	if err != nil {
		h.t.Fatalf("apply policies: %v", err)
	}
	return st
}

func (h *harness) policy(name string) PolicyStatus {
	h.t.Helper()
	st, err := h.srv.Policies(admin)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, p := range st.Policies {
		if p.Policy.Name == name {
			return p
		}
	}
	h.t.Fatalf("no policy %s in %+v", name, st.Policies)
	return PolicyStatus{}
}

func (h *harness) events() []string {
	h.t.Helper()
	st, err := h.srv.Policies(admin)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range st.Events {
		out = append(out, e.At.Sub(t0).String()+" "+e.Policy+" "+e.Kind)
	}
	return out
}

func (h *harness) why(id string) Why {
	h.t.Helper()
	w, err := h.srv.Explain(h.t.Context(), admin, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

func h100Job(tenant string, i int) string {
	return fmt.Sprintf(`{name: %s-%d, tenant: %s, resources: {gpus_per_instance: 4, gpu_models: [H100]}, placement: {regions: [eastus]}}`,
		tenant, i, tenant)
}

// heldGPUs returns the whole GPUs that jobs of tenant hold, and the IDs of
// its running jobs.
func (h *harness) heldGPUs(tenant string) (int, []string) {
	n, ids := 0, []string(nil)
	for _, j := range mustJobs(h.t, h.srv, admin, JobFilter{Tenant: tenant}) {
		if j.Status.State.Holds() {
			ids = append(ids, j.ID)
			for _, a := range j.Status.Allocations {
				n += len(a.GPUs)
			}
		}
	}
	slices.Sort(ids)
	return n, ids
}

// TestPolicyScaleDown runs the seed's ai_training_priority on a 32-GPU
// fleet: research's developer work holds 28 GPUs (87.5 % > 85 %), the
// policy fires, and copilot's queued training gets the room beyond
// research's 30 % floor — by the core's preemptions, in the cycle after
// it arrives — but no more; once utilisation drops the policy stops after
// its 5 minute cooldown. Without the policies, the same queue preempts
// nothing: research and copilot share a partition and a class.
func TestPolicyScaleDown(t *testing.T) {
	for _, withPolicies := range []bool{true, false} {
		t.Run(fmt.Sprintf("policies=%v", withPolicies), func(t *testing.T) {
			h := newRackHarness(t)
			if withPolicies {
				if st := h.apply(seedPolicies(t)); st.Revision != 1 || len(st.Policies) != 2 {
					t.Fatalf("applied: revision %d, %d policies", st.Revision, len(st.Policies))
				}
			}
			for i := range 7 {
				h.submit(Principal{Tenant: "research"}, h100Job("research", i))
			}
			h.cycle() // research binds; utilisation was 0 % before the plan
			if n, ids := h.heldGPUs("research"); n != 28 || len(ids) != 7 {
				t.Fatalf("research holds %d GPUs in %v, want 28 in 7 jobs", n, ids)
			}

			// The next cycle sees 87.5 %: the policy fires, lowers the
			// work beyond the floor to spot, and evicts nothing: no one
			// needs the room.
			h.clock.Advance(10 * time.Second)
			h.cycle()
			if !withPolicies {
				for i := range 6 {
					h.submit(copilot, h100Job("copilot", i))
				}
				h.clock.Advance(10 * time.Second)
				h.cycle()
				if n, _ := h.heldGPUs("research"); n != 28 {
					t.Fatalf("without policies research holds %d GPUs after copilot queued, want its 28", n)
				}
				if n, _ := h.heldGPUs("copilot"); n != 4 {
					t.Fatalf("without policies copilot holds %d GPUs, want the 4 free ones", n)
				}
				return
			}
			p := h.policy("ai_training_priority")
			if !p.Firing || !p.Held || !p.Since.Equal(t0.Add(10*time.Second)) {
				t.Fatalf("policy after 87.5%%: firing %v held %v since %v; values %+v", p.Firing, p.Held, p.Since, p.Values)
			}
			if v := p.Values[0]; v.Key != "fleet" || v.Current != 0.875 {
				t.Fatalf("condition value %+v, want fleet 0.875", v)
			}
			if n, _ := h.heldGPUs("research"); n != 28 {
				t.Fatalf("research holds %d GPUs after the policy fired with no one waiting, want 28", n)
			}
			if len(p.Overrides) != 4 {
				t.Fatalf("overrides %+v, want the 4 jobs beyond the floor (ceil(30%% of 28 GPUs) keeps 3 jobs)", p.Overrides)
			}
			spot := map[string]bool{}
			for _, o := range p.Overrides {
				spot[o.Job] = true
				if o.To.Class != model.ClassSpot || o.From.Class != model.ClassStandard {
					t.Fatalf("override %+v, want standard → spot", o)
				}
				w := h.why(o.Job)
				want := "policy ai_training_priority: scale_down developer_instances to 30%: beyond the 30% floor of 28 GPUs: standard → spot"
				if len(w.Policies) != 1 || w.Policies[0] != want {
					t.Fatalf("why %s: policies %q, want %q", o.Job, w.Policies, want)
				}
				if j := h.job(o.Job); j.Spec.Priority.Class != model.ClassStandard {
					t.Fatalf("job %s stored with priority %s: a policy must not write the spec", o.Job, j.Spec.Priority)
				}
			}
			_, running := h.heldGPUs("research")
			var kept []string
			for _, id := range running {
				if !spot[id] {
					kept = append(kept, id)
					if w := h.why(id); len(w.Policies) != 0 {
						t.Fatalf("why of kept job %s: %q", id, w.Policies)
					}
				}
			}

			// Copilot queues 6 jobs of 4 GPUs: 4 are free; the rest of
			// the room is the spot work, cheapest first, and not the
			// floor.
			var train []string
			for i := range 6 {
				train = append(train, h.submit(copilot, h100Job("copilot", i)).ID)
			}
			h.clock.Advance(10 * time.Second)
			h.cycle()
			n, left := h.heldGPUs("research")
			if !slices.Equal(left, kept) || n != 12 {
				t.Fatalf("research runs %v (%d GPUs), want the kept %v (12 GPUs ≥ the 8.4 GPU floor)", left, n, kept)
			}
			for id := range spot {
				if j := h.job(id); j.Status.State != model.StateQueued || j.Status.Preemptions != 1 {
					t.Fatalf("spot job %s: %s after %d preemptions, want Queued after 1", id, j.Status.State, j.Status.Preemptions)
				}
			}
			if n, ids := h.heldGPUs("copilot"); n != 20 || len(ids) != 5 {
				t.Fatalf("copilot holds %d GPUs in %v, want 20 in 5 jobs", n, ids)
			}
			// The sixth waits: the floor is not evicted for it.
			h.clock.Advance(10 * time.Second)
			h.cycle()
			if n, _ := h.heldGPUs("research"); n != 12 {
				t.Fatalf("research holds %d GPUs after another cycle, want its floor's 12", n)
			}

			// Utilisation drops: copilot's work ends, research gives up
			// its preempted work. The policy clears, applies through its
			// cooldown, then stops.
			for _, id := range train {
				h.cancel(id)
			}
			for id := range spot {
				h.cancel(id)
			}
			h.clock.Advance(10 * time.Second)
			h.cycle()
			cleared := h.clock.Now()
			p = h.policy("ai_training_priority")
			if !p.Firing || p.Held || !p.Until.Equal(cleared.Add(-10*time.Second).Add(5*time.Minute)) {
				t.Fatalf("after the drop: firing %v held %v until %v", p.Firing, p.Held, p.Until)
			}
			for h.clock.Now().Before(p.Until) {
				h.clock.Advance(time.Minute)
				h.cycle()
			}
			p = h.policy("ai_training_priority")
			if p.Firing || len(p.Overrides) != 0 || p.Values[0].Current != 12.0/32 {
				t.Fatalf("after the cooldown: firing %v, overrides %+v, values %+v", p.Firing, p.Overrides, p.Values)
			}
			want := []string{"10s ai_training_priority fires", "40s ai_training_priority clears", "5m40s ai_training_priority stops"}
			if got := h.events(); !slices.Equal(got, want) {
				t.Fatalf("events %q, want %q", got, want)
			}
		})
	}
}

func (h *harness) cancel(id string) {
	h.t.Helper()
	if _, err := h.srv.Cancel(context.Background(), admin, id); err != nil {
		h.t.Fatalf("cancel %s: %v", id, err)
	}
}

// TestPolicyLatencyReallocates runs the seed's customer_sla_protection: an
// endpoint's p95 above 150 ms, as its reconciles sample it, for 5 minutes
// raises its replicas to reserved, and not a moment earlier.
func TestPolicyLatencyReallocates(t *testing.T) {
	h := newHarness(t)
	h.apply(seedPolicies(t))
	h.createEndpoint(copilot, chatEndpoint)
	h.cycle()
	start := h.clock.Now()
	for step := 0; ; step++ {
		h.clock.Advance(30 * time.Second)
		for _, j := range h.replicaJobsOf("chat") {
			p, _ := h.srv.Authenticate(j.Spec.Env[endpoint.EnvEndpointToken])
			if err := h.srv.ReportEndpointMetrics(context.Background(), p, "chat",
				endpoint.Report{RequestsPerSec: 10, P95Ms: 210, Utilisation: 0.9, Replica: j.ID + ".1"}); err != nil {
				t.Fatal(err)
			}
		}
		h.reconcile()
		h.cycle()
		pol := h.policy("customer_sla_protection")
		slow := h.clock.Now().Sub(start.Add(30 * time.Second)) // since the first slow sample
		if slow < 5*time.Minute {
			if pol.Firing {
				t.Fatalf("fired after %s of p95 above 150ms, want 5m: %+v", slow, pol.Values)
			}
			continue
		}
		if !pol.Firing {
			t.Fatalf("not firing after %s of p95 210ms: %+v", slow, pol.Values)
		}
		if v := pol.Values[0]; v.Key != "chat" || v.Current != 0.21 || v.Threshold != 0.15 {
			t.Fatalf("condition %+v, want chat at 210ms over 150ms", v)
		}
		replicas := h.replicaJobsOf("chat")
		if len(pol.Overrides) != len(replicas) || len(replicas) == 0 {
			t.Fatalf("overrides %+v, want one per replica of %d", pol.Overrides, len(replicas))
		}
		for _, j := range replicas {
			w := h.why(j.ID)
			want := "policy customer_sla_protection: reallocate inference_gpus to reserved: raised to reserved: standard → reserved"
			if len(w.Policies) != 1 || w.Policies[0] != want {
				t.Fatalf("why %s: %q, want %q", j.ID, w.Policies, want)
			}
			if j.Spec.Priority.Class != model.ClassStandard {
				t.Fatalf("replica %s stored as %s", j.ID, j.Spec.Priority)
			}
		}
		if ev := h.events(); len(ev) != 1 || !strings.HasSuffix(ev[0], "customer_sla_protection fires") {
			t.Fatalf("events %q", ev)
		}
		return
	}
}

// TestPolicyStore covers apply, delete and the start file: who may, what
// the stored text becomes, and which set wins at a restart.
func TestPolicyStore(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	seed := seedPolicies(t)
	if _, err := h.srv.ApplyPolicies(ctx, copilot, seed); !isCode(err, CodeForbidden) {
		t.Fatalf("apply by a tenant: %v", err)
	}
	if _, err := h.srv.Policies(copilot); !isCode(err, CodeForbidden) {
		t.Fatalf("list by a tenant: %v", err)
	}
	_, err := h.srv.ApplyPolicies(ctx, admin, []byte("scheduling_policies:\n  - name: x\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85}]\n    actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool}]\n"))
	var se *Error
	if !isCode(err, CodeInvalidSpec) || !errors.As(err, &se) || !strings.Contains(se.Field, "utilization_threshold") {
		t.Fatalf("invalid file: %v", err)
	}
	if st, _ := h.srv.Policies(admin); st.Revision != 0 || len(st.Policies) != 0 {
		t.Fatalf("a refused apply stored revision %d", st.Revision)
	}
	h.apply(append([]byte("# the seed\n"), seed...))
	if _, err := h.srv.DeletePolicy(ctx, admin, "nope"); !isCode(err, CodeNotFound) {
		t.Fatalf("delete of an unknown policy: %v", err)
	}
	if _, err := h.srv.DeletePolicy(ctx, copilot, "ai_training_priority"); !isCode(err, CodeForbidden) {
		t.Fatalf("delete by a tenant: %v", err)
	}
	st, err := h.srv.DeletePolicy(ctx, admin, "ai_training_priority")
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != 2 || len(st.Policies) != 1 || st.Policies[0].Policy.Name != "customer_sla_protection" ||
		strings.Contains(st.Text, "ai_training_priority") || !strings.Contains(st.Text, "# the seed") || st.AppliedBy != "admin" {
		t.Fatalf("after delete: revision %d, policies %d, by %s, text:\n%s", st.Revision, len(st.Policies), st.AppliedBy, st.Text)
	}
	if st, err = h.srv.DeletePolicy(ctx, admin, ""); err != nil || st.Revision != 3 || len(st.Policies) != 0 {
		t.Fatalf("delete all: revision %d, %d policies, %v; text:\n%s", st.Revision, len(st.Policies), err, st.Text)
	}

	// The start file: applied when it is new, kept out when the set was
	// changed through the API since it was applied unchanged.
	start := func(text []byte) PolicySetStatus {
		t.Helper()
		if err := h.st.Close(); err != nil {
			t.Fatal(err)
		}
		fleet, ten := servertest.Example(t)
		h.st = servertest.Store(t, h.dir)
		if h.srv, err = New(ctx, Config{Store: h.st, Fleet: fleet, Tenancy: ten, Clock: h.clock,
			Policies: &PolicyFile{Name: "policies.yaml", Text: text}, CheckIncremental: true}); err != nil {
			t.Fatal(err)
		}
		st, err := h.srv.Policies(admin)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := start(seed); st.Revision != 4 || len(st.Policies) != 2 || st.AppliedBy != "--policies policies.yaml" {
		t.Fatalf("new start file: revision %d by %s", st.Revision, st.AppliedBy)
	}
	if _, err := h.srv.DeletePolicy(ctx, admin, "customer_sla_protection"); err != nil {
		t.Fatal(err)
	}
	if st := start(seed); st.Revision != 5 || len(st.Policies) != 1 {
		t.Fatalf("unchanged start file after an API change: revision %d, %d policies; want the API's 5 and 1", st.Revision, len(st.Policies))
	}
	if st := start(append(seed, "# edited\n"...)); st.Revision != 6 || len(st.Policies) != 2 {
		t.Fatalf("edited start file: revision %d, %d policies", st.Revision, len(st.Policies))
	}
}

// TestPolicyDeletedStops: a firing policy that is deleted stops at the
// next cycle, cooldown or not, and its overrides go with it.
func TestPolicyDeletedStops(t *testing.T) {
	h := newRackHarness(t)
	h.apply(seedPolicies(t))
	for i := range 8 {
		h.submit(Principal{Tenant: "research"}, h100Job("research", i))
	}
	h.cycle()
	h.clock.Advance(time.Second)
	h.cycle()
	if p := h.policy("ai_training_priority"); !p.Firing || len(p.Overrides) == 0 {
		t.Fatalf("at 100%%: firing %v, overrides %d", p.Firing, len(p.Overrides))
	}
	if _, err := h.srv.DeletePolicy(context.Background(), admin, "ai_training_priority"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	h.cycle()
	st, _ := h.srv.Policies(admin)
	if n := len(st.Events); n != 2 || st.Events[1].Kind != PolicyStops || st.Events[1].Text != "deleted from the policy set" {
		t.Fatalf("events %+v", st.Events)
	}
	for _, j := range mustJobs(t, h.srv, admin, JobFilter{}) {
		if w := h.why(j.ID); len(w.Policies) != 0 {
			t.Fatalf("why %s after the delete: %q", j.ID, w.Policies)
		}
	}
}
