package spec

import (
	"errors"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

// doc trims the newline that opens a raw string, so that line 1 of the YAML
// is the line after the backquote.
func doc(s string) []byte { return []byte(strings.TrimPrefix(s, "\n")) }

// wantError checks that err is an *Error at file:line naming field, whose
// message contains msg.
func wantError(t *testing.T, err error, file string, line int, field, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *spec.Error", err, err)
	}
	if e.File != file || e.Line != line || e.Field != field || !strings.Contains(e.Msg, msg) {
		t.Errorf("error = %q\nwant file %q, line %d, field %q, message containing %q", e, file, line, field, msg)
	}
	if e.Line > 0 && !strings.HasPrefix(e.Error(), file+":") {
		t.Errorf("error = %q, want it to start with %q", e, file+":")
	}
}

const smallFleet = `
skus:
  - {name: L4x1, series: NC, gpu_model: L4, gpu_memory_gib: 24, gpus: 1, vcpu: 8, memory_gib: 32, interconnect: ethernet, power_kw: 0.3, price_per_hour: 0.8, spot_price_per_hour: 0.3, reserved_price_per_hour: 0.5}
regions:
  - name: eastus
    residency: us
    power_headroom_kw: 400
    clusters:
      - name: eastus-ib1
        fabric: infiniband
        racks:
          - name: eastus-ib1-r1
            power_cap_kw: 45.5
            nodes:
              - {name: eastus-h100-01, sku: ND96-H100x8-IB, leaf: leaf1}
              - {prefix: eastus-h100-, count: 4, start: 2, sku: ND96-H100x8-IB, leaf: leaf1, health: Draining}
      - name: eastus-eth1
        fabric: ethernet
        racks:
          - name: eastus-eth1-r1
            nodes:
              - {prefix: l4-, count: 100, sku: L4x1}
`

func TestParseFleet(t *testing.T) {
	f, err := ParseFleet("fleet.yaml", doc(smallFleet))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Catalog["L4x1"]; got.PowerW != 300 || got.GPUModel != "L4" || got.SpotPrice != 0.3 {
		t.Errorf("extra SKU = %+v", got)
	}
	if _, ok := f.Catalog["ND96-H100x8-IB"]; !ok {
		t.Error("built-in SKUs are missing from the catalog")
	}
	if r := f.Regions[0]; r.PowerHeadroomW != 400_000 || r.Clusters[0].Racks[0].PowerCapW != 45_500 || r.Clusters[1].Racks[0].PowerCapW != 0 {
		t.Errorf("region = %+v", r)
	}
	if len(f.Nodes) != 105 {
		t.Fatalf("%d nodes, want 105", len(f.Nodes))
	}
	want := model.Node{Name: "eastus-h100-01", SKU: "ND96-H100x8-IB", Region: "eastus", Cluster: "eastus-ib1",
		Leaf: "leaf1", Rack: "eastus-ib1-r1", Health: model.NodeReady}
	if got := f.Nodes[0]; got.Name != want.Name || got.SKU != want.SKU || got.Region != want.Region ||
		got.Cluster != want.Cluster || got.Leaf != want.Leaf || got.Rack != want.Rack || got.Health != want.Health {
		t.Errorf("node 0 = %+v, want %+v", got, want)
	}
	for i, name := range map[int]string{1: "eastus-h100-02", 4: "eastus-h100-05", 5: "l4-001", 104: "l4-100"} {
		if got := f.Nodes[i].Name; got != name {
			t.Errorf("node %d is named %q, want %q", i, got, name)
		}
	}
	if got := f.Nodes[1].Health; got != model.NodeDraining {
		t.Errorf("node 1 health = %s, want Draining", got)
	}
}

func TestParseFleetJSON(t *testing.T) {
	const js = "{\n\t\"regions\": [{\"name\": \"r\", \"residency\": \"eu\", \"clusters\": [{\"name\": \"c\", \"fabric\": \"roce\",\n\t\t\"racks\": [{\"name\": \"k\", \"nodes\": [{\"name\": \"n1\", \"sku\": \"NC96-A100x4\"}]}]}]}]\n}\n"
	f, err := ParseFleet("fleet.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 1 || f.Nodes[0].Cluster != "c" {
		t.Errorf("nodes = %+v", f.Nodes)
	}
}

func TestParseFleetErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"empty", ``, 0, "", "file is empty"},
		{"comments only", "\n# nothing\n", 0, "", "file is empty"},
		{"syntax", `
regions:
  - name: eastus
    residency: us: x
`, 3, "", "invalid YAML: mapping values are not allowed"},
		{"top level list", `
- eastus
`, 1, "", "want a mapping"},
		{"unknown top-level field", `
region:
  - name: eastus
`, 1, "region", `unknown field "region"`},
		{"unknown node field", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - name: n1
                sku: NC4-T4x1
                skew: 3
`, 12, "regions[0].clusters[0].racks[0].nodes[0].skew", `unknown field "skew"`},
		{"field set twice", `
regions:
  - name: eastus
    name: westus
`, 3, "regions[0].name", "set twice (first at line 2)"},
		{"string for number", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - {name: k, power_cap_kw: lots}
`, 8, "regions[0].clusters[0].racks[0].power_cap_kw", `want a number, got the string "lots"`},
		{"infinite power", `
regions:
  - {name: eastus, residency: us, power_headroom_kw: .inf}
`, 2, "regions[0].power_headroom_kw", "finite"},
		{"string for bool", `
skus:
  - {name: X, series: NC, gpu_model: L4, gpus: 1, vcpu: 8, memory_gib: 32, interconnect: ethernet, nvlink: "yes"}
`, 2, "skus[0].nvlink", "want true or false"},
		{"float for int", `
skus:
  - {name: X, series: NC, gpu_model: L4, gpus: 1.5, vcpu: 8, memory_gib: 32, interconnect: ethernet}
`, 2, "skus[0].gpus", "want an integer, got 1.5"},
		{"list for string", `
regions:
  - name: [eastus]
`, 2, "regions[0].name", "want a string, got a list"},
		{"bad extra SKU", `
skus:
  - name: X
    series: NC
    gpu_model: L4
    gpus: 1
    vcpu: 0
    memory_gib: 32
    interconnect: ethernet
regions:
  - {name: eastus, residency: us}
`, 6, "skus[0].vcpu", "must be positive"},
		{"SKU already in catalog", `
skus:
  - {name: NC4-T4x1, series: NC, gpu_model: T4, gpus: 1, vcpu: 4, memory_gib: 28, interconnect: ethernet}
regions:
  - {name: eastus, residency: us}
`, 2, "skus[0].name", "already defined"},
		{"no regions", `
skus: []
`, 1, "regions", "at least one region"},
		{"missing residency", `
regions:
  - name: eastus
`, 2, "regions[0].residency", "must not be empty"},
		{"bad fabric", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: a
        fabric: ethernet
      - name: b
        fabric: nvlink
`, 8, "regions[0].clusters[1].fabric", "must be infiniband, roce or ethernet"},
		{"unknown SKU", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - {name: n1, sku: NC4-T4x1}
              - {name: n2, sku: NC4-T5x1}
`, 11, "regions[0].clusters[0].racks[0].nodes[1].sku", `unknown SKU "NC4-T5x1"`},
		{"duplicate node from prefix", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - {name: n02, sku: NC4-T4x1}
              - {prefix: n, count: 3, sku: NC4-T4x1}
`, 11, "regions[0].clusters[0].racks[0].nodes[1].name", `node "n02" is defined twice`},
		{"bad health", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - name: n1
                sku: NC4-T4x1
                health: Sick
`, 12, "regions[0].clusters[0].racks[0].nodes[0].health", "must be Ready, NotReady or Draining"},
		{"name and prefix", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - {name: n1, prefix: n, count: 2, sku: NC4-T4x1}
`, 10, "regions[0].clusters[0].racks[0].nodes[0].prefix", "not both"},
		{"prefix without count", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - {prefix: n, sku: NC4-T4x1}
`, 10, "regions[0].clusters[0].racks[0].nodes[0].count", "prefix needs a count"},
		{"zero count", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - {prefix: n, count: 0, sku: NC4-T4x1}
`, 10, "regions[0].clusters[0].racks[0].nodes[0].count", "must be between 1 and"},
		{"huge count", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - {prefix: n, count: 1000000000, sku: NC4-T4x1}
`, 10, "regions[0].clusters[0].racks[0].nodes[0].count", "must be between 1 and 100000"},
		{"nameless node", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            nodes:
              - {sku: NC4-T4x1}
`, 10, "regions[0].clusters[0].racks[0].nodes[0]", "needs a name"},
		{"negative power cap", `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks:
          - name: k
            power_cap_kw: -1
`, 9, "regions[0].clusters[0].racks[0].power_cap_kw", "must not be negative"},
		{"second document", `
regions:
  - {name: eastus, residency: us}
---
regions: []
`, 4, "", "want one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFleet("fleet.yaml", doc(tc.yaml))
			if err == nil {
				t.Fatalf("ParseFleet = %+v, want an error", f)
			}
			wantError(t, err, "fleet.yaml", tc.line, tc.field, tc.msg)
		})
	}
}

func TestReadFleetMissing(t *testing.T) {
	if _, err := ReadFleet("testdata/no-such-fleet.yaml"); err == nil || !strings.Contains(err.Error(), "no-such-fleet.yaml") {
		t.Errorf("ReadFleet of a missing file: error = %v, want one naming the file", err)
	}
}
