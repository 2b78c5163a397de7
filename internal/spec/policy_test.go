package spec

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// The file the people who asked for allot wrote loads unchanged, with the
// meaning docs/policies.md gives it.
func TestParsePoliciesSeed(t *testing.T) {
	ps, err := ReadPolicies("../../examples/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spot := model.ClassSpot
	want := []model.Policy{{
		Name:       "ai_training_priority",
		Conditions: []model.Condition{{Kind: model.ConditionUtilization, Scope: model.ScopeFleet, Utilization: 0.85}},
		Actions: []model.Action{
			{Kind: model.ActionScaleDown, Targets: []string{"developer_instances"}, MinCapacity: 0.30},
			{Kind: model.ActionMigrate, Targets: []string{"batch_jobs"}, Destination: "low_priority_pool"},
		},
		Cooldown: model.DefaultCooldown,
	}, {
		Name: "customer_sla_protection",
		Conditions: []model.Condition{{Kind: model.ConditionLatency, Metric: "p95_latency",
			Latency: 150 * time.Millisecond, For: 5 * time.Minute}},
		Actions:  []model.Action{{Kind: model.ActionReallocate, Targets: []string{"inference_gpus"}, Priority: model.Priority{Class: model.ClassReserved}}},
		Cooldown: model.DefaultCooldown,
	}}
	if !reflect.DeepEqual(ps.Policies, want) {
		t.Errorf("policies\n got %+v\nwant %+v", ps.Policies, want)
	}
	if tg := ps.Targets["low_priority_pool"]; tg.Class == nil || *tg.Class != spot {
		t.Errorf("low_priority_pool = %+v, want the spot class", tg)
	}
	if tg := ps.Targets["developer_instances"]; !reflect.DeepEqual(tg.Match, map[string]string{"workload": "developer"}) {
		t.Errorf("developer_instances = %+v, want work labelled workload: developer", tg)
	}
}

func TestParsePoliciesFullExample(t *testing.T) {
	ps, err := ReadPolicies("../../examples/policies-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, p := range ps.Policies {
		for _, c := range p.Conditions {
			kinds[string(c.Kind)] = true
			if c.Kind == model.ConditionUtilization {
				kinds["scope:"+c.Scope.Kind] = true
			}
		}
		for _, a := range p.Actions {
			kinds[string(a.Kind)] = true
			if len(a.Tenants) > 0 {
				kinds["tenants"] = true
			}
		}
		if p.Cooldown != model.DefaultCooldown {
			kinds["cooldown"] = true
		}
	}
	for _, k := range []string{"utilization", "latency", "scale_down", "migrate", "reallocate", "cooldown",
		"scope:fleet", "scope:region", "scope:cluster", "tenants"} {
		if !kinds[k] {
			t.Errorf("policies-full.yaml shows no %s", k)
		}
	}
	if tg := ps.Targets["developer_instances"]; tg.Builtin {
		t.Error("policies-full.yaml does not show a target replacing a built-in one")
	}
	// The tenants it names are those of the example tenants file.
	fleet, err := ReadFleet("../../examples/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ten, err := ReadTenancy("../../examples/tenants.yaml", fleet)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/policies-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePoliciesFor("policies-full.yaml", data, ten); err != nil {
		t.Errorf("against examples/tenants.yaml: %v", err)
	}
}

// A targets section replaces built-in names and adds new ones.
func TestParsePoliciesTargets(t *testing.T) {
	ps, err := ParsePolicies("p.yaml", doc(`
targets:
  developer_instances: {match: {team: dev, tier: sandbox}}
  standard_pool: {class: standard}
scheduling_policies:
  - name: p
    cooldown: 0s
    conditions: [{resource_type: gpu_cluster, utilization_threshold: 12.5%, scope: region/eastus, duration: 90s}]
    actions:
      - {type: migrate, target: developer_instances, destination: standard_pool}
`))
	if err != nil {
		t.Fatal(err)
	}
	if tg := ps.Targets["developer_instances"]; tg.Builtin || !reflect.DeepEqual(tg.Match, map[string]string{"team": "dev", "tier": "sandbox"}) {
		t.Errorf("developer_instances = %+v, want the file's", tg)
	}
	if tg := ps.Targets["standard_pool"]; tg.Class == nil || *tg.Class != model.ClassStandard {
		t.Errorf("standard_pool = %+v", tg)
	}
	if _, ok := ps.Targets["batch_jobs"]; !ok {
		t.Error("built-in batch_jobs is gone")
	}
	c := ps.Policies[0].Conditions[0]
	if c.Utilization != 0.125 || c.Scope != (model.Scope{Kind: "region", Name: "eastus"}) || c.For != 90*time.Second {
		t.Errorf("condition = %+v", c)
	}
	if ps.Policies[0].Cooldown != 0 {
		t.Errorf("cooldown = %v, want 0 as written", ps.Policies[0].Cooldown)
	}
}

func TestParsePoliciesErrors(t *testing.T) {
	const cond = "    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85%}]\n"
	const act = "    actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool}]\n"
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unknown top-level field", "policies: []\n", "p.yaml:1:1: policies: unknown field"},
		{"unknown condition field",
			"scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85%, treshold: 1}]\n" + act,
			"p.yaml:3:75: scheduling_policies[0].conditions[0].treshold: unknown field"},
		{"percent without %",
			"scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85}]\n" + act,
			"p.yaml:3:70: scheduling_policies[0].conditions[0].utilization_threshold: want a percentage like 85%"},
		{"percent above 100",
			"scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 120%}]\n" + act,
			"utilization_threshold: 120% is not between 0% and 100%"},
		{"zero threshold",
			"scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 0%}]\n" + act,
			"conditions[0].utilization_threshold: must be above 0%"},
		{"unknown resource type",
			"scheduling_policies:\n  - name: p\n    conditions: [{resource_type: tpu_pod, utilization_threshold: 85%}]\n" + act,
			"p.yaml:3:34: scheduling_policies[0].conditions[0].resource_type: want gpu_cluster"},
		{"bad scope",
			"scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85%, scope: eastus}]\n" + act,
			"conditions[0].scope: want fleet, region/NAME or cluster/NAME"},
		{"both kinds",
			"scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85%, metric: p95_latency}]\n" + act,
			"conditions[0]: a condition is on utilisation"},
		{"unknown metric",
			"scheduling_policies:\n  - name: p\n    conditions: [{metric: p42_latency, threshold: 1s}]\n" + act,
			"conditions[0].metric: unknown metric \"p42_latency\""},
		{"latency not a duration",
			"scheduling_policies:\n  - name: p\n    conditions: [{metric: p95_latency, threshold: 150}]\n" + act,
			"conditions[0].threshold: want a duration"},
		{"no threshold",
			"scheduling_policies:\n  - name: p\n    conditions: [{metric: p95_latency, duration: 5m}]\n" + act,
			"conditions[0].threshold: must be a positive latency"},
		{"no condition", "scheduling_policies:\n  - name: p\n" + act, "scheduling_policies[0].conditions: a policy needs at least one condition"},
		{"no action", "scheduling_policies:\n  - name: p\n" + cond, "scheduling_policies[0].actions: a policy needs at least one action"},
		{"duplicate name", "scheduling_policies:\n  - name: p\n" + cond + act + "  - name: p\n" + cond + act,
			"p.yaml:5:11: scheduling_policies[1].name: policy \"p\" is defined twice"},
		{"unknown action",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: evict, target: batch_jobs}]\n",
			"actions[0].type: unknown action \"evict\""},
		{"unknown target",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: scale_down, target: dev_boxes, min_capacity: 30%}]\n",
			"p.yaml:4:42: scheduling_policies[0].actions[0].target: unknown target \"dev_boxes\""},
		{"scale_down without floor",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: scale_down, target: batch_jobs}]\n",
			"actions[0].min_capacity: must be set"},
		{"field of another action",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: scale_down, target: batch_jobs, min_capacity: 30%, destination: low_priority_pool}]\n",
			"actions[0].destination: is not a field of a scale_down action"},
		{"destination is work",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: migrate, target: batch_jobs, destination: developer_instances}]\n",
			"actions[0].destination: target \"developer_instances\" selects work"},
		{"target is a destination",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: reallocate, resources: [batch_jobs, low_priority_pool], priority: high}]\n",
			"actions[0].resources[1]: target \"low_priority_pool\" is a destination"},
		{"reallocate lowers",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: reallocate, resources: [batch_jobs], priority: low}]\n",
			"actions[0].priority: want high, normal or a class above spot"},
		{"bad priority",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: reallocate, resources: [batch_jobs], priority: urgent}]\n",
			"actions[0].priority: unknown priority class \"urgent\""},
		{"empty tenant name",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool, tenants: [\"\"]}]\n",
			"p.yaml:4:93: scheduling_policies[0].actions[0].tenants[0]: must not be empty"},
		{"tenants a number",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool, tenants: 3}]\n",
			"p.yaml:4:92: scheduling_policies[0].actions[0].tenants: want a list of tenant names such as [acme, globex], got 3"},
		{"tenant name a number",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool, tenants: [acme, 3]}]\n",
			"p.yaml:4:99: scheduling_policies[0].actions[0].tenants[1]: want a tenant name (a string; quote a name such as \"3\"), got 3"},
		{"tenant name a mapping",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool, tenants: [{name: acme}]}]\n",
			"p.yaml:4:93: scheduling_policies[0].actions[0].tenants[0]: want a tenant name (a string; quote a name such as \"3\"), got a mapping"},
		{"no tenant named",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool, tenants: []}]\n",
			"p.yaml:4:92: scheduling_policies[0].actions[0].tenants: names no tenant: leave tenants out"},
		{"tenant named twice",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions:\n      - type: scale_down\n        target: developer_instances\n        min_capacity: 30%\n" +
				"        tenants:\n          - acme\n          - acme\n",
			"p.yaml:10:13: scheduling_policies[0].actions[0].tenants[1]: tenant \"acme\" is named twice"},
		{"control character in a tenant name",
			"scheduling_policies:\n  - name: p\n" + cond + "    actions: [{type: reallocate, resources: [inference_gpus], priority: high, tenants: [\"a\\tb\"]}]\n",
			"scheduling_policies[0].actions[0].tenants[0]: must not hold control"},
		{"target with both", "targets:\n  x: {match: {a: b}, class: spot}\n", "targets.x: give match or class, not both"},
		{"target with neither", "targets:\n  x: {}\n", "targets.x: give match (labels of the work) or class"},
		{"bad target class", "targets:\n  x: {class: premium}\n", "p.yaml:2:14: targets.x.class: want spot, standard or reserved"},
		{"bad match label", "targets:\n  x: {match: {\"a b\": c}}\n", "targets.x.match: label key \"a b\""},
		{"target twice", "targets:\n  x: {class: spot}\n  x: {class: spot}\n", "p.yaml:3:3: targets.x: set twice (first at line 2)"},
		{"negative cooldown", "scheduling_policies:\n  - name: p\n    cooldown: -1m\n" + cond + act, "scheduling_policies[0].cooldown: must not be negative"},
		{"empty", "# nothing\n", "p.yaml: file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicies("p.yaml", []byte(tc.file))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *spec.Error", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n got %s\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

// Labels on partitions, tenants and jobs are read, and checked.
func TestLabels(t *testing.T) {
	fleet, err := ParseFleet("fleet.yaml", doc(tenancyFleet))
	if err != nil {
		t.Fatal(err)
	}
	ten, err := ParseTenancy("t.yaml", doc(`
partitions:
  - {name: p, labels: {pool: low-priority}}
tenants:
  - {name: dev, kind: internal, partition: p, labels: {workload: developer}}
`), fleet)
	if err != nil {
		t.Fatal(err)
	}
	if ten.Partitions[0].Labels["pool"] != "low-priority" || ten.Tenants[0].Labels["workload"] != "developer" {
		t.Errorf("labels not read: %+v", ten)
	}
	jobs, err := ParseJobs("j.yaml", doc("name: j\ntenant: dev\nlabels: {workload: batch}\n"), []string{"labels.team=ml"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jobs[0].Labels, map[string]string{"workload": "batch", "team": "ml"}) {
		t.Errorf("job labels = %v", jobs[0].Labels)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"control character in a value", "name: j\ntenant: t\nlabels: {workload: \"a\\x1b[2J\"}\n", "j.yaml:3:20: labels.workload: must not hold control"},
		{"key with a space", "name: j\ntenant: t\nlabels: {\"my key\": x}\n", "j.yaml:3:9: labels: label key \"my key\""},
		{"key too long", "name: j\ntenant: t\nlabels: {" + strings.Repeat("k", 64) + ": x}\n", "must be 1 to 63 characters"},
		{"value too long", "name: j\ntenant: t\nlabels: {k: " + strings.Repeat("v", 254) + "}\n", "labels.k: must be at most 253 bytes"},
		{"not a mapping", "name: j\ntenant: t\nlabels: [a, b]\n", "labels: want a mapping of names to values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJobs("j.yaml", []byte(tc.file), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %s", err, tc.want)
			}
		})
	}
	_, err = ParseTenancy("t.yaml", []byte("tenants:\n  - {name: x, kind: internal, labels: {\"-x\": y}}\n"), fleet)
	if err == nil || !strings.Contains(err.Error(), "tenants[0].labels: label key \"-x\"") {
		t.Errorf("tenant label error = %v", err)
	}
}

