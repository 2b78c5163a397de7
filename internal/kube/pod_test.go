package kube

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/allot-dev/allot/internal/model"
)

func kubePod(name string, gpus int64, ann map[string]string) *corev1.Pod {
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("3Gi")}}}
	if gpus > 0 {
		c.Resources.Limits = corev1.ResourceList{GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: ann,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))},
		Spec: corev1.PodSpec{SchedulerName: SchedulerName, Containers: []corev1.Container{c}}}
}

func TestReadPod(t *testing.T) {
	classOf := func(name string) (model.Priority, bool, error) {
		if name == "batch-low" {
			return model.Priority{Class: model.ClassSpot, Value: 3}, true, nil
		}
		return model.Priority{}, false, nil
	}
	for _, tt := range []struct {
		name  string
		gpus  int64
		ann   map[string]string
		pc    string
		check func(podRequest) bool
		err   string
	}{
		{name: "plain", gpus: 2, check: func(r podRequest) bool {
			return reflect.DeepEqual(r.res, model.Resources{InstanceCount: 1, GPUsPerInstance: 2, CPUMilli: 2000, MemoryMiB: 3072}) &&
				r.priority.Class == model.ClassStandard && r.group == "" && r.grace == 30
		}},
		{name: "spot", gpus: 1, ann: map[string]string{AnnotationClass: "spot:4"}, check: func(r podRequest) bool {
			return r.priority == model.Priority{Class: model.ClassSpot, Value: 4}
		}},
		{name: "priorityclass", gpus: 1, pc: "batch-low", check: func(r podRequest) bool {
			return r.priority == model.Priority{Class: model.ClassSpot, Value: 3}
		}},
		{name: "classname", gpus: 1, pc: "reserved", check: func(r podRequest) bool { return r.priority.Class == model.ClassReserved }},
		{name: "otherclass", gpus: 1, pc: "system-node-critical", check: func(r podRequest) bool { return r.priority.Class == model.ClassStandard }},
		{name: "fraction", ann: map[string]string{AnnotationGPUMilli: "250"}, check: func(r podRequest) bool {
			return r.res.GPUsPerInstance == 1 && r.res.GPUMilli == 250 && r.res.Fractional()
		}},
		{name: "gang", gpus: 8, ann: map[string]string{AnnotationPodGroup: "train", AnnotationPodGroupSize: "4", AnnotationInterconnect: "infiniband",
			AnnotationReservation: "r1", AnnotationGPUModels: "H100, A100", AnnotationRegions: "eastus"}, check: func(r podRequest) bool {
			return r.group == "train" && r.size == 4 && r.place.Interconnect == model.FabricInfiniBand && r.place.Reservation == "r1" &&
				reflect.DeepEqual(r.res.GPUModels, []string{"H100", "A100"}) && reflect.DeepEqual(r.place.Regions, []string{"eastus"})
		}},
		{name: "badclass", gpus: 1, ann: map[string]string{AnnotationClass: "urgent"}, err: "annotations[allot.dev/class]"},
		{name: "emptyclass", gpus: 1, ann: map[string]string{AnnotationClass: ""}, err: "annotations[allot.dev/class]"},
		{name: "badmilli", ann: map[string]string{AnnotationGPUMilli: "1000"}, err: "annotations[allot.dev/gpu-milli]"},
		{name: "milliandgpus", gpus: 1, ann: map[string]string{AnnotationGPUMilli: "500"}, err: "asks no nvidia.com/gpu"},
		{name: "nosize", gpus: 1, ann: map[string]string{AnnotationPodGroup: "g"}, err: "needs its size"},
		{name: "badsize", gpus: 1, ann: map[string]string{AnnotationPodGroup: "g", AnnotationPodGroupSize: "0"}, err: "annotations[allot.dev/pod-group-size]"},
		{name: "sizealone", gpus: 1, ann: map[string]string{AnnotationPodGroupSize: "2"}, err: "a size without a group"},
		{name: "badfabric", gpus: 1, ann: map[string]string{AnnotationInterconnect: "pigeon"}, err: "annotations[allot.dev/interconnect]"},
		{name: "emptymodel", gpus: 1, ann: map[string]string{AnnotationGPUModels: "H100,,A100"}, err: "annotations[allot.dev/gpu-models]"},
		{name: "emptyres", gpus: 1, ann: map[string]string{AnnotationReservation: " "}, err: "annotations[allot.dev/reservation]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := kubePod(tt.name, tt.gpus, tt.ann)
			p.Spec.PriorityClassName = tt.pc
			r, err := readPod(p, "acme", lookups{class: classOf})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "ns/"+tt.name) {
					t.Fatalf("err = %v, want one naming the pod and %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.tenant != "acme" || !tt.check(r) {
				t.Errorf("request = %+v", r)
			}
		})
	}
}

