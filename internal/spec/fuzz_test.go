package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

// checkFuzzError holds a reader to its contract for input it rejects: an
// *Error with a message.
func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is a %T, want *spec.Error", err, err)
	}
	if e.Msg == "" || e.Error() == "" {
		t.Fatalf("error %#v has no message", e)
	}
	// Every problem of a read that reports several is an *Error.
	list := flatten(err)
	if len(list) > MaxErrors+1 {
		t.Fatalf("%d problems reported, over the limit of %d", len(list), MaxErrors)
	}
	for _, p := range list {
		if pe, ok := p.(*Error); !ok || pe.Msg == "" {
			t.Fatalf("problem %v is a %T without a message, want *spec.Error", p, p)
		}
	}
}

// addFile adds the file at path to the seed corpus when it exists.
func addFile(f *testing.F, path string, args ...any) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	f.Add(append([]any{data}, args...)...)
}

func FuzzParseFleet(f *testing.F) {
	addFile(f, "../../examples/fleet.yaml")
	f.Add(doc(smallFleet))
	f.Add(doc(tenancyFleet))
	f.Add([]byte("regions:\n  - &r {name: a, residency: us, clusters: [{name: c, fabric: roce, racks: [{name: k, nodes: [{prefix: n, count: 3, sku: NC4-T4x1}]}]}]}\n"))
	f.Add([]byte(`{"regions": [{"name": "r", "residency": "eu"}]}`))
	addFile(f, "../../internal/e2e/testdata/money-lab-fleet.yaml") // a SKU with CPU and memory prices
	f.Add([]byte("skus:\n  - {name: X, series: NC, gpu_model: T4, gpus: 1, vcpu: 4, memory_gib: 28, interconnect: ethernet, price_per_vcpu_hour: -1, price_per_gib_hour: 1e9}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := ParseFleet("fleet.yaml", data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if err := fl.Validate(); err != nil {
			t.Fatalf("ParseFleet returned a fleet that fails Validate: %v", err)
		}
	})
}

func FuzzParseTenancy(f *testing.F) {
	fleet, err := ReadFleet("../../examples/fleet.yaml")
	if err != nil {
		f.Fatal(err)
	}
	addFile(f, "../../examples/tenants.yaml")
	f.Add(doc(goodTenancy))
	f.Add([]byte("partitions:\n  - {name: p, guarantees: [{region: eastus, gpu_model: H100, percent: 50, lend_limit: 8}]}\ntenants:\n  - {name: x, kind: internal, partition: p}\n"))
	f.Add([]byte("tenants:\n  - {name: x, kind: customer, classes: [spot, Standard, reserved]}\n  - {name: y, kind: internal, classes: [reserved, spot, reserved]}\n  - {name: z, kind: customer, classes: standard}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ten, err := ParseTenancy("tenants.yaml", data, fleet)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		// Validate resolved percentages into GPU counts; undo that so the
		// tenancy reads as written and can be validated again.
		for i := range ten.Partitions {
			for j := range ten.Partitions[i].Guarantees {
				if g := &ten.Partitions[i].Guarantees[j]; g.Percent > 0 {
					g.GPUs = 0
				}
			}
		}
		if err := ten.Validate(fleet); err != nil {
			t.Fatalf("ParseTenancy returned a tenancy that fails Validate: %v", err)
		}
	})
}