// An action's tenants: a list of names (one name stands for a list of one);
// absent, the action names none. The names are not checked against a
// tenancy until the policies meet one: ParsePoliciesFor.
func TestParsePoliciesActionTenants(t *testing.T) {
	const head = "scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85%}]\n    actions:\n"
	for _, tc := range []struct {
		name, tenants string
		want          []string
	}{
		{"absent", "", nil},
		{"null", "        tenants: ~\n", nil},
		{"a flow list", "        tenants: [acme, globex]\n", []string{"acme", "globex"}},
		{"a block list with a quoted number", "        tenants:\n          - acme\n          - \"3\"\n", []string{"acme", "3"}},
		{"one name", "        tenants: acme\n", []string{"acme"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := head + "      - type: migrate\n        target: batch_jobs\n        destination: low_priority_pool\n" + tc.tenants
			ps, err := ParsePolicies("p.yaml", []byte(file))
			if err != nil {
				t.Fatal(err)
			}
			if got := ps.Policies[0].Actions[0].Tenants; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tenants = %#v, want %#v", got, tc.want)
			}
		})
	}

	tenancy := &model.Tenancy{Tenants: []model.Tenant{
		{Name: "acme", Kind: model.TenantCustomer}, {Name: "globex", Kind: model.TenantCustomer}, {Name: "ops", Kind: model.TenantInternal}}}
	file := head + "      - {type: scale_down, target: developer_instances, min_capacity: 30%, tenants: [ops]}\n" +
		"      - type: migrate\n        target: batch_jobs\n        destination: low_priority_pool\n        tenants: [acmee, globex]\n"
	if _, err := ParsePolicies("p.yaml", []byte(file)); err != nil {
		t.Fatalf("without a tenancy, unknown tenants are not checked: %v", err)
	}
	_, err := ParsePoliciesFor("p.yaml", []byte(file), tenancy)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *spec.Error", err, err)
	}
	const want = "p.yaml:9:19: scheduling_policies[0].actions[1].tenants[0]: unknown tenant \"acmee\" (not in the tenants file) (did you mean acme?)"
	if err.Error() != want {
		t.Errorf("error\n got %s\nwant %s", err, want)
	}
	ok := strings.Replace(file, "acmee", "acme", 1)
	ps, err := ParsePoliciesFor("p.yaml", []byte(ok), tenancy)
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Policies[0].Actions[1].Tenants; !reflect.DeepEqual(got, []string{"acme", "globex"}) {
		t.Errorf("tenants = %v", got)
	}
}