func TestTenantOf(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	if got, _ := tenantOf(ns, "team-a"); got != "team-a" {
		t.Errorf("no label: %q", got)
	}
	ns.Annotations = map[string]string{LabelTenant: "globex"}
	if got, _ := tenantOf(ns, "team-a"); got != "globex" {
		t.Errorf("annotation: %q", got)
	}
	ns.Labels = map[string]string{LabelTenant: "acme"}
	if got, _ := tenantOf(ns, "team-a"); got != "acme" {
		t.Errorf("label before annotation: %q", got)
	}
	ns.Labels[LabelTenant] = ""
	if _, err := tenantOf(ns, "team-a"); err == nil || !strings.Contains(err.Error(), "team-a") {
		t.Errorf("empty label: %v", err)
	}
}

// FuzzReadPod: no annotation makes a panic, and what is read is a request
// the core accepts (model.JobSpec.Validate) or an error naming the pod.
func FuzzReadPod(f *testing.F) {
	f.Add("spot:3", "train", "4", "250", "r1", "H100", "eastus", "infiniband", int64(0))
	f.Add("", "", "", "", "", "", "", "", int64(8))
	f.Add("reserved", "g", "x", "-1", "", ",", "", "", int64(-1))
	f.Fuzz(func(t *testing.T, class, group, size, milli, res, models, regions, fabric string, gpus int64) {
		ann := map[string]string{}
		for k, v := range map[string]string{AnnotationClass: class, AnnotationPodGroup: group, AnnotationPodGroupSize: size,
			AnnotationGPUMilli: milli, AnnotationReservation: res, AnnotationGPUModels: models, AnnotationRegions: regions,
			AnnotationInterconnect: fabric} {
			if v != "" {
				ann[k] = v
			}
		}
		p := kubePod("fuzz", 0, ann)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
		r, err := readPod(p, "acme", lookups{})
		if err != nil {
			if !strings.Contains(err.Error(), "ns/fuzz") {
				t.Fatalf("error %q does not name the pod", err)
			}
			return
		}
		spec := model.JobSpec{Name: "fuzz", Tenant: r.tenant, Resources: r.res, Priority: r.priority, Placement: r.place}
		spec.Resources.InstanceCount = max(r.size, 1)
		if err := spec.Validate(); err != nil {
			t.Fatalf("annotations %v read as a spec the core refuses: %v", ann, err)
		}
	})
}

func TestPlacementRoundTrip(t *testing.T) {
	slots := []slot{{pod: "g-0", node: "n1", gpus: []int{0, 1}}, {pod: "g-1", node: "n2", gpus: []int{7}}, {pod: "g-2", node: "n3"}}
	v := formatPlacement(slots)
	if v != "g-0=n1:0,1;g-1=n2:7;g-2=n3:" {
		t.Fatalf("formatted %q", v)
	}
	got, err := parsePlacement(v)
	if err != nil || !reflect.DeepEqual(got, slots) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	for _, bad := range []string{"", "g-0", "g-0=n1", "=n1:0", "g-0=:0", "g-0=n1:0,0", "g-0=n1:64", "g-0=n1:0;g-0=n2:1", "g-0=n1:x"} {
		if _, err := parsePlacement(bad); err == nil {
			t.Errorf("parsePlacement(%q) accepted", bad)
		}
	}
}

