package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/allot-dev/allot/internal/model"
)

// podRequest is what one pod asks of the core.
type podRequest struct {
	tenant   string
	priority model.Priority
	// group and size: the pod's gang; "" for a pod alone.
	group string
	size  int
	res   model.Resources // one instance's: InstanceCount 1
	place model.Placement
	grace int64 // seconds between SIGTERM and SIGKILL when evicted
}

// lookups are what a pod's translation reads of other objects; a nil
// func finds nothing.
type lookups struct {
	// class resolves a PriorityClass name to an allot priority: the
	// class's own AnnotationClass; ok false when no such PriorityClass
	// exists or it carries none.
	class func(name string) (p model.Priority, ok bool, err error)
	// groupSize reads the size (spec.minMember) of the scheduler-plugins
	// PodGroup ns/name; ok false when there is none.
	groupSize func(ns, name string) (size int, ok bool, err error)
}

// readPod translates a pod of the given tenant. The error names the pod
// and the annotation or field at fault.
func readPod(p *corev1.Pod, tenant string, lk lookups) (podRequest, error) {
	fail := func(field string, err error) (podRequest, error) {
		return podRequest{}, fmt.Errorf("pod %s/%s: %s: %w", p.Namespace, p.Name, field, err)
	}
	a := p.Annotations
	r := podRequest{tenant: tenant}
	var err error
	if r.priority, err = podPriority(p, lk.class); err != nil {
		return fail("annotations["+AnnotationClass+"]", err)
	}
	if r.group, r.size, err = podGroup(p, lk.groupSize); err != nil {
		return fail("annotations["+AnnotationPodGroupSize+"]", err)
	}
	var cpu, mem, gpus int64
	for i, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
		if q, ok := c.Resources.Limits[GPUResource]; ok {
			if q.Value() < 0 {
				return fail(fmt.Sprintf("spec.containers[%d].resources.limits[%s]", i, GPUResource), fmt.Errorf("must not be negative"))
			}
			gpus += q.Value()
		}
	}
	// Init containers run one at a time before the others: the pod needs
	// the most of either.
	for _, c := range p.Spec.InitContainers {
		cpu = max(cpu, c.Resources.Requests.Cpu().MilliValue())
		mem = max(mem, c.Resources.Requests.Memory().Value())
		if q, ok := c.Resources.Limits[GPUResource]; ok {
			gpus = max(gpus, q.Value())
		}
	}
	if gpus > 64 {
		return fail("spec.containers[*].resources.limits["+GPUResource+"]", fmt.Errorf("at most 64 GPUs per pod, got %d", gpus))
	}
	r.res = model.Resources{InstanceCount: 1, GPUsPerInstance: int(gpus), CPUMilli: cpu, MemoryMiB: (mem + 1<<20 - 1) >> 20}
	if v, ok := a[AnnotationGPUMilli]; ok {
		m, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil || m < 1 || m > 999:
			return fail("annotations["+AnnotationGPUMilli+"]", fmt.Errorf("want a fraction of one GPU in milli-GPU, 1 to 999, got %q", v))
		case gpus != 0:
			return fail("annotations["+AnnotationGPUMilli+"]", fmt.Errorf("a fraction of a GPU asks no %s limit (it has %d): the GPU is shared, not the device plugin's", GPUResource, gpus))
		}
		r.res.GPUsPerInstance, r.res.GPUMilli = 1, m
	}
	if r.res.GPUsPerInstance == 0 && r.res.CPUMilli == 0 {
		// The core places work that asks for GPUs or CPU; a pod that
		// names neither still takes a slot of a node.
		r.res.CPUMilli = 1
	}
	if v, ok := a[AnnotationGPUModels]; ok {
		if r.res.GPUModels, err = list(v); err != nil {
			return fail("annotations["+AnnotationGPUModels+"]", err)
		}
	}
	if v, ok := a[AnnotationRegions]; ok {
		if r.place.Regions, err = list(v); err != nil {
			return fail("annotations["+AnnotationRegions+"]", err)
		}
	}
	if v, ok := a[AnnotationInterconnect]; ok {
		f := model.Fabric(strings.ToLower(strings.TrimSpace(v)))
		if !f.Valid() {
			return fail("annotations["+AnnotationInterconnect+"]", fmt.Errorf("want infiniband, roce or ethernet, got %q", v))
		}
		r.place.Interconnect = f
	}
	if v, ok := a[AnnotationReservation]; ok {
		v = strings.TrimSpace(v)
		if v == "" {
			return fail("annotations["+AnnotationReservation+"]", fmt.Errorf("must name a reservation"))
		}
		if err := model.Printable("name", v); err != nil {
			return fail("annotations["+AnnotationReservation+"]", err)
		}
		r.place.Reservation = v
	}
	r.grace = corev1.DefaultTerminationGracePeriodSeconds
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		r.grace = max(*g, 0)
	}
	return r, nil
}

