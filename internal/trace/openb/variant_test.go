package openb

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// shares measures what each kind sets on a pod list.
type shares struct {
	shared, multi, spec, cpu float64 // fractions: of GPU milli, GPU milli, GPU pods, GPU pods' CPU
	gpuMilli, gpuCPU         float64
	gpuPods                  int
}

func measure(pods []Pod) shares {
	var s shares
	var sh, mu, cpu float64
	specs := 0
	for _, p := range pods {
		if p.GPUs == 0 {
			cpu += float64(p.CPUMilli)
			continue
		}
		s.gpuPods++
		s.gpuMilli += float64(p.TotalMilli())
		s.gpuCPU += float64(p.CPUMilli)
		if p.Shared() {
			sh += float64(p.TotalMilli())
		}
		if p.GPUs > 1 {
			mu += float64(p.TotalMilli())
		}
		if len(p.Models) > 0 {
			specs++
		}
	}
	s.shared, s.multi, s.cpu = sh/s.gpuMilli, mu/s.gpuMilli, cpu/s.gpuCPU
	s.spec = float64(specs) / float64(s.gpuPods)
	return s
}

func shippedDefault(t *testing.T) ([]Pod, []Node) {
	t.Helper()
	const dir = "../../../data/traces/openb/"
	pods, err := ReadPodsFile(dir + "openb_pod_list_default.csv")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := ReadNodesFile(dir + "openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatal(err)
	}
	return pods, nodes
}

func TestVariantShares(t *testing.T) {
	pods, nodes := shippedDefault(t)
	var maxMilli, maxCPU float64 // one pod's largest contribution
	for _, p := range pods {
		maxMilli = max(maxMilli, float64(p.TotalMilli()))
		if p.GPUs == 0 {
			maxCPU = max(maxCPU, float64(p.CPUMilli))
		}
	}
	base := measure(pods)
	tests := []struct {
		kind VariantKind
		pct  float64
	}{
		{GPUShare, 0}, {GPUShare, 20}, {GPUShare, 40}, {GPUShare, 80}, {GPUShare, 100},
		{GPUSpec, 0}, {GPUSpec, 5}, {GPUSpec, 33}, {GPUSpec, 100},
		{MultiGPU, 0}, {MultiGPU, 3}, {MultiGPU, 20}, {MultiGPU, 50},
		{CPUOnly, 0}, {CPUOnly, 5}, {CPUOnly, 50}, {CPUOnly, 250},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%g", tt.kind, tt.pct), func(t *testing.T) {
			out, err := Variant(pods, nodes, VariantSpec{Kind: tt.kind, Pct: tt.pct, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			got := measure(out)
			want := tt.pct / 100
			var have, tol float64
			switch tt.kind {
			case GPUShare:
				have, tol = got.shared, maxMilli/got.gpuMilli
				if got.gpuPods != base.gpuPods || len(out) != len(pods) {
					t.Errorf("%d pods, %d GPU pods; want %d, %d (replaced in place)", len(out), got.gpuPods, len(pods), base.gpuPods)
				}
			case GPUSpec:
				have, tol = got.spec, 0.5/float64(got.gpuPods)
				if got.gpuMilli != base.gpuMilli || len(out) != len(pods) {
					t.Errorf("gpuspec changed the pods, not only their models")
				}
			case MultiGPU:
				have, tol = got.multi, maxMilli/got.gpuMilli
			case CPUOnly:
				have, tol = got.cpu, maxCPU/got.gpuCPU
				if got.gpuMilli != base.gpuMilli || got.gpuPods != base.gpuPods {
					t.Errorf("cpu changed the GPU pods")
				}
			}
			if s := Share(tt.kind, out) / 100; math.Abs(s-have) > 1e-12 {
				t.Errorf("Share = %.5f, measured %.5f", s, have)
			}
			if math.Abs(have-want) > tol+1e-12 {
				t.Errorf("share %.5f, want %.5f within %.5f", have, want, tol)
			}
			for i, p := range out {
				if want := fmt.Sprintf("openb-pod-%04d", i); p.Name != want {
					t.Fatalf("pod %d named %q, want %q", i, p.Name, want)
				}
			}
		})
	}
}