func FuzzParsePolicies(f *testing.F) {
	for _, p := range []string{"../../examples/policies.yaml", "../../examples/policies-full.yaml"} {
		addFile(f, p)
	}
	f.Add([]byte("targets: {x: {match: {a: b}}}\nscheduling_policies:\n  - {name: p, conditions: [{metric: p99_latency, threshold: 1s, endpoints: [e]}], actions: [{type: reallocate, resources: x, priority: reserved:3}]}\n"))
	f.Add([]byte("scheduling_policies:\n  - &p {name: a, conditions: [{resource_type: gpu_cluster, utilization_threshold: 50%, scope: cluster/c}], actions: [{type: scale_down, target: batch_jobs, min_capacity: 0%}]}\n  - {<<: *p, name: b}\n"))
	f.Add([]byte("scheduling_policies:\n  - name: p\n    conditions: [{resource_type: gpu_cluster, utilization_threshold: 85%}]\n" +
		"    actions:\n      - {type: migrate, target: batch_jobs, destination: low_priority_pool, tenants: [acme, \"3\"]}\n" +
		"      - {type: scale_down, target: developer_instances, min_capacity: 30%, tenants: ops}\n"))
	f.Add([]byte("scheduling_policies:\n  - name: p\n    conditions: [{metric: p95_latency, threshold: 1s}]\n" +
		"    actions: [{type: reallocate, resources: [inference_gpus], priority: high, tenants: &t [globex, *t, 3, \"\", [x], {a: b}, ~]}]\n"))
	f.Add([]byte("{\"scheduling_policies\": [{\"name\": \"p\", \"conditions\": [{\"resource_type\": \"gpu_cluster\", \"utilization_threshold\": \"85%\"}], " +
		"\"actions\": [{\"type\": \"migrate\", \"target\": \"batch_jobs\", \"destination\": \"low_priority_pool\", \"tenants\": [\"acme\", 3]}]}]}"))
	tenancy := &model.Tenancy{Tenants: []model.Tenant{{Name: "acme", Kind: model.TenantCustomer}, {Name: "ops", Kind: model.TenantInternal}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParsePolicies("policies.yaml", data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if err := ps.Validate(); err != nil {
			t.Fatalf("ParsePolicies returned policies that fail Validate: %v", err)
		}
		// An action names tenants or does not: never an empty list, never
		// an empty name.
		for _, p := range ps.Policies {
			for _, a := range p.Actions {
				if a.Tenants != nil && len(a.Tenants) == 0 {
					t.Fatalf("policy %s: an action with an empty, non-nil tenants list", p.Name)
				}
				if slices.Contains(a.Tenants, "") {
					t.Fatalf("policy %s: an action names the empty tenant", p.Name)
				}
			}
		}
		// Against a tenancy, the same file loads exactly when every tenant
		// it names is known.
		_, err = ParsePoliciesFor("policies.yaml", data, tenancy)
		if verr := ps.ValidateTenants(tenancy); (err == nil) != (verr == nil) {
			t.Fatalf("ParsePoliciesFor: %v; ValidateTenants: %v", err, verr)
		}
		if err != nil {
			checkFuzzError(t, err)
		}
	})
}

// examples/policies.yaml is the file as it was given, byte for byte.
func TestSeedPoliciesUnchanged(t *testing.T) {
	data, err := os.ReadFile("../../examples/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const seed = `scheduling_policies:
  - name: ai_training_priority
    conditions:
      - resource_type: gpu_cluster
        utilization_threshold: 85%
    actions:
      - type: scale_down
        target: developer_instances
        min_capacity: 30%
      - type: migrate
        target: batch_jobs
        destination: low_priority_pool
  - name: customer_sla_protection
    conditions:
      - metric: p95_latency
        threshold: 150ms
        duration: 5m
    actions:
      - type: reallocate
        resources: [inference_gpus]
        priority: high
`
	if string(data) != seed {
		t.Errorf("examples/policies.yaml differs from the seed file:\n%s", data)
	}
}
