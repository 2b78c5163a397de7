package kube

import (
	"fmt"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/allot-dev/allot/internal/model"
)

// work is one job of the core made of pods: a pod alone, or the pods of a
// gang.
type work struct {
	id   string
	job  *model.Job    // nil when it is not offered to the core (see why)
	pods []*corev1.Pod // in instance order (by name)
	req  podRequest
	// finish, for a gang bound in part (a controller stopped between its
	// binds), is where its unbound pods go: its placement as recorded on
	// its bound pods.
	finish []slot
	// broken marks a gang bound in part whose placement names a node
	// that is gone: its bound pods are evicted (Cycle, step 3).
	broken bool
	// reason and why say, for work not offered to the core, why not:
	// a gang still short of pods, pods asking in ways allot cannot read.
	reason, why string
}

// bound is where a pod runs: read from the pod, or assumed from a bind
// the informer has not shown yet.
type bound struct {
	node      string
	gpus      []int
	placement string // the gang's AnnotationPlacement
}

// podKey names a pod as namespace/name: the ID 'allot job why' takes.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// boundOf reads where a pod runs: spec.nodeName and AnnotationGPUs, else
// assume (a bind of this controller not yet seen); ok false for a pod not
// bound.
func boundOf(p *corev1.Pod, assume func(*corev1.Pod) (bound, bool)) (bound, bool, error) {
	if p.Spec.NodeName == "" {
		if assume != nil {
			if b, ok := assume(p); ok {
				return b, true, nil
			}
		}
		return bound{}, false, nil
	}
	b := bound{node: p.Spec.NodeName, placement: p.Annotations[AnnotationPlacement]}
	if v, ok := p.Annotations[AnnotationGPUs]; ok && v != "" {
		g, err := parseGPUs(v)
		if err != nil {
			return b, true, fmt.Errorf("pod %s: annotations[%s]: %w", podKey(p), AnnotationGPUs, err)
		}
		b.gpus = g
	}
	return b, true, nil
}

// Reasons of work the controller keeps from the core, in pods'
// PodScheduled conditions.
const (
	ReasonPodGroupIncomplete = "PodGroupIncomplete"
	ReasonInvalidPod         = "InvalidPod"
	ReasonNodeLost           = "NodeLost"
)