// TestVariantModels: gpuspec draws models in proportion to the GPUs of the
// nodes that can hold each pod.
func TestVariantModels(t *testing.T) {
	nodes := []Node{
		{Name: "a", CPUMilli: 64000, MemoryMiB: 1 << 20, GPUs: 6, Model: "A"},
		{Name: "b", CPUMilli: 64000, MemoryMiB: 1 << 20, GPUs: 2, Model: "B"},
		{Name: "c", CPUMilli: 1000, MemoryMiB: 1 << 20, GPUs: 8, Model: "C"}, // too little CPU for any pod
	}
	var pods []Pod
	for i := range 4000 {
		pods = append(pods, Pod{Name: "p", CPUMilli: 2000, GPUs: 1, GPUMilli: 500})
		if i%4 == 0 {
			pods = append(pods, Pod{Name: "q", CPUMilli: 2000, GPUs: 4, GPUMilli: 1000}) // fits only on A
		}
	}
	out, err := Variant(pods, nodes, VariantSpec{Kind: GPUSpec, Pct: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range out {
		if len(p.Models) != 1 {
			t.Fatalf("pod %+v: want one model", p)
		}
		if p.GPUs == 4 && p.Models[0] != "A" {
			t.Fatalf("4-GPU pod given %s, where it cannot fit", p.Models[0])
		}
		if p.GPUs == 1 {
			count[p.Models[0]]++
		}
	}
	if count["C"] != 0 {
		t.Errorf("%d pods given model C, whose nodes cannot hold them", count["C"])
	}
	if f := float64(count["A"]) / 4000; math.Abs(f-0.75) > 0.03 {
		t.Errorf("model A drawn for %.3f of 1-GPU pods, want 0.75 (6 of 8 GPUs)", f)
	}
}

func TestVariantDeterministic(t *testing.T) {
	pods, nodes := shippedDefault(t)
	for _, k := range VariantKinds {
		before := slices.Clone(pods)
		a, err := Variant(pods, nodes, VariantSpec{Kind: k, Pct: 30, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(before, pods) {
			t.Fatalf("%s: Variant changed its input", k)
		}
		b, _ := Variant(pods, nodes, VariantSpec{Kind: k, Pct: 30, Seed: 3})
		c, _ := Variant(pods, nodes, VariantSpec{Kind: k, Pct: 30, Seed: 4})
		if d := cmp.Diff(a, b); d != "" {
			t.Errorf("%s: same seed, different pods:\n%s", k, d)
		}
		if cmp.Equal(a, c) {
			t.Errorf("%s: seeds 3 and 4 give the same pods", k)
		}
		// What is written reads back the same.
		var buf bytes.Buffer
		if err := WritePods(&buf, a); err != nil {
			t.Fatal(err)
		}
		back, err := ReadPods(&buf, "variant.csv")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(a, back, cmpEmptyModels); d != "" {
			t.Errorf("%s: round trip through WritePods:\n%s", k, d)
		}
	}
}

// cmpEmptyModels treats nil and empty Models alike.
var cmpEmptyModels = cmp.Transformer("models", func(m []string) []string {
	if len(m) == 0 {
		return nil
	}
	return m
})

func TestVariantErrors(t *testing.T) {
	pods := []Pod{{Name: "p", CPUMilli: 1000, GPUs: 1, GPUMilli: 1000}, {Name: "c", CPUMilli: 1000}}
	nodes := []Node{{Name: "n", CPUMilli: 64000, MemoryMiB: 1 << 20, GPUs: 8, Model: "A"}}
	tests := []struct {
		name string
		pods []Pod
		v    VariantSpec
		want string
	}{
		{"unknown kind", pods, VariantSpec{Kind: "gpu"}, `kind "gpu"`},
		{"negative pct", pods, VariantSpec{Kind: GPUShare, Pct: -1}, "pct -1"},
		{"NaN pct", pods, VariantSpec{Kind: CPUOnly, Pct: math.NaN()}, "pct NaN"},
		{"share above 100", pods, VariantSpec{Kind: GPUSpec, Pct: 101}, "pct 101"},
		{"multigpu 100", pods, VariantSpec{Kind: MultiGPU, Pct: 100}, "pct 100"},
		{"no shared pods", pods, VariantSpec{Kind: GPUShare, Pct: 10}, "no shared-GPU pod"},
		{"no multi-GPU pods", pods, VariantSpec{Kind: MultiGPU, Pct: 10}, "no multi-GPU pod"},
		{"no GPU pods", pods[1:], VariantSpec{Kind: CPUOnly, Pct: 10}, "no pod asks for a GPU"},
		{"bad pod", []Pod{{Name: "x", GPUs: 2, GPUMilli: 500}}, VariantSpec{Kind: CPUOnly}, `pod "x": gpu_milli 500`},
		{"model fits nowhere", []Pod{{Name: "x", CPUMilli: 1 << 40, GPUs: 1, GPUMilli: 1000}}, VariantSpec{Kind: GPUSpec, Pct: 100}, "only 0 fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Variant(tt.pods, nodes, tt.v)
			if err == nil || !errors.Is(err, ErrVariant) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrVariant containing %q", err, tt.want)
			}
		})
	}
}

func FuzzVariant(f *testing.F) {
	const head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
	f.Add(head+"p0,12000,16384,1,460,\np1,8000,1,8,1000,T4\np2,4000,1,0,0,\n", uint8(0), 40.0, uint64(1))
	f.Add(head+"p0,12000,16384,1,1000,\np1,2000,1,0,0,\n", uint8(3), 300.0, uint64(2))
	f.Add(head+"p0,1,1,2,1000,\np1,1,1,1,10,\n", uint8(2), 95.0, uint64(3))
	f.Add(head+"p0,1,1,1,1000,\n", uint8(1), 100.0, uint64(4))
	nodes := []Node{
		{Name: "n0", CPUMilli: 64000, MemoryMiB: 262144, GPUs: 2, Model: "P100"},
		{Name: "n1", CPUMilli: 96000, MemoryMiB: 786432, GPUs: 8, Model: "G2"},
	}
	f.Fuzz(func(t *testing.T, in string, kind uint8, pct float64, seed uint64) {
		pods, err := ReadPods(strings.NewReader(in), "f.csv")
		if err != nil || len(pods) > 200 {
			return
		}
		k := VariantKind("bogus")
		if int(kind) < len(VariantKinds) {
			k = VariantKinds[kind]
		}
		out, err := Variant(pods, nodes, VariantSpec{Kind: k, Pct: pct, Seed: seed})
		if err != nil {
			if !errors.Is(err, ErrVariant) {
				t.Fatalf("error %v does not wrap ErrVariant", err)
			}
			return
		}
		// The share lands within one pod's contribution (gpuspec: rounding).
		var maxMilli, maxCPU, milli, gpuCPU float64
		gpuPods := 0
		for _, q := range append(slices.Clone(pods), out...) {
			maxMilli = max(maxMilli, float64(q.TotalMilli()))
			if q.GPUs == 0 {
				maxCPU = max(maxCPU, float64(q.CPUMilli))
			}
		}
		for _, q := range out {
			if q.GPUs > 0 {
				gpuPods++
				milli += float64(q.TotalMilli())
				gpuCPU += float64(q.CPUMilli)
			}
		}
		tol := math.Inf(1)
		switch k {
		case GPUShare, MultiGPU:
			tol = 100 * maxMilli / milli
		case GPUSpec:
			tol = 50 / float64(gpuPods)
		case CPUOnly:
			if gpuCPU > 0 {
				tol = 100 * maxCPU / gpuCPU
			}
		}
		if got := Share(k, out); math.Abs(got-pct) > tol+1e-9 {
			t.Fatalf("%s %g: share %g, beyond %g", k, pct, got, tol)
		}
		var buf bytes.Buffer
		if err := WritePods(&buf, out); err != nil {
			t.Fatalf("a variant cannot be written: %v", err)
		}
		back, err := ReadPods(&buf, "variant.csv")
		if err != nil {
			t.Fatalf("a variant does not read back: %v", err)
		}
		if d := cmp.Diff(out, back, cmpEmptyModels); d != "" {
			t.Fatalf("round trip:\n%s", d)
		}
	})
}
