package admission_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/admission"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/spec"
)

// example reads the example fleet and tenancy of the repository.
func example(t *testing.T) (*model.Fleet, *model.Tenancy) {
	t.Helper()
	f, err := spec.ReadFleet("../../examples/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ten, err := spec.ReadTenancy("../../examples/tenants.yaml", f)
	if err != nil {
		t.Fatal(err)
	}
	return f, ten
}

func job(t *testing.T, doc string) model.JobSpec {
	t.Helper()
	specs, err := spec.ParseJobs("job.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	return specs[0]
}

func TestCheck(t *testing.T) {
	f, ten := example(t)
	// Make every node NotReady: admission looks at the ideal fleet.
	for i := range f.Nodes {
		f.Nodes[i].Health = model.NodeNotReady
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	core := sched.New(sched.Config{})
	tests := []struct {
		name, doc string
		never     bool
		reason    sched.Reason
		field     string   // when not empty, the verdict's
		want      []string // in the detail
	}{
		{name: "larger than any region", doc: "name: big\ntenant: research\nresources: {instance_count: 100, gpus_per_instance: 8, gpu_models: [H100]}\n",
			never: true, reason: sched.SkuNotAvailable,
			want: []string{"can never hold", "of 100 instances", "the most that exists: ", "instances (", "8×H100"}},
		{name: "no IB for T4", doc: "name: ring\ntenant: research\nresources: {instance_count: 2, gpus_per_instance: 4, gpu_models: [T4]}\nplacement: {interconnect: infiniband}\n",
			never: true, reason: sched.TopologyUnsatisfiable,
			want: []string{"clusters with infiniband: ", "eastus/eastus-ib1 (H100)", "westus/westus-ib1 (A100)"}},
		{name: "no such model", doc: "name: b\ntenant: research\nresources: {gpus_per_instance: 8, gpu_models: [B200]}\n",
			never: true, reason: sched.SkuNotAvailable, want: []string{"no SKU in any region has 8×B200 per instance"}},
		{name: "residency", doc: "name: g\ntenant: globex\nresources: {gpus_per_instance: 8, gpu_models: [A100]}\nplacement: {residency: eu}\n",
			never: true, reason: sched.ResidencyForbidden, want: []string{"outside residency"}},
		{name: "wrong case", doc: "name: c\ntenant: research\nresources: {gpus_per_instance: 8, gpu_models: [h100]}\n",
			never: true, reason: sched.SkuNotAvailable, want: []string{`no node has GPU model "h100" (did you mean H100?)`}},
		{name: "misspelt region", doc: "name: c\ntenant: research\nresources: {gpus_per_instance: 8}\nplacement: {regions: [eastuss]}\n",
			never: true, reason: sched.SkuNotAvailable, want: []string{`no region "eastuss" (did you mean eastus?)`}},
		{name: "every capable node excluded", doc: "name: x\ntenant: research\nresources: {gpus_per_instance: 8, gpu_models: [A100]}\nplacement: {regions: [westus], exclude_nodes: [westus-a100-01, westus-a100-02, westus-a100-03, westus-a100-04, westus-a100-05, westus-a100-06]}\n",
			never: true, reason: sched.NodesExcluded, want: []string{"placement.exclude_nodes rules out all 6 capable nodes"}},
		{name: "a gang too large once nodes are excluded", doc: "name: x\ntenant: research\nresources: {instance_count: 8, gpus_per_instance: 8, gpu_models: [H100]}\nplacement: {exclude_nodes: [eastus-h100-01]}\n",
			never: true, reason: sched.TopologyUnsatisfiable, want: []string{"at most 7 in one cluster", "placement.exclude_nodes excludes 1 node"}},
		{name: "a gang larger than the nodes it names", doc: "name: x\ntenant: research\nresources: {instance_count: 3, gpus_per_instance: 8, gpu_models: [H100]}\nplacement: {nodes: [eastus-h100-01, eastus-h100-02]}\n",
			never: true, reason: sched.SkuNotAvailable, want: []string{"room for 2 of 3 instances", "placement.nodes allows 2 nodes"}},
		{name: "only on nodes of another model", doc: "name: x\ntenant: research\nresources: {gpus_per_instance: 8, gpu_models: [A100]}\nplacement: {nodes: [eastus-h100-01]}\n",
			never: true, reason: sched.NodesExcluded, want: []string{"placement.nodes rules out all 6 capable nodes"}},
		{name: "some capable nodes excluded", doc: "name: x\ntenant: research\nresources: {gpus_per_instance: 8, gpu_models: [A100]}\nplacement: {regions: [westus], exclude_nodes: [westus-a100-01]}\n"},
		{name: "fits an idle fleet", doc: "name: small\ntenant: research\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"},
		// globex-h100: 2 × ND96-H100x8-IB in westeurope (of its 4).
		{name: "a gang larger than its reservation", doc: "name: g\ntenant: globex\nresources: {instance_count: 3, gpus_per_instance: 8}\nplacement: {reservation: globex-h100}\n",
			never: true, reason: sched.SkuNotAvailable, field: "placement.reservation",
			want: []string{`reservation "globex-h100" holds 2 nodes of ND96-H100x8-IB (8×H100) in westeurope, which can never hold the job: room for 2 of 3 instances`}},
		{name: "fractions beyond its reservation", doc: "name: g\ntenant: globex\nresources: {instance_count: 33, gpu_milli: 500}\nplacement: {reservation: globex-h100}\n",
			never: true, reason: sched.SkuNotAvailable, field: "placement.reservation", want: []string{"room for 32 of 33 instances"}},
		{name: "fills its reservation", doc: "name: g\ntenant: globex\nresources: {instance_count: 4, gpus_per_instance: 4}\nplacement: {reservation: globex-h100}\n"},
		{name: "another GPU model than its reservation's", doc: "name: g\ntenant: globex\nresources: {gpus_per_instance: 8, gpu_models: [A100]}\nplacement: {reservation: globex-h100}\n",
			never: true, reason: sched.SkuNotAvailable, field: "resources.gpu_models", want: []string{"the job accepts only A100"}},
		{name: "another region than its reservation's", doc: "name: g\ntenant: globex\nresources: {gpus_per_instance: 8}\nplacement: {reservation: globex-h100, regions: [eastus]}\n",
			never: true, reason: sched.SkuNotAvailable, field: "placement.regions", want: []string{"a region placement.regions does not allow"}},
		{name: "every node of its reservation's SKU excluded", doc: "name: g\ntenant: globex\nresources: {gpus_per_instance: 8}\nplacement: {reservation: globex-h100, exclude_nodes: [westeurope-h100-01, westeurope-h100-02, westeurope-h100-03, westeurope-h100-04]}\n",
			never: true, reason: sched.NodesExcluded, field: "placement.exclude_nodes", want: []string{"rules out all 4 of them"}},
		{name: "a gang its reservation's SKU holds once nodes are excluded", doc: "name: g\ntenant: globex\nresources: {instance_count: 2, gpus_per_instance: 8}\nplacement: {reservation: globex-h100, exclude_nodes: [westeurope-h100-01, westeurope-h100-02, westeurope-h100-03]}\n",
			never: true, reason: sched.SkuNotAvailable, field: "placement.reservation", want: []string{"room for 1 of 2 instances", "placement.exclude_nodes leaves 1 of its SKU's nodes"}},
		{name: "one node of its reservation's SKU left", doc: "name: g\ntenant: globex\nresources: {gpus_per_instance: 8}\nplacement: {reservation: globex-h100, exclude_nodes: [westeurope-h100-01, westeurope-h100-02, westeurope-h100-03]}\n"},
		{name: "CPU work in a reservation", doc: "name: g\ntenant: globex\nresources: {gpus_per_instance: 0, cpu: 2}\nplacement: {reservation: globex-h100}\n"},
		{name: "asks for CPU", doc: "name: c\ntenant: research\nresources: {gpus_per_instance: 8, gpu_models: [B200], cpu: 4, memory: 1Gi}\n",
			never: true, reason: sched.SkuNotAvailable, want: []string{"8×B200, 4000 mCPU, 1024 MiB per instance"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := admission.Check(core, admission.Ideal(f), ten, job(t, tc.doc), now)
			if v.Never() != tc.never || (tc.never && v.Reason != tc.reason) {
				t.Fatalf("verdict %s (never %v): %s; want never %v with %s", v.Reason, v.Never(), v.Detail, tc.never, tc.reason)
			}
			if tc.field != "" && v.Field != tc.field {
				t.Errorf("field %q, want %q", v.Field, tc.field)
			}
			for _, w := range tc.want {
				if !strings.Contains(v.Detail, w) {
					t.Errorf("detail %q lacks %q", v.Detail, w)
				}
			}
			if strings.Contains(v.Detail, " 0 mCPU") || strings.Contains(v.Detail, " 0 MiB") {
				t.Errorf("detail %q names a CPU or memory the job did not ask for", v.Detail)
			}
		})
	}
}

// TestCheckCountsThePinnedSKU: work pinned to a SKU (an instance) is told
// how many nodes of that SKU exist, not how many instances of its shape
// other SKUs could hold.
func TestCheckCountsThePinnedSKU(t *testing.T) {
	f, ten := example(t)
	s := job(t, "name: box\ntenant: acme\nresources: {instance_count: 5, gpus_per_instance: 1, gpu_models: [A100]}\nplacement: {regions: [westus]}\n")
	s.Placement.SKU = "NC24-A100x1"
	v := admission.Check(sched.New(sched.Config{}), admission.Ideal(f), ten, s, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	if !v.Never() || !strings.Contains(v.Detail, "the most that exists: westus 2 instances (2 nodes of 1×A100)") {
		t.Fatalf("verdict %s: %s", v.Reason, v.Detail)
	}
}

// TestIdealLeavesFleet checks that Ideal copies: the fleet it is given
// keeps its health.
func TestIdealLeavesFleet(t *testing.T) {
	f, _ := example(t)
	f.Nodes[0].Health = model.NodeNotReady
	ideal := admission.Ideal(f)
	if ideal.Nodes[0].Health != model.NodeReady || f.Nodes[0].Health != model.NodeNotReady {
		t.Errorf("ideal node %s, fleet node %s; want Ready and NotReady", ideal.Nodes[0].Health, f.Nodes[0].Health)
	}
}

// TestCheckReservationAcrossClusters: a gang spans one cluster, and a
// reservation takes its nodes from as few clusters as it can (the core's
// rule). A reservation of 4 nodes in a region whose clusters hold 3 and 2
// holds a gang of 3 (all in the larger cluster), never a gang of 4; one of
// 3 nodes lies in one cluster and holds a gang of 3, though the first
// three nodes by name span both.
func TestCheckReservationAcrossClusters(t *testing.T) {
	fleet, err := spec.ParseFleet("fleet.yaml", []byte(`regions:
  - name: eastus
    residency: us
    clusters:
      - name: ib-a
        fabric: infiniband
        racks:
          - name: ra
            nodes:
              - {prefix: h-a-, count: 2, sku: ND96-H100x8-IB, leaf: la}
      - name: ib-b
        fabric: infiniband
        racks:
          - name: rb
            nodes:
              - {prefix: h-b-, count: 3, sku: ND96-H100x8-IB, leaf: lb}
`))
	if err != nil {
		t.Fatal(err)
	}
	tenancy := func(count int) *model.Tenancy {
		ten, err := spec.ParseTenancy("tenants.yaml", []byte(fmt.Sprintf(`partitions:
  - {name: p, tier: customer}
tenants:
  - {name: acme, kind: customer, partition: p}
reservations:
  - {name: r, owner: acme, sku: ND96-H100x8-IB, region: eastus, count: %d}
`, count)), fleet)
		if err != nil {
			t.Fatal(err)
		}
		return ten
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	core := sched.New(sched.Config{})
	gang := func(n int) model.JobSpec {
		return job(t, fmt.Sprintf("name: g\ntenant: acme\nresources: {instance_count: %d, gpus_per_instance: 8}\nplacement: {reservation: r}\n", n))
	}
	for _, tc := range []struct {
		count, gang int
		never       bool
	}{{count: 4, gang: 3}, {count: 4, gang: 4, never: true}, {count: 3, gang: 3}, {count: 5, gang: 3}} {
		v := admission.Check(core, admission.Ideal(fleet), tenancy(tc.count), gang(tc.gang), now)
		if v.Never() != tc.never {
			t.Errorf("a gang of %d in a reservation of %d: %s %s; want never %v", tc.gang, tc.count, v.Reason, v.Detail, tc.never)
		}
		if tc.never && (v.Field != "placement.reservation" || !strings.Contains(v.Detail, "at most 3 in one cluster")) {
			t.Errorf("a gang of %d in a reservation of %d: field %q, detail %q; want placement.reservation and the cluster named",
				tc.gang, tc.count, v.Field, v.Detail)
		}
	}
}