// assemble groups allot's pods into the core's jobs. tenant maps a
// namespace to its tenant; fleet tells which nodes exist (work bound to a
// node the fleet lacks holds nothing the core could count, and is left
// out).
func assemble(pods []*corev1.Pod, tenant func(ns string) (string, error), lk lookups,
	fleet *model.Fleet, assume func(*corev1.Pod) (bound, bool)) []*work {
	type member struct {
		pod *corev1.Pod
		req podRequest
		b   bound
		on  bool
	}
	groups := map[string][]member{}
	bad := map[string]string{} // group -> why it is invalid
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		t, err := tenant(p.Namespace)
		var r podRequest
		if err == nil {
			r, err = readPod(p, t, lk)
		}
		key := podKey(p)
		if err == nil && r.group != "" {
			key = p.Namespace + "/pod-group/" + r.group
		}
		b, on, berr := boundOf(p, assume)
		if err == nil {
			err = berr
		}
		if !on && p.DeletionTimestamp != nil {
			continue // on its way out, holding nothing
		}
		if err != nil {
			key = podKey(p) // alone: its group could not be read
			bad[key] = err.Error()
		}
		groups[key] = append(groups[key], member{pod: p, req: r, b: b, on: on})
	}
	nodes := map[string]bool{}
	for _, n := range fleet.Nodes {
		nodes[n.Name] = true
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*work, 0, len(ids))
	for _, id := range ids {
		ms := groups[id]
		sort.Slice(ms, func(a, b int) bool { return ms[a].pod.Name < ms[b].pod.Name })
		w := &work{id: id, req: ms[0].req}
		for _, m := range ms {
			w.pods = append(w.pods, m.pod)
		}
		out = append(out, w)
		if why, ok := bad[id]; ok {
			w.reason, w.why = ReasonInvalidPod, why
			continue
		}
		for _, m := range ms[1:] {
			if !sameRequest(m.req, w.req) {
				w.reason, w.why = ReasonInvalidPod, fmt.Sprintf("pods %s and %s of pod group %s ask differently (resources, class, tenant, placement or size): a gang's pods must ask alike",
					ms[0].pod.Name, m.pod.Name, w.req.group)
				break
			}
		}
		if w.reason != "" {
			continue
		}
		var first time.Time
		for _, m := range ms {
			if t := m.pod.CreationTimestamp.Time; first.IsZero() || t.Before(first) {
				first = t
			}
		}
		spec := model.JobSpec{Name: ms[0].pod.Name, Tenant: w.req.tenant, Resources: w.req.res, Priority: w.req.priority,
			Placement: w.req.place, Checkpoint: model.Checkpoint{Grace: time.Duration(w.req.grace) * time.Second}}
		if w.req.group != "" {
			spec.Name = w.req.group
		}
		spec.Resources.InstanceCount = len(ms)
		j := &model.Job{ID: id, Spec: spec, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: first}}
		milli := int64(model.MilliPerGPU)
		if w.req.res.Fractional() {
			milli = w.req.res.GPUMilli
		}
		var on []member
		for _, m := range ms {
			if m.on {
				on = append(on, m)
			}
		}
		if len(on) == 0 {
			if w.req.group != "" && len(ms) < w.req.size {
				w.reason, w.why = ReasonPodGroupIncomplete, fmt.Sprintf("pod group %s has %d of its %d pods; it is bound once all exist", w.req.group, len(ms), w.req.size)
				continue
			}
			w.job = j
			continue
		}
		// Work that holds capacity.
		j.Status.State = model.StateRunning
		for _, m := range on {
			if m.pod.DeletionTimestamp != nil {
				j.Status.State = model.StatePreempted
			}
			if st := m.pod.Status.StartTime; st != nil && (j.Status.StartedAt.IsZero() || st.Time.Before(j.Status.StartedAt)) {
				j.Status.StartedAt = st.Time
			}
		}
		if j.Status.StartedAt.IsZero() {
			j.Status.StartedAt = first
		}
		slots := make([]slot, 0, len(ms))
		if len(on) < len(ms) {
			// A gang bound in part: the rest goes where its placement
			// says.
			pl, err := parsePlacement(on[0].b.placement)
			if err != nil {
				w.reason, w.why = ReasonInvalidPod, fmt.Sprintf("pod group %s is bound in part and pod %s: annotations[%s]: %v", w.req.group, on[0].pod.Name, AnnotationPlacement, err)
				continue
			}
			where := map[string]slot{}
			for _, s := range pl {
				where[s.pod] = s
			}
			for _, m := range ms {
				s, ok := where[m.pod.Name]
				switch {
				case !ok:
					w.reason, w.why = ReasonInvalidPod, fmt.Sprintf("pod group %s is bound in part and its placement names no pod %s", w.req.group, m.pod.Name)
				case !m.on:
					w.finish = append(w.finish, s)
				}
				slots = append(slots, s)
			}
			if w.reason != "" {
				continue
			}
		} else {
			for _, m := range ms {
				slots = append(slots, slot{pod: m.pod.Name, node: m.b.node, gpus: m.b.gpus})
			}
		}
		lost := ""
		for _, s := range slots {
			if !nodes[s.node] && lost == "" {
				lost = s.node
			}
			j.Status.Allocations = append(j.Status.Allocations, model.Allocation{Node: s.node, GPUs: s.gpus, GPUMilli: milli})
		}
		switch {
		case lost == "":
			w.job = j
		case len(w.finish) > 0:
			// The API server would accept a Binding to the missing
			// node: the part bound goes instead, so that the gang is
			// placed whole again.
			w.finish, w.broken = nil, true
			w.reason, w.why = ReasonNodeLost, fmt.Sprintf("pod group %s was bound in part and node %s, where the rest was to go, is gone: its bound pods are evicted so that it is placed whole again", w.req.group, lost)
		}
	}
	return out
}

// sameRequest reports whether two pods of a group ask alike.
func sameRequest(a, b podRequest) bool {
	return reflect.DeepEqual(a, b)
}
