// Package kubetest runs a real kube-apiserver (with its etcd) for the
// tests of package kube and of the kube command, through
// controller-runtime's envtest, and a small fake kubelet that marks bound
// pods Running, ends them when asked, and lets pods being deleted go.
//
// The binaries come from scripts/kube-assets.sh: $KUBEBUILDER_ASSETS, else
// its default folder. Where they are missing a test skips and says how to
// build them, unless ALLOT_REQUIRE_KUBE=1 (CI), where it fails.
package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Version is the Kubernetes release scripts/kube-assets.sh builds.
const Version = "v1.34.4"

// Assets returns the folder holding etcd and kube-apiserver, or "" when
// they are missing.
func Assets() string {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = os.Getenv("ALLOT_KUBE_ASSETS")
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "allot", "kube", Version)
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return ""
		}
	}
	return dir
}

// logOnce quiets controller-runtime's logger, which envtest writes to.
var logOnce sync.Once

// API is a running kube-apiserver.
type API struct {
	Config *rest.Config
	Client kubernetes.Interface
	env    *envtest.Environment
}

// Option changes what Start runs.
type Option func(*envtest.Environment)

// WithPodGroups installs the scheduler-plugins PodGroup resource
// (scheduling.x-k8s.io/v1alpha1, namespaced, spec.minMember), so that
// tests can create PodGroups.
func WithPodGroups() Option {
	return func(e *envtest.Environment) {
		e.CRDs = append(e.CRDs, podGroupCRD())
	}
}

// podGroupCRD is a minimal definition of the PodGroup resource: the
// fields allot reads, the rest kept as given.
func podGroupCRD() *apiextensionsv1.CustomResourceDefinition {
	keep := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "podgroups.scheduling.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "scheduling.x-k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "podgroups", Singular: "podgroup", Kind: "PodGroup", ListKind: "PodGroupList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &keep,
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: &keep, Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"minMember": {Type: "integer", Format: "int32"}}},
					}}}}},
		},
	}
}

// Start runs a kube-apiserver and its etcd for the test, stopped when it
// ends. Without the binaries it skips (fails with ALLOT_REQUIRE_KUBE=1).
func Start(t testing.TB, opts ...Option) *API {
	t.Helper()
	dir := Assets()
	if dir == "" {
		msg := "kube-apiserver and etcd are not built: run scripts/kube-assets.sh (about 5 min once) or set KUBEBUILDER_ASSETS"
		if os.Getenv("ALLOT_REQUIRE_KUBE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	logOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	env := &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 2 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	for _, o := range opts {
		o(env)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stop kube-apiserver: %v", err)
		}
	})
	cfg.QPS, cfg.Burst = 500, 1000
	cl, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &API{Config: cfg, Client: cl, env: env}
}

// Kubeconfig writes a kubeconfig file for the API server into dir and
// returns its path.
func (a *API) Kubeconfig(dir string) (string, error) {
	c := clientcmdapi.NewConfig()
	c.Clusters["test"] = &clientcmdapi.Cluster{Server: a.Config.Host, CertificateAuthorityData: a.Config.CAData}
	c.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: a.Config.CertData, ClientKeyData: a.Config.KeyData, Token: a.Config.BearerToken}
	c.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	c.CurrentContext = "test"
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*c, path)
}

// Node describes a fake GPU node.
type Node struct {
	Name   string
	GPUs   int
	Labels map[string]string
}

// AddNode creates a Ready, untainted node with GPUs allocatable
// nvidia.com/gpu, 96 CPUs and 1Ti of memory.
func (a *API) AddNode(ctx context.Context, n Node) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}
	node, err := a.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("96"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":      *resource.NewQuantity(int64(n.GPUs), resource.DecimalSI),
	}
	node.Status.Capacity, node.Status.Allocatable = res, res
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
	node, err = a.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("node %s status: %w", n.Name, err)
	}
	// The API server taints a new node not-ready (admission plugin
	// TaintNodesByCondition); with no node lifecycle controller here, the
	// fake kubelet's node takes the taint off itself.
	if len(node.Spec.Taints) > 0 {
		node.Spec.Taints = nil
		if _, err := a.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s taints: %w", n.Name, err)
		}
	}
	return nil
}

