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

// The tenants an action names are checked against the server's tenancy
// when a file is applied, through the API or at start, and an unknown one
// is refused with its field and line.
func TestPolicyTenantsAreTenantsOfTheServer(t *testing.T) {
	const file = "scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85%}]\n" +
		"    actions:\n      - type: migrate\n        target: batch_jobs\n        destination: low_priority_pool\n        tenants: [acme, %s]\n"
	h := newHarness(t)
	_, err := h.srv.ApplyPolicies(context.Background(), admin, []byte(strings.Replace(file, "%s", "initech", 1)))
	var se *Error
	if !isCode(err, CodeInvalidSpec) || !errors.As(err, &se) || se.Field != "scheduling_policies[0].actions[0].tenants[1]" ||
		!strings.Contains(err.Error(), "policies:8:25: scheduling_policies[0].actions[0].tenants[1]: unknown tenant \"initech\"") {
		t.Fatalf("apply naming an unknown tenant: %v", err)
	}
	if st := h.apply([]byte(strings.Replace(file, "%s", "globex", 1))); st.Revision != 1 {
		t.Fatalf("apply naming known tenants: revision %d", st.Revision)
	}

	fleet, ten := servertest.Example(t)
	_, err = New(context.Background(), Config{Store: servertest.Store(t, t.TempDir()), Fleet: fleet, Tenancy: ten, Clock: NewManualClock(t0),
		Policies: &PolicyFile{Name: "policies.yaml", Text: []byte(strings.Replace(file, "%s", "initech", 1))}})
	if err == nil || !strings.Contains(err.Error(), "policies.yaml:8:25: scheduling_policies[0].actions[0].tenants[1]: unknown tenant") {
		t.Fatalf("start file naming an unknown tenant: %v", err)
	}
}

// The seed's ai_training_priority fires at 28 of 32 GPUs, 4 of them a
// customer's work labelled developer: it scales research's developer work
// down to 30 % of research's 24 GPUs and leaves acme's alone, which 'allot
// job why' explains.
func TestPolicyCustomerWorkExempt(t *testing.T) {
	h := newRackHarness(t)
	h.apply(seedPolicies(t))
	for i := range 6 {
		h.submit(Principal{Tenant: "research"}, h100Job("research", i))
	}
	acme := h.submit(Principal{Tenant: "acme"}, `{name: acme-notebook, tenant: acme, labels: {workload: developer},
		resources: {gpus_per_instance: 4, gpu_models: [H100]}, placement: {regions: [eastus]}}`).ID
	h.cycle()
	if n, _ := h.heldGPUs("acme"); n != 4 {
		t.Fatalf("acme holds %d GPUs, want 4", n)
	}
	h.clock.Advance(10 * time.Second)
	h.cycle()
	p := h.policy("ai_training_priority")
	if !p.Firing {
		t.Fatalf("policy at 87.5%%: %+v", p.Values)
	}
	if len(p.Overrides) != 4 {
		t.Fatalf("overrides %+v, want research's 4 jobs beyond its floor (30%% of 24 GPUs keeps 2 jobs)", p.Overrides)
	}
	for _, o := range p.Overrides {
		if o.Job == acme {
			t.Fatalf("acme's job overridden: %+v", o)
		}
	}
	want := "policy ai_training_priority: scale_down developer_instances to 30%: customer work is exempt unless the action names its tenant: acme is not under tenants"
	if w := h.why(acme); len(w.Policies) != 1 || w.Policies[0] != want {
		t.Fatalf("why %s: %q, want %q", acme, w.Policies, want)
	}
	if j := h.job(acme); j.Spec.Priority.Class != model.ClassStandard {
		t.Fatalf("acme's job stored as %s", j.Spec.Priority)
	}
}