// podPriority reads the pod's AnnotationClass, else its PriorityClass's.
func podPriority(p *corev1.Pod, classOf func(string) (model.Priority, bool, error)) (model.Priority, error) {
	if v, ok := p.Annotations[AnnotationClass]; ok {
		return parsePriority(v)
	}
	name := p.Spec.PriorityClassName
	if name == "" {
		return model.Priority{Class: model.ClassStandard}, nil
	}
	if classOf != nil {
		pr, ok, err := classOf(name)
		if err != nil {
			return pr, fmt.Errorf("priorityClassName %s: %w", name, err)
		}
		if ok {
			return pr, nil
		}
	}
	if c, err := model.ParseClass(name); err == nil {
		return model.Priority{Class: c}, nil
	}
	return model.Priority{Class: model.ClassStandard}, nil
}

// parsePriority reads spot, standard or reserved with an optional :N.
func parsePriority(v string) (model.Priority, error) {
	if strings.TrimSpace(v) == "" {
		return model.Priority{}, fmt.Errorf("want spot, standard or reserved (optionally :N), got %q", v)
	}
	return model.ParsePriority(v)
}

// podGroup reads the pod's gang: its name (AnnotationPodGroup, else
// LabelPodGroup) and size (AnnotationPodGroupSize, else the
// scheduler-plugins PodGroup of that name's spec.minMember; at least 1
// and at most 4096). A pod in no group returns "", 1.
func podGroup(p *corev1.Pod, groupSize func(ns, name string) (int, bool, error)) (string, int, error) {
	g := p.Annotations[AnnotationPodGroup]
	if g == "" {
		g = p.Labels[LabelPodGroup]
	}
	v, hasSize := p.Annotations[AnnotationPodGroupSize]
	if g == "" {
		if hasSize {
			return "", 0, fmt.Errorf("a size without a group: set %s too", AnnotationPodGroup)
		}
		return "", 1, nil
	}
	if err := model.Printable("group", g); err != nil || strings.Contains(g, "/") {
		return "", 0, fmt.Errorf("group %q must be printable and hold no /", g)
	}
	if !hasSize {
		if groupSize != nil {
			n, ok, err := groupSize(p.Namespace, g)
			switch {
			case err != nil:
				return "", 0, fmt.Errorf("PodGroup %s/%s: %w", p.Namespace, g, err)
			case ok && (n < 1 || n > 4096):
				return "", 0, fmt.Errorf("PodGroup %s/%s: spec.minMember must be from 1 to 4096, got %d", p.Namespace, g, n)
			case ok:
				return g, n, nil
			}
		}
		return "", 0, fmt.Errorf("pod group %s needs its size (the pods bound together): the annotation, or a PodGroup %s with spec.minMember (scheduler-plugins)", g, g)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 4096 {
		return "", 0, fmt.Errorf("want a size from 1 to 4096, got %q", v)
	}
	return g, n, nil
}

// list reads a comma-separated list of names.
func list(v string) ([]string, error) {
	var out []string
	for i, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("item %d of %q is empty", i, v)
		}
		if err := model.Printable(fmt.Sprintf("[%d]", i), s); err != nil {
			return nil, err
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// tenantOf reads a namespace's tenant: LabelTenant as a label, else as an
// annotation, else the namespace's name.
func tenantOf(ns *corev1.Namespace, name string) (string, error) {
	if ns == nil {
		return name, nil
	}
	for _, m := range []map[string]string{ns.Labels, ns.Annotations} {
		if v, ok := m[LabelTenant]; ok {
			v = strings.TrimSpace(v)
			if v == "" {
				return "", fmt.Errorf("namespace %s: %s must name a tenant", name, LabelTenant)
			}
			if err := model.Printable(LabelTenant, v); err != nil {
				return "", fmt.Errorf("namespace %s: %w", name, err)
			}
			return v, nil
		}
	}
	return name, nil
}
