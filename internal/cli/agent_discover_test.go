package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/spec"
)

func TestAgentDiscover(t *testing.T) {
	isolate(t)
	out, errOut, code := runCLI(t, "agent", "discover", "--gpus", "virtual:8xH100-80GB")
	if code != 0 || !strings.Contains(out, "8 GPUs (found by virtual)") || !strings.Contains(out, "registers as: ND96-H100x8-IB.") {
		t.Fatalf("8 virtual H100s: exit %d\n%s%s", code, out, errOut)
	}

	out, _, code = runCLI(t, "agent", "discover", "--gpus", "virtual:2xL4-24GB")
	if code != 0 || !strings.Contains(out, "No SKU of the built-in catalog has 2 × L4") {
		t.Fatalf("no SKU fits: exit %d\n%s", code, out)
	}

	// A fleet file's own SKU counts too.
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(`skus:
  - {name: L4x2, series: NC, gpu_model: L4, gpus: 2, vcpu: 8, memory_gib: 32, interconnect: ethernet}
regions:
  - name: r
    residency: us
    clusters:
      - {name: c, fabric: ethernet, racks: [{name: k, nodes: [{name: n1, sku: L4x2}]}]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, "agent", "discover", "--gpus", "virtual:2xL4-24GB", "--fleet", fleet, "-o", "json")
	var d discovered
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	if d.Way != "virtual" || len(d.GPUs) != 2 || d.GPUs[1].Model != "L4" || d.GPUs[1].MemoryMiB != 24*1024 ||
		len(d.SKUs) != 1 || d.SKUs[0] != "L4x2" {
		t.Fatalf("json: %+v", d)
	}

	_, errOut, code = runCLI(t, "agent", "discover", "-o", "yaml", "--gpus", "virtual:1xT4")
	if code != 2 || !strings.Contains(errOut, "want table, json or fleet") {
		t.Fatalf("-o yaml: exit %d, %s", code, errOut)
	}
	_, errOut, code = runCLI(t, "agent", "discover", "--gpus", "virtual:0xT4")
	if code != 2 || !strings.Contains(errOut, "between 1 and 64") {
		t.Fatalf("--gpus virtual:0xT4: exit %d, %s", code, errOut)
	}
}

// The fleet file -o fleet prints is one the server reads, and its node's
// SKU is one the same GPUs register as.
func TestAgentDiscoverFleet(t *testing.T) {
	isolate(t)
	for _, tc := range []struct{ gpus, sku string }{
		{"virtual:1xH200-141GB", "LOCAL-H200x1"}, // declared
		{"virtual:1xH100-94GB", "NC40-H100x1"},   // built in
	} {
		out, errOut, code := runCLI(t, "agent", "discover", "--gpus", tc.gpus, "-o", "fleet", "--node", "box-1")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.gpus, code, errOut)
		}
		f, err := spec.ParseFleet("discovered", []byte(out))
		if err != nil {
			t.Fatalf("%s: the printed fleet does not parse: %v\n%s", tc.gpus, err, out)
		}
		if len(f.Nodes) != 1 || f.Nodes[0].Name != "box-1" || f.Nodes[0].SKU != tc.sku {
			t.Fatalf("%s: nodes %+v, want box-1 of SKU %s\n%s", tc.gpus, f.Nodes, tc.sku, out)
		}
		v, _ := gpu.ParseVirtual(tc.gpus, "box-1")
		if got := fittingSKUs(f.Catalog, v.Devices); !strings.Contains(strings.Join(got, ","), tc.sku) {
			t.Fatalf("%s: the GPUs fit %v, not the node's %s", tc.gpus, got, tc.sku)
		}
		if s := f.Catalog[tc.sku]; tc.sku == "LOCAL-H200x1" && (s.GPUMemoryGiB != 141 || s.VCPU < 1 || s.MemoryGiB < 1) {
			t.Fatalf("declared SKU %+v", s)
		}
	}
}

// A host of two GPU models fits no one SKU: -o fleet says so.
func TestHostFleetMixedModels(t *testing.T) {
	d := discovered{Way: "NVML", GPUs: []discoveredGPU{{Index: 0, Model: "A100", MemoryMiB: 81920}, {Index: 1, Model: "T4", MemoryMiB: 15360}}}
	err := writeHostFleet(io.Discard, d, "box")
	if err == nil || !strings.Contains(err.Error(), "1 × A100 and 1 × T4; a SKU has one GPU model") {
		t.Fatalf("mixed models: %v", err)
	}
}
