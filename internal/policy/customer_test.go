package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched/schedtest"
)

// customerWorld is one 8-GPU node shared by acme and globex, paying
// customers, and ops, an internal team. Each runs a batch job and a
// developer job on one GPU, all standard; acme also queues a batch job and
// globex has a batch job that already runs as spot. Every job says its
// workload itself, as the review's customer batch did.
func customerWorld(now time.Time) *schedtest.World {
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 1, "ND96-H100x8-IB", "l1").
		Tenant("acme", "").Tenant("globex", "").Tenant("ops", "")
	w.Tenancy.Tenants[0].Kind = model.TenantCustomer
	w.Tenancy.Tenants[1].Kind = model.TenantCustomer
	start := now.Add(-time.Hour)
	gpu := 0
	job := func(id, tenant, workload string) *schedtest.JobBuilder {
		b := w.Job(id, tenant).Running(start, schedtest.On("n-1", gpu))
		b.Job.Spec.Labels = map[string]string{"workload": workload}
		gpu++
		return b
	}
	for _, t := range []string{"acme", "ops"} {
		job(t+"-batch", t, "batch")
		job(t+"-dev", t, "developer")
	}
	job("globex-batch", "globex", "batch").Class(model.ClassSpot)
	w.Job("acme-queued", "acme").Job.Spec.Labels = map[string]string{"workload": "batch"}
	return w
}

// A policy's action never lowers the class of a customer tenant's work
// unless it names the tenant under tenants; named tenants bound the action
// to their work, customers or not. What an action spares is reported as
// ignored, with the reason, never as an override.
func TestCustomerWorkIsExemptUnlessNamed(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	standard := model.ClassStandard
	migrate := func(target string, tenants ...string) model.Action {
		return model.Action{Kind: model.ActionMigrate, Targets: []string{target}, Destination: "low_priority_pool", Tenants: tenants}
	}
	scaleDown := func(tenants ...string) model.Action {
		return model.Action{Kind: model.ActionScaleDown, Targets: []string{"developer_instances"}, MinCapacity: 0, Tenants: tenants}
	}
	const exempt = "customer work is exempt unless the action names its tenant"
	for _, tc := range []struct {
		name   string
		action model.Action
		// changed is each job whose class changes, to its new class; every
		// other job keeps its own.
		changed map[string]model.Class
		// spared are the jobs reported as exempt.
		spared []string
	}{
		{"batch_jobs keeps a customer's batch and demotes an internal one", migrate("batch_jobs"),
			map[string]model.Class{"ops-batch": model.ClassSpot},
			[]string{"acme-batch", "acme-queued"}},
		{"batch_jobs naming the customer demotes its batch only", migrate("batch_jobs", "acme"),
			map[string]model.Class{"acme-batch": model.ClassSpot, "acme-queued": model.ClassSpot}, nil},
		{"batch_jobs naming the internal tenant only leaves the customer alone", migrate("batch_jobs", "ops"),
			map[string]model.Class{"ops-batch": model.ClassSpot}, nil},
		{"batch_jobs naming both demotes both", migrate("batch_jobs", "ops", "acme"),
			map[string]model.Class{"ops-batch": model.ClassSpot, "acme-batch": model.ClassSpot, "acme-queued": model.ClassSpot}, nil},
		{"developer_instances keeps a customer's developer work", migrate("developer_instances"),
			map[string]model.Class{"ops-dev": model.ClassSpot}, []string{"acme-dev"}},
		{"scale_down keeps a customer's developer work", scaleDown(),
			map[string]model.Class{"ops-dev": model.ClassSpot}, []string{"acme-dev"}},
		{"scale_down naming the customer demotes it", scaleDown("acme"),
			map[string]model.Class{"acme-dev": model.ClassSpot}, nil},
		{"migrate up raises a customer's work without naming it",
			model.Action{Kind: model.ActionMigrate, Targets: []string{"batch_jobs"}, Destination: "standard_pool"},
			map[string]model.Class{"globex-batch": model.ClassStandard}, nil},
		{"reallocate raises a customer's work without naming it",
			model.Action{Kind: model.ActionReallocate, Targets: []string{"batch_jobs"}, Priority: model.Priority{Class: model.ClassReserved}},
			map[string]model.Class{"acme-batch": model.ClassReserved, "acme-queued": model.ClassReserved,
				"ops-batch": model.ClassReserved, "globex-batch": model.ClassReserved}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := customerWorld(now)
			ps := &model.PolicySet{Targets: model.BuiltinTargets()}
			ps.Targets["standard_pool"] = model.Target{Name: "standard_pool", Class: &standard}
			if err := ps.Validate(); err != nil {
				t.Fatal(err)
			}
			fs := []Firing{{Policy: "crunch", Held: true, Actions: []Action{{Action: tc.action, BaselineKnown: true}}}}
			adj := Adjust(w.Snapshot(), ps, fs, now)

			var changed []string
			for i, j := range adj.Snapshot.Jobs {
				from, to := w.Jobs[i].Spec.Priority.Class, j.Spec.Priority.Class
				want, ok := tc.changed[j.ID]
				if !ok {
					want = from
				}
				if to != want {
					t.Errorf("%s (tenant %s) runs as %s, want %s", j.ID, j.Spec.Tenant, to, want)
				}
				if to != from {
					changed = append(changed, j.ID)
				}
			}
			var overridden []string
			for _, o := range adj.Overrides {
				overridden = append(overridden, o.Job)
			}
			slices.Sort(changed)
			slices.Sort(overridden)
			if !slices.Equal(overridden, changed) {
				t.Errorf("overrides %v, want exactly the changed jobs %v", overridden, changed)
			}
			var spared []string
			for _, o := range adj.Ignored {
				if o.From != o.To || !strings.Contains(o.Detail, exempt) || !strings.Contains(o.Detail, "acme") {
					t.Errorf("ignored %+v, want the customer exemption with From = To", o)
				}
				spared = append(spared, o.Job)
			}
			slices.Sort(spared)
			if !slices.Equal(spared, tc.spared) {
				t.Errorf("spared %v, want %v", spared, tc.spared)
			}
		})
	}
}

