package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// PodGroupResource is the scheduler-plugins coscheduling PodGroup: a
// group's pods carry LabelPodGroup naming it, and its spec.minMember is
// the gang's size.
var PodGroupResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// startPodGroups watches PodGroups when the API server serves them (their
// CRD installed when the controller starts); without them a pod group's
// size comes from AnnotationPodGroupSize alone.
func (c *Controller) startPodGroups(ctx context.Context) error {
	if c.cfg.Dynamic == nil {
		return nil
	}
	list, err := c.cfg.Client.Discovery().ServerResourcesForGroupVersion(PodGroupResource.GroupVersion().String())
	if err != nil {
		c.cfg.Log.Info("no scheduler-plugins PodGroups served: pod groups take their size from " + AnnotationPodGroupSize)
		return nil
	}
	served := false
	for _, r := range list.APIResources {
		served = served || r.Name == PodGroupResource.Resource
	}
	if !served {
		return nil
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(c.cfg.Dynamic, 0)
	inf := f.ForResource(PodGroupResource)
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.Kick() }, UpdateFunc: func(any, any) { c.Kick() }, DeleteFunc: func(any) { c.Kick() },
	}); err != nil {
		return fmt.Errorf("kube: watch PodGroups: %w", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return fmt.Errorf("kube: PodGroups did not sync: %w", ctx.Err())
	}
	c.podGroups = inf.Lister()
	return nil
}

// groupSize reads spec.minMember of PodGroup ns/name.
func (c *Controller) groupSize(ns, name string) (int, bool, error) {
	if c.podGroups == nil {
		return 0, false, nil
	}
	obj, err := c.podGroups.ByNamespace(ns).Get(name)
	if err != nil {
		return 0, false, nil // none (yet): the pods wait, told why
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return 0, false, fmt.Errorf("unexpected %T", obj)
	}
	return minMember(u)
}

// minMember reads a PodGroup's spec.minMember.
func minMember(u *unstructured.Unstructured) (int, bool, error) {
	n, found, err := unstructured.NestedInt64(u.Object, "spec", "minMember")
	if err != nil {
		return 0, false, fmt.Errorf("spec.minMember: %w", err)
	}
	if !found {
		return 0, false, fmt.Errorf("spec.minMember is not set")
	}
	return int(n), true, nil
}
