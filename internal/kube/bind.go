package kube

import (
	"context"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/allot-dev/allot/internal/sched"
)

// bindJob is one pod's Binding.
type bindJob struct {
	pod   *corev1.Pod
	b     bound
	milli int64
}

// bind carries out the Plan's binds: one Binding per pod, each with the
// GPUs the core chose (AnnotationGPUs) and, for a gang, the whole gang's
// placement (AnnotationPlacement), so that a controller that stops
// between a gang's binds is followed by one that finishes the gang where
// it was placed (Cycle, step 3) instead of placing it again. Binds run
// Config.Binders at a time; each is assumed until the informer shows it.
func (c *Controller) bind(ctx context.Context, binds []sched.Bind, byID map[string]*work) {
	var todo []bindJob
	for _, b := range binds {
		w := byID[b.Job]
		if w == nil || len(w.pods) != len(b.Nodes) {
			c.cfg.Log.Error("plan binds a job whose pods changed", "job", b.Job)
			continue
		}
		var placement string
		if w.req.group != "" {
			slots := make([]slot, len(b.Nodes))
			for i, p := range b.Nodes {
				slots[i] = slot{pod: w.pods[i].Name, node: p.Node, gpus: p.GPUs}
			}
			placement = formatPlacement(slots)
		}
		for i, p := range b.Nodes {
			todo = append(todo, bindJob{pod: w.pods[i], b: bound{node: p.Node, gpus: p.GPUs, placement: placement}, milli: p.GPUMilli})
		}
	}
	c.run(ctx, todo)
}

// finish binds the pods of a gang bound in part where its placement says.
func (c *Controller) finish(ctx context.Context, w *work) {
	byName := map[string]*corev1.Pod{}
	for _, p := range w.pods {
		byName[p.Name] = p
	}
	placement := formatPlacementOf(w)
	var todo []bindJob
	for _, s := range w.finish {
		if p := byName[s.pod]; p != nil && !c.isAssumed(p) {
			todo = append(todo, bindJob{pod: p, b: bound{node: s.node, gpus: s.gpus, placement: placement}})
		}
	}
	if len(todo) > 0 {
		c.cfg.Log.Info("finishing a gang bound in part", "job", w.id, "pods", len(todo))
		c.run(ctx, todo)
	}
}

// formatPlacementOf is the placement a gang bound in part records.
func formatPlacementOf(w *work) string {
	for _, p := range w.pods {
		if v := p.Annotations[AnnotationPlacement]; v != "" {
			return v
		}
	}
	return ""
}

// run posts the Bindings, Config.Binders at a time.
func (c *Controller) run(ctx context.Context, todo []bindJob) {
	now := c.cfg.Now()
	c.mu.Lock()
	for _, j := range todo {
		c.assumed[j.pod.UID] = assumption{b: j.b, at: now}
	}
	c.mu.Unlock()
	work := make(chan bindJob)
	var wg sync.WaitGroup
	for range min(c.cfg.Binders, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				c.post(ctx, j)
			}
		}()
	}
	for _, j := range todo {
		work <- j
	}
	close(work)
	wg.Wait()
}

// post binds one pod. A pod already bound (a conflict) is left as it is:
// the API server binds a pod once.
func (c *Controller) post(ctx context.Context, j bindJob) {
	ann := map[string]string{}
	if len(j.b.gpus) > 0 {
		ann[AnnotationGPUs] = formatGPUs(j.b.gpus)
	}
	if j.b.placement != "" {
		ann[AnnotationPlacement] = j.b.placement
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.pod.Namespace, Name: j.pod.Name, UID: j.pod.UID, Annotations: ann},
		Target:     corev1.ObjectReference{Kind: "Node", Name: j.b.node},
	}
	err := c.cfg.Client.CoreV1().Pods(j.pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	if err != nil {
		c.mu.Lock()
		delete(c.assumed, j.pod.UID)
		c.mu.Unlock()
		if apierrors.IsConflict(err) {
			c.conflicts.Add(1)
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			c.cfg.Log.Error("bind pod", "pod", podKey(j.pod), "node", j.b.node, "err", err)
		}
		return
	}
	c.binds.Add(1)
	if c.OnBind != nil {
		c.OnBind(podKey(j.pod), j.b.node)
	}
	gpus := "none"
	if len(j.b.gpus) > 0 {
		gpus = formatGPUs(j.b.gpus)
	}
	c.rec.Eventf(j.pod, corev1.EventTypeNormal, "Scheduled", "allot bound %s to %s (GPUs %s)", podKey(j.pod), j.b.node, gpus)
	c.cfg.Log.Info("bound pod", "pod", podKey(j.pod), "node", j.b.node, "gpus", gpus)
}

// deleteOptions deletes a pod with grace seconds, only the pod of uid.
func deleteOptions(grace int64, uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}}
}

// condition is the PodScheduled condition of a pending pod.
func condition(reason, detail string) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: detail}
}

// scheduledCondition returns the pod's PodScheduled condition.
func scheduledCondition(p *corev1.Pod) (corev1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// explain writes why each pending pod waits: its PodScheduled condition
// (False, the core's reason and detail) and an Event, both only when they
// changed.
func (c *Controller) explain(ctx context.Context, works []*work, pending map[string]sched.Pending) {
	for _, w := range works {
		reason, detail := w.reason, w.why
		if p, ok := pending[w.id]; ok {
			reason, detail = p.Reason.String(), p.Detail
		}
		if reason == "" {
			continue
		}
		for _, pod := range w.pods {
			if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || c.isAssumed(pod) {
				continue
			}
			if old, ok := scheduledCondition(pod); ok && old.Status == corev1.ConditionFalse && old.Reason == reason && old.Message == detail {
				continue
			}
			cond := condition(reason, detail)
			cond.LastTransitionTime = metav1.NewTime(c.cfg.Now())
			p := pod.DeepCopy()
			set := false
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.PodScheduled {
					p.Status.Conditions[i], set = cond, true
				}
			}
			if !set {
				p.Status.Conditions = append(p.Status.Conditions, cond)
			}
			if _, err := c.cfg.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
					c.cfg.Log.Error("write pod condition", "pod", podKey(pod), "err", err)
				}
				continue
			}
			c.rec.Event(pod, corev1.EventTypeWarning, reason, detail)
		}
	}
}

// formatMilli is a GPU fraction for people: 250 is 0.25.
func formatMilli(m int64) string { return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64) }