// What an action spares is not decided: a later policy that names the
// customer still demotes its work.
func TestSparedWorkIsLeftToLaterPolicies(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	w := customerWorld(now)
	ps := &model.PolicySet{Targets: model.BuiltinTargets()}
	batch := func(tenants ...string) []Action {
		return []Action{{Action: model.Action{Kind: model.ActionMigrate, Targets: []string{"batch_jobs"},
			Destination: "low_priority_pool", Tenants: tenants}}}
	}
	fs := []Firing{{Policy: "everyone", Held: true, Actions: batch()}, {Policy: "acme_too", Held: true, Actions: batch("acme")}}
	adj := Adjust(w.Snapshot(), ps, fs, now)
	got := map[string]string{}
	for _, o := range adj.Overrides {
		got[o.Job] = o.Policy
	}
	want := map[string]string{"ops-batch": "everyone", "acme-batch": "acme_too", "acme-queued": "acme_too"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("overridden by %v, want %v", got, want)
	}
}

// A scale_down's baseline, and so its floor, is of the work it acts on: a
// customer's work it spares counts in neither. An action whose tenants
// change takes a new baseline.
func TestScaleDownBaselineOfTheWorkItActsOn(t *testing.T) {
	now := schedtest.Epoch.Add(24 * time.Hour)
	w := customerWorld(now)
	ps := &model.PolicySet{Targets: model.BuiltinTargets()}
	dev := model.Action{Kind: model.ActionScaleDown, Targets: []string{"developer_instances"}, MinCapacity: 0.5}
	named := dev
	named.Tenants = []string{"acme", "ops"}
	p := model.Policy{Name: "crunch", Actions: []model.Action{dev}}
	first := actions(ps, p, nil, w.Snapshot())
	if first[0].Baseline != model.MilliPerGPU {
		t.Fatalf("baseline = %d, want ops-dev's GPU only", first[0].Baseline)
	}
	last := &Firing{Policy: "crunch", Actions: first}
	p.Actions = []model.Action{named}
	if got := actions(ps, p, last, w.Snapshot()); got[0].Baseline != 2*model.MilliPerGPU {
		t.Fatalf("with acme named, baseline = %d, want 2 GPUs taken afresh", got[0].Baseline)
	}
}