func FuzzParseJobs(f *testing.F) {
	jobs, _ := filepath.Glob("../../examples/jobs/*")
	for _, p := range jobs {
		addFile(f, p, "")
	}
	f.Add(doc(pretrain), "")
	f.Add(doc(pretrain), "resources.gpu_models=[H100,A100]")
	f.Add([]byte("- &b {name: a, tenant: t, resources: {cpu: 500m, gpus_per_instance: 0}}\n- {<<: *b, name: b}\n"), "retry.max_retries=5")
	f.Add([]byte("name: j\ntenant: t\n---\nname: k\ntenant: t\npriority: {class: spot, value: 3}\n"), "env.A=b")
	f.Add([]byte(`{"name": "j", "tenant": "t", "resources": {"memory": "8Gi", "gpu_milli": 500}}`), "priority=spot")
	f.Add([]byte("name: s\ntenant: t\narray: 0-9:3\n---\nname: u\ntenant: t\narray_index: 4\n"), "array=1,5")
	f.Add([]byte("name: a\nresoures: {gpus: 99}\npriority: standrd\n---\n- {name: b, tenant: t, array: 5-1}\n"), "")
	f.Add([]byte("name: a\ntenant: t\n---\nname: b\ntenant: t\nafter: [a]\n---\nname: c\ntenant: t\nafter: b\n"), "")
	f.Add([]byte("- {name: a, tenant: t, after: [c]}\n- {name: b, tenant: t, after: [a]}\n- {name: c, tenant: t, after: [b, a]}\n"), "")
	f.Add([]byte("name: a\ntenant: t\nafter: [a, '', x, x]\n"), "after=[a]")
	f.Add([]byte("name: a\ntenant: t\nbegin: 2026-12-24T02:00:00+01:00\n---\nname: b\ntenant: t\nbegin: 2027-01-01\n"), "begin=tomorrow")
	f.Add([]byte("name: a\ntenant: t\n---\nname: b\ntenant: t\nafter: a\nafter_condition: any\n---\nname: c\ntenant: t\nafter_condition: [notok]\n"), "after_condition=notok")
	f.Add([]byte("name: a\ntenant: t\nplacement: {exclude_nodes: [n1, '', n1]}\n---\nname: b\ntenant: t\nplacement: {exclude_nodes: n2, nodes: [n2, n3]}\n"), "placement.nodes=[x]")
	f.Add([]byte("name: e\ntenant: t\nresources: {gpus_per_instance: 8}\nelastic: {min_instances: 2, max_instances: 6, step: 2}\n"), "elastic.step=3")
	f.Add([]byte(`{"name": "e", "tenant": "t", "resources": {"instance_count": 2}, "elastic": {"min_instances": 2, "max_instances": 4}}`), "resources.instance_count=")
	f.Add([]byte("name: e\ntenant: t\nresources: {gpu_milli: 500}\nelastic: {min_instances: 3, max_instances: 1}\n"), "elastic=")
	f.Add([]byte("name: c\ntenant: t\nimage: nvcr.io/nvidia/pytorch:24.05-py3\ncommand: [torchrun, train.py]\nargs: [--epochs, '3']\nworkdir: /workspace\nmounts: [/data:/data:ro, {source: /s, target: /scratch, read_only: false}]\n"), "image=ghcr.io/a/b@sha256:"+strings.Repeat("0", 64))
	f.Add([]byte("- {name: a, tenant: t, image: 'oci:/var/lib/allot/images/demo:latest', array: 0-3}\n- {name: b, tenant: t, after: [a], image: x, mounts: [/a:/allot/work, '/b:/c:rx', [x]]}\n"), "workdir=rel")
	f.Add([]byte(`{"name": "j", "tenant": "t", "args": ["a"], "workdir": "/w", "mounts": ["/a:/a"]}`), "mounts=[/x:/y]")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		specs, err := ParseJobs("job.yaml", data, sets)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if len(specs) == 0 {
			t.Fatal("ParseJobs returned no jobs and no error")
		}
		for i := range specs {
			if err := specs[i].Validate(); err != nil {
				t.Fatalf("ParseJobs returned job %d that fails Validate: %v", i, err)
			}
		}
		if c := model.AfterCycle(specs); c != nil {
			t.Fatalf("ParseJobs returned jobs that wait for each other: %s", model.CycleText(specs, c))
		}
	})
}

// Aliases let a small file describe an enormous one; reading stops early.
func TestAliasBomb(t *testing.T) {
	// 60 regions of 60 clusters of 60 racks, from a few lines.
	more := func(indent, name string) string {
		return strings.Repeat(indent+"- *"+name+"\n", 59)
	}
	fleet := "regions:\n" +
		"  - &r\n    name: r\n    residency: us\n    clusters:\n" +
		"      - &c\n        name: c\n        fabric: roce\n        racks:\n" +
		"          - &k {name: k, nodes: [{name: n, sku: NC4-T4x1}]}\n" +
		more("          ", "k") + more("      ", "c") + more("  ", "r")
	jobs := fmt.Sprintf("- &j {name: a, tenant: t, command: [%s]}\n", strings.Repeat("x, ", 1000)+"x")
	jobs += strings.Repeat("- *j\n", 2000)
	for _, tc := range []struct {
		name  string
		parse func() error
	}{
		{"fleet", func() error { _, err := ParseFleet("fleet.yaml", []byte(fleet)); return err }},
		{"jobs", func() error { _, err := ParseJobs("jobs.yaml", []byte(jobs), nil); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse()
			if err == nil || !strings.Contains(err.Error(), "too large") {
				t.Errorf("error = %v, want one saying the document is too large", err)
			}
		})
	}
}

func FuzzParseEndpoints(f *testing.F) {
	files, _ := filepath.Glob("../../examples/endpoints/*")
	for _, p := range files {
		addFile(f, p)
	}
	f.Add(doc(chatEndpoint))
	f.Add([]byte("- &e {name: a, tenant: t, model: m, slo: {p95_ms: 100}, throughput: {T4: 1}}\n- {<<: *e, name: b, max_replicas: 4}\n"))
	f.Add([]byte(`{"name": "c", "tenant": "t", "model": "m", "slo": {"p95_ms": 1e3}, "throughput": {"H100": 9e2}, "resources": {"gpu_milli": 500}}`))
	f.Add([]byte("name: e\ntenant: t\nmodel: m\nslo: {p95_ms: 100}\nthroughput: {T4: 1, T4: 2}\n"))
	f.Add([]byte("name: e\ntenant: t\nmodel: m\nslo: {p95_ms: 100}\nthroughput: {T4: 1}\nrollout: {max_surge: 0, max_unavailable: 1}\n"))
	f.Add([]byte("name: e\ntenant: t\nmodel: m\nslo: {p95_ms: 100}\nthroughput: {T4: 1}\nimage: ghcr.io/team/serve:2\nargs: [--port, '8000']\nmounts: ['/m:/models:ro']\nworkdir: /srv\n"))
	f.Add([]byte("name: e\ntenant: t\nmodel: m\nslo: {p95_ms: 100}\nthroughput: {T4: 1}\nmounts: [{source: rel, target: /allot}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		eps, err := ParseEndpoints("ep.yaml", data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if len(eps) == 0 {
			t.Fatal("ParseEndpoints returned no endpoints and no error")
		}
		for i := range eps {
			if err := eps[i].Validate(); err != nil {
				t.Fatalf("ParseEndpoints returned endpoint %d that fails Validate: %v", i, err)
			}
		}
	})
}