// FuzzParsePlacement: what parses formats back to the same placement.
func FuzzParsePlacement(f *testing.F) {
	f.Add("g-0=n1:0,1;g-1=n2:7;g-2=n3:")
	f.Add("a=b:")
	f.Add(";;=:,")
	f.Fuzz(func(t *testing.T, v string) {
		slots, err := parsePlacement(v)
		if err != nil {
			return
		}
		again, err := parsePlacement(formatPlacement(slots))
		if err != nil || !reflect.DeepEqual(again, slots) {
			t.Fatalf("%q: parsed %+v, formatted and parsed again %+v, %v", v, slots, again, err)
		}
	})
}

// FuzzParseGPUs: indices parse to distinct GPUs from 0 to 63 or fail.
func FuzzParseGPUs(f *testing.F) {
	f.Add("0,1,2,3")
	f.Add("63")
	f.Add(" 1, 2")
	f.Fuzz(func(t *testing.T, v string) {
		gpus, err := parseGPUs(v)
		if err != nil {
			return
		}
		seen := map[int]bool{}
		for _, g := range gpus {
			if g < 0 || g > 63 || seen[g] {
				t.Fatalf("%q parsed to %v", v, gpus)
			}
			seen[g] = true
		}
		if again, err := parseGPUs(formatGPUs(gpus)); err != nil || !reflect.DeepEqual(again, gpus) {
			t.Fatalf("%q: %v formats and parses to %v, %v", v, gpus, again, err)
		}
	})
}