// Kubelet is a fake kubelet for every node: it marks bound pods Running,
// ends a pod when asked (End), and deletes at once a pod whose deletion
// began (a preemption), recording the grace it was given.
type Kubelet struct {
	cl    kubernetes.Interface
	mu    sync.Mutex       // guards grace and hold
	grace map[string]int64 // pod -> deletionGracePeriodSeconds it saw
	hold  map[string]bool  // pods whose deletion waits for Release
}

// RunKubelet starts a fake kubelet until ctx ends.
func (a *API) RunKubelet(ctx context.Context, t testing.TB) *Kubelet {
	k := &Kubelet{cl: a.Client, grace: map[string]int64{}, hold: map[string]bool{}}
	go k.loop(ctx, t)
	return k
}

func (k *Kubelet) loop(ctx context.Context, t testing.TB) {
	for ctx.Err() == nil {
		pods, err := k.cl.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				t.Logf("kubelet: list pods: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			key := p.Namespace + "/" + p.Name
			switch {
			case p.DeletionTimestamp != nil:
				k.mu.Lock()
				if _, seen := k.grace[key]; !seen && p.DeletionGracePeriodSeconds != nil {
					k.grace[key] = *p.DeletionGracePeriodSeconds
				}
				held := k.hold[key]
				k.mu.Unlock()
				if held {
					continue // its containers are still stopping
				}
				zero := int64(0)
				_ = k.cl.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			case p.Spec.NodeName != "" && p.Status.Phase == corev1.PodPending:
				now := metav1.Now()
				p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &now
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
				_, _ = k.cl.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Grace returns the grace the deletion of pod (namespace/name) was given,
// and whether the kubelet saw it deleted.
func (k *Kubelet) Grace(pod string) (int64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	g, ok := k.grace[pod]
	return g, ok
}

// Hold keeps pod (namespace/name) from going once its deletion begins,
// as containers that take their whole grace to stop, until Release.
func (k *Kubelet) Hold(pod string) {
	k.mu.Lock()
	k.hold[pod] = true
	k.mu.Unlock()
}

// Release lets a held pod go.
func (k *Kubelet) Release(pod string) {
	k.mu.Lock()
	delete(k.hold, pod)
	k.mu.Unlock()
}

// End marks a running pod Succeeded, as its containers exiting would.
func (k *Kubelet) End(ctx context.Context, ns, name string) error {
	p, err := k.cl.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	p.Status.Phase = corev1.PodSucceeded
	_, err = k.cl.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// Pod describes a pod for allot.
type Pod struct {
	Namespace, Name string
	GPUs            int
	Annotations     map[string]string
	Grace           int64 // terminationGracePeriodSeconds; 0 leaves the default
	SchedulerName   string
}

// AddPod creates a pod with one container limited to GPUs nvidia.com/gpu,
// for scheduler allot unless SchedulerName says otherwise.
func (a *API) AddPod(ctx context.Context, p Pod) (*corev1.Pod, error) {
	if p.SchedulerName == "" {
		p.SchedulerName = "allot"
	}
	c := corev1.Container{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	if p.GPUs > 0 {
		q := *resource.NewQuantity(int64(p.GPUs), resource.DecimalSI)
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": q}
		c.Resources.Requests["nvidia.com/gpu"] = q
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Annotations: p.Annotations},
		Spec: corev1.PodSpec{SchedulerName: p.SchedulerName, Containers: []corev1.Container{c}}}
	if p.Grace > 0 {
		pod.Spec.TerminationGracePeriodSeconds = &p.Grace
	}
	return a.Client.CoreV1().Pods(p.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

// AddNamespace creates a namespace whose pods are tenant's.
func (a *API) AddNamespace(ctx context.Context, name, tenant string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"allot.dev/tenant": tenant}}}
	_, err := a.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	return err
}

// Eventually polls cond every 50ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s (last: %v)", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