// TestAssemble: pods become the core's jobs: a pod alone, a gang of its
// pods in name order, a gang short of pods kept out, a gang whose pods
// ask differently refused, bound pods holding their GPUs, a gang bound in
// part finished where its placement says, and assumed binds counted.
func TestAssemble(t *testing.T) {
	fleet := &model.Fleet{Nodes: []model.Node{{Name: "n1"}, {Name: "n2"}}}
	g := func(name, group, size string, gpus int64) *corev1.Pod {
		return kubePod(name, gpus, map[string]string{AnnotationPodGroup: group, AnnotationPodGroupSize: size})
	}
	alone := kubePod("alone", 1, nil)
	running := kubePod("running", 2, map[string]string{AnnotationGPUs: "3,4"})
	running.Spec.NodeName = "n1"
	leaving := kubePod("leaving", 1, nil)
	leaving.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	done := kubePod("done", 1, nil)
	done.Status.Phase = corev1.PodSucceeded
	lost := kubePod("lost", 1, map[string]string{AnnotationGPUs: "0"})
	lost.Spec.NodeName = "gone"
	part0, part1 := g("part-0", "part", "2", 1), g("part-1", "part", "2", 1)
	part0.Spec.NodeName = "n2"
	part0.Annotations[AnnotationGPUs] = "5"
	part0.Annotations[AnnotationPlacement] = "part-0=n2:5;part-1=n1:6"
	broken0, broken1 := g("broken-0", "broken", "2", 1), g("broken-1", "broken", "2", 1)
	broken0.Spec.NodeName = "n1"
	broken0.Annotations[AnnotationGPUs] = "0"
	broken0.Annotations[AnnotationPlacement] = "broken-0=n1:0;broken-1=gone:0"
	assumed := kubePod("assumed", 1, nil)
	pods := []*corev1.Pod{alone, running, leaving, done, lost, g("gang-1", "gang", "2", 4), g("gang-0", "gang", "2", 4),
		g("short-0", "short", "3", 1), g("odd-0", "odd", "2", 1), g("odd-1", "odd", "2", 2), part1, part0, assumed, broken1, broken0}
	works := assemble(pods, func(ns string) (string, error) { return "acme", nil }, lookups{}, fleet, func(p *corev1.Pod) (bound, bool) {
		if p.Name == "assumed" {
			return bound{node: "n2", gpus: []int{7}}, true
		}
		return bound{}, false
	})
	byID := map[string]*work{}
	for _, w := range works {
		byID[w.id] = w
	}
	if len(works) != 9 {
		var ids []string
		for _, w := range works {
			ids = append(ids, w.id)
		}
		t.Fatalf("works %v", ids)
	}
	if w := byID["ns/alone"]; w.job == nil || w.job.Status.State != model.StateQueued || w.job.Spec.Resources.InstanceCount != 1 {
		t.Errorf("alone: %+v", w)
	}
	if w := byID["ns/running"]; w.job == nil || w.job.Status.State != model.StateRunning ||
		!reflect.DeepEqual(w.job.Status.Allocations, []model.Allocation{{Node: "n1", GPUs: []int{3, 4}, GPUMilli: 1000}}) {
		t.Errorf("running: %+v", w.job)
	}
	if w := byID["ns/lost"]; w.job != nil {
		t.Errorf("a pod on a node the fleet lacks is offered to the core: %+v", w.job)
	}
	w := byID["ns/pod-group/gang"]
	if w.job == nil || w.job.Spec.Resources.InstanceCount != 2 || w.pods[0].Name != "gang-0" || w.job.Spec.Name != "gang" {
		t.Errorf("gang: %+v", w)
	}
	if w := byID["ns/pod-group/short"]; w.job != nil || w.reason != ReasonPodGroupIncomplete || !strings.Contains(w.why, "1 of its 3") {
		t.Errorf("short: %+v", w)
	}
	if w := byID["ns/pod-group/odd"]; w.job != nil || w.reason != ReasonInvalidPod {
		t.Errorf("odd: %+v", w)
	}
	w = byID["ns/pod-group/part"]
	if w.job == nil || w.job.Status.State != model.StateRunning || len(w.job.Status.Allocations) != 2 ||
		!reflect.DeepEqual(w.finish, []slot{{pod: "part-1", node: "n1", gpus: []int{6}}}) {
		t.Errorf("part: %+v finish %+v", w.job, w.finish)
	}
	if w := byID["ns/pod-group/broken"]; w.job != nil || !w.broken || len(w.finish) != 0 || w.reason != ReasonNodeLost || !strings.Contains(w.why, "node gone") {
		t.Errorf("broken: %+v", w)
	}
	if w := byID["ns/assumed"]; w.job == nil || w.job.Status.State != model.StateRunning || w.job.Status.Allocations[0].Node != "n2" {
		t.Errorf("assumed: %+v", w.job)
	}
}

// FuzzTenantAndClass: a namespace's tenant label and a PriorityClass's
// class annotation either read as a tenant name and a class, or fail
// naming the namespace or PriorityClass; never a panic.
func FuzzTenantAndClass(f *testing.F) {
	f.Add("acme", "spot:2")
	f.Add("", "")
	f.Add("\x00", "reserved:x")
	f.Fuzz(func(t *testing.T, tenant, class string) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{LabelTenant: tenant}}}
		got, err := tenantOf(ns, "team")
		switch {
		case err != nil && !strings.Contains(err.Error(), "team"):
			t.Fatalf("error %q does not name the namespace", err)
		case err == nil && (got == "" || model.Printable("tenant", got) != nil):
			t.Fatalf("label %q read as tenant %q", tenant, got)
		}
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "pc", Annotations: map[string]string{AnnotationClass: class}}}
		p, ok, err := priorityClassOf(pc)
		switch {
		case err != nil && (!strings.Contains(err.Error(), "PriorityClass pc") || ok):
			t.Fatalf("error %q, ok %v: want one naming the PriorityClass", err, ok)
		case err == nil && (!ok || p.Class < model.ClassSpot || p.Class > model.ClassReserved):
			t.Fatalf("annotation %q read as %+v, %v", class, p, ok)
		}
	})
}
