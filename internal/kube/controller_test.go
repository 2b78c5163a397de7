package kube

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/allot-dev/allot/internal/kube/kubetest"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/store/bolt"
)

// The tests below run against a real kube-apiserver (package kubetest).

// testTenants is the tenants file of the tests: acme with a quota of 8
// gpu-series GPUs in eastus, globex and spotty without one.
const testTenants = `
partitions:
  - {name: shared, tier: shared}
tenants:
  - {name: acme, kind: customer, partition: shared}
  - {name: globex, kind: customer, partition: shared}
  - {name: spotty, kind: customer, partition: shared}
quotas:
  - {tenant: acme, region: eastus, series: gpu, gpus: 8}
`

// h100 are the labels of an eastus H100 node of cluster on fabric.
func h100(cluster, fabric, leaf string) map[string]string {
	return map[string]string{LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", LabelRegion: "eastus", LabelZone: "eastus-1",
		LabelCluster: cluster, LabelFabric: fabric, LabelLeaf: leaf}
}

type fixture struct {
	api     *kubetest.API
	kubelet *kubetest.Kubelet
	ctx     context.Context
}

func setup(t *testing.T, opts ...kubetest.Option) *fixture {
	t.Helper()
	api := kubetest.Start(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	f := &fixture{api: api, ctx: ctx}
	f.kubelet = api.RunKubelet(ctx, t)
	for ns, tenant := range map[string]string{"acme": "acme", "globex": "globex", "spotty": "spotty"} {
		if err := api.AddNamespace(ctx, ns, tenant); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// controller starts a controller on f's API server until the returned
// stop is called (or the test ends).
func (f *fixture) controller(t *testing.T, tenants string, mod func(*Config)) (*Controller, func()) {
	t.Helper()
	cfg := Config{Client: f.api.Client, TenantsName: "tenants.yaml", Tenants: []byte(tenants), Tick: 200 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(ctx, nil); err != nil && ctx.Err() == nil {
			t.Errorf("controller: %v", err)
		}
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return c, stop
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (f *fixture) nodes(t *testing.T, ns ...kubetest.Node) {
	t.Helper()
	for _, n := range ns {
		if err := f.api.AddNode(f.ctx, n); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) pod(t *testing.T, p kubetest.Pod) {
	t.Helper()
	if _, err := f.api.AddPod(f.ctx, p); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) get(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := f.api.Client.CoreV1().Pods(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitBound waits until the pods are bound and returns their nodes.
func (f *fixture) waitBound(t *testing.T, ns string, names ...string) []string {
	t.Helper()
	nodes := make([]string, len(names))
	kubetest.Eventually(t, 30*time.Second, fmt.Sprintf("pods %v bound", names), func() (bool, error) {
		for i, n := range names {
			p, err := f.api.Client.CoreV1().Pods(ns).Get(f.ctx, n, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName == "" {
				return false, err
			}
			nodes[i] = p.Spec.NodeName
		}
		return true, nil
	})
	return nodes
}

// waitPending waits until pod ns/name carries PodScheduled False with
// reason and returns the condition.
func (f *fixture) waitPending(t *testing.T, ns, name, reason string) corev1.PodCondition {
	t.Helper()
	var cond corev1.PodCondition
	kubetest.Eventually(t, 30*time.Second, fmt.Sprintf("pod %s/%s pending with %s", ns, name, reason), func() (bool, error) {
		p, err := f.api.Client.CoreV1().Pods(ns).Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c, ok := scheduledCondition(p)
		cond = c
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("bound to %s", p.Spec.NodeName)
		}
		return ok && c.Status == corev1.ConditionFalse && c.Reason == reason, fmt.Errorf("condition %+v", c)
	})
	return cond
}

func gang(ns, group string, size, i, gpus int, extra map[string]string) kubetest.Pod {
	a := map[string]string{AnnotationPodGroup: group, AnnotationPodGroupSize: fmt.Sprint(size)}
	for k, v := range extra {
		a[k] = v
	}
	return kubetest.Pod{Namespace: ns, Name: fmt.Sprintf("%s-%d", group, i), GPUs: gpus, Annotations: a}
}

// TestGangBindsWholeOnOneFabric: a 4-pod gang goes whole onto the one
// cluster (fabric) with 4 free nodes, never split over two; a second gang
// that fits in no one cluster binds no pod at all; a gang short of pods
// waits with PodGroupIncomplete.
func TestGangBindsWholeOnOneFabric(t *testing.T) {
	f := setup(t)
	// ib-a has 3 nodes, ib-b 4: 7 nodes in all, but a 4-node gang fits
	// on one fabric only in ib-b.
	for i := range 3 {
		f.nodes(t, kubetest.Node{Name: fmt.Sprintf("a%d", i), GPUs: 8, Labels: h100("ib-a", "infiniband", "a")})
	}
	for i := range 4 {
		f.nodes(t, kubetest.Node{Name: fmt.Sprintf("b%d", i), GPUs: 8, Labels: h100("ib-b", "infiniband", "b")})
	}
	f.controller(t, testTenants, nil)
	for i := range 4 {
		f.pod(t, gang("globex", "train", 4, i, 8, nil))
	}
	nodes := f.waitBound(t, "globex", "train-0", "train-1", "train-2", "train-3")
	seen := map[string]bool{}
	for _, n := range nodes {
		if !strings.HasPrefix(n, "b") || seen[n] {
			t.Fatalf("gang placed on %v, want 4 distinct nodes of cluster ib-b", nodes)
		}
		seen[n] = true
	}
	for i := range 4 {
		p := f.get(t, "globex", fmt.Sprintf("train-%d", i))
		if p.Annotations[AnnotationGPUs] != "0,1,2,3,4,5,6,7" || p.Annotations[AnnotationPlacement] == "" {
			t.Errorf("pod %s annotations %v: want GPUs 0-7 and the gang's placement", p.Name, p.Annotations)
		}
	}
	// A second 4-node gang: ib-a has 3 free nodes, ib-b none.
	for i := range 4 {
		f.pod(t, gang("globex", "second", 4, i, 8, nil))
	}
	if c := f.waitPending(t, "globex", "second-0", "InsufficientCapacity"); !strings.Contains(c.Message, "3 of 4 instances") {
		t.Errorf("second gang waits with %q: want the room for 3 of its 4 pods told", c.Message)
	}
	// A gang that has 2 of its 3 pods waits for the third.
	for i := range 2 {
		f.pod(t, gang("globex", "short", 3, i, 1, nil))
	}
	f.waitPending(t, "globex", "short-0", ReasonPodGroupIncomplete)
	for i := range 4 {
		if p := f.get(t, "globex", fmt.Sprintf("second-%d", i)); p.Spec.NodeName != "" {
			t.Fatalf("pod %s of a gang that does not fit was bound to %s", p.Name, p.Spec.NodeName)
		}
	}
	// Once the third exists, the short gang binds (ib-a has room).
	f.pod(t, gang("globex", "short", 3, 2, 1, nil))
	f.waitBound(t, "globex", "short-0", "short-1", "short-2")
}

// TestQuotaExceeded: a pod past its tenant's quota stays Pending with
// QuotaExceeded in its PodScheduled condition and an Event, and 'job why'
// (Controller.Why) explains it by the pod's name.
func TestQuotaExceeded(t *testing.T) {
	f := setup(t)
	f.nodes(t, kubetest.Node{Name: "n0", GPUs: 8, Labels: h100("c", "ethernet", "")},
		kubetest.Node{Name: "n1", GPUs: 8, Labels: h100("c", "ethernet", "")})
	c, _ := f.controller(t, testTenants, nil)
	f.pod(t, kubetest.Pod{Namespace: "acme", Name: "big", GPUs: 8})
	f.waitBound(t, "acme", "big")
	f.pod(t, kubetest.Pod{Namespace: "acme", Name: "over", GPUs: 1})
	cond := f.waitPending(t, "acme", "over", "QuotaExceeded")
	if !strings.Contains(cond.Message, "acme") || !strings.Contains(cond.Message, "eastus") {
		t.Errorf("condition message %q: want the tenant and the region", cond.Message)
	}
	kubetest.Eventually(t, 10*time.Second, "a QuotaExceeded event for acme/over", func() (bool, error) {
		evs, err := f.api.Client.CoreV1().Events("acme").List(f.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "over" && e.Reason == "QuotaExceeded" && e.Message == cond.Message {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs.Items))
	})
	y, ok := c.Why("acme/over")
	if !ok || y.State != "Queued" || y.Reason != "QuotaExceeded" || y.Detail != cond.Message {
		t.Errorf("Why(acme/over) = %+v, %v: want Queued, QuotaExceeded, %q", y, ok, cond.Message)
	}
	y, ok = c.Why("acme/big")
	if !ok || y.State != "Running" || len(y.RunningOn) != 1 || !strings.Contains(y.RunningOn[0], "big on n") {
		t.Errorf("Why(acme/big) = %+v, %v: want Running on a node", y, ok)
	}
	// Another tenant is not held by acme's quota.
	f.pod(t, kubetest.Pod{Namespace: "globex", Name: "free", GPUs: 1})
	f.waitBound(t, "globex", "free")
}

// TestSpotPreemptedForHigherClass: a spot pod is deleted with its own
// grace for a standard one that needs its GPUs, and the standard one binds
// once it is gone.
func TestSpotPreemptedForHigherClass(t *testing.T) {
	f := setup(t)
	f.nodes(t, kubetest.Node{Name: "n0", GPUs: 8, Labels: h100("c", "ethernet", "")})
	c, _ := f.controller(t, testTenants, nil)
	f.pod(t, kubetest.Pod{Namespace: "spotty", Name: "cheap", GPUs: 8, Grace: 7, Annotations: map[string]string{AnnotationClass: "spot"}})
	f.waitBound(t, "spotty", "cheap")
	kubetest.Eventually(t, 10*time.Second, "spot pod running", func() (bool, error) {
		return f.get(t, "spotty", "cheap").Status.Phase == corev1.PodRunning, nil
	})
	f.pod(t, kubetest.Pod{Namespace: "globex", Name: "urgent", GPUs: 8})
	nodes := f.waitBound(t, "globex", "urgent")
	if nodes[0] != "n0" {
		t.Fatalf("urgent on %s", nodes[0])
	}
	g, ok := f.kubelet.Grace("spotty/cheap")
	if !ok || g != 7 {
		t.Fatalf("spot pod deleted with grace %d (seen %v), want its own 7", g, ok)
	}
	if _, err := f.api.Client.CoreV1().Pods("spotty").Get(f.ctx, "cheap", metav1.GetOptions{}); err == nil {
		t.Fatal("the spot pod still exists after the urgent one bound")
	}
	if c.Deletes() != 1 {
		t.Errorf("deletes = %d, want 1", c.Deletes())
	}
}

// TestReservationBindsOnlyOntoItsNodes: a reservation created in allot's
// store holds one node for acme; globex's pods fill the others and one
// waits, while acme's pod naming the reservation binds onto the reserved
// node.
func TestReservationBindsOnlyOntoItsNodes(t *testing.T) {
	f := setup(t)
	for i := range 3 {
		f.nodes(t, kubetest.Node{Name: fmt.Sprintf("n%d", i), GPUs: 8, Labels: h100("c", "ethernet", "")})
	}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "allot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := server.PutReservation(f.ctx, st, model.Reservation{Name: "acme-res", Owner: "acme", SKU: "H100x8", Region: "eastus", Count: 1}); err != nil {
		t.Fatal(err)
	}
	c, _ := f.controller(t, testTenants, func(cfg *Config) { cfg.Store = st })
	for i := range 3 {
		f.pod(t, kubetest.Pod{Namespace: "globex", Name: fmt.Sprintf("g%d", i), GPUs: 8})
	}
	f.waitBound(t, "globex", "g0", "g1")
	f.waitPending(t, "globex", "g2", "InsufficientCapacity")
	reserved := c.inc.Reserved()["acme-res"]
	if len(reserved) != 1 {
		t.Fatalf("reservation holds %v, want one node", reserved)
	}
	for _, g := range []string{"g0", "g1"} {
		if n := f.get(t, "globex", g).Spec.NodeName; slices.Contains(reserved, n) {
			t.Fatalf("globex's %s runs on %s, which acme-res holds", g, n)
		}
	}
	f.pod(t, kubetest.Pod{Namespace: "acme", Name: "mine", GPUs: 8, Annotations: map[string]string{AnnotationReservation: "acme-res"}})
	if n := f.waitBound(t, "acme", "mine")[0]; !slices.Contains(reserved, n) {
		t.Fatalf("acme's pod naming the reservation runs on %s, not on its nodes %v", n, reserved)
	}
	// A pod naming a reservation that does not exist waits with the
	// core's reason.
	f.pod(t, kubetest.Pod{Namespace: "acme", Name: "nores", GPUs: 1, Annotations: map[string]string{AnnotationReservation: "nope"}})
	f.waitPending(t, "acme", "nores", "ReservationNotActive")
}

// TestFinishesAGangBoundInPart: a controller that stopped after binding 2
// of a gang's 4 pods (the Binding recorded the whole placement) is
// followed by one that binds the other 2 where the placement says, and
// nothing else twice.
func TestFinishesAGangBoundInPart(t *testing.T) {
	f := setup(t)
	for i := range 4 {
		f.nodes(t, kubetest.Node{Name: fmt.Sprintf("n%d", i), GPUs: 8, Labels: h100("c", "infiniband", "l")})
	}
	var pods []*corev1.Pod
	for i := range 4 {
		p, err := f.api.AddPod(f.ctx, gang("globex", "g", 4, i, 8, nil))
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	// Where the stopped controller placed them: in reverse node order, so
	// a fresh placement would not match it by chance.
	slots := make([]slot, 4)
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for i := range 4 {
		slots[i] = slot{pod: pods[i].Name, node: fmt.Sprintf("n%d", 3-i), gpus: all}
	}
	placement := formatPlacement(slots)
	for i := range 2 {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "globex", Name: pods[i].Name,
			Annotations: map[string]string{AnnotationGPUs: formatGPUs(all), AnnotationPlacement: placement}},
			Target: corev1.ObjectReference{Kind: "Node", Name: slots[i].node}}
		if err := f.api.Client.CoreV1().Pods("globex").Bind(f.ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := f.controller(t, testTenants, nil)
	nodes := f.waitBound(t, "globex", "g-0", "g-1", "g-2", "g-3")
	for i, n := range nodes {
		if n != slots[i].node {
			t.Fatalf("pod g-%d on %s, placement says %s", i, n, slots[i].node)
		}
	}
	time.Sleep(500 * time.Millisecond) // a few more cycles
	if c.Binds() != 2 {
		t.Fatalf("controller made %d binds, want the 2 the gang lacked", c.Binds())
	}
}

// TestRestartBindsNothingTwice: a controller stopped in the middle of a
// run is followed by another; between them every pod is bound exactly
// once and no GPU of a node is given twice.
func TestRestartBindsNothingTwice(t *testing.T) {
	f := setup(t)
	for i := range 6 {
		f.nodes(t, kubetest.Node{Name: fmt.Sprintf("n%d", i), GPUs: 8, Labels: h100("c", "infiniband", "l")})
	}
	var mu sync.Mutex
	count := map[string]int{}
	record := func(pod, node string) {
		mu.Lock()
		count[pod]++
		mu.Unlock()
	}
	first, stopFirst := f.controller(t, testTenants, func(cfg *Config) { cfg.Binders = 1 })
	first.OnBind = record
	var want []string
	for i := range 30 {
		f.pod(t, kubetest.Pod{Namespace: "globex", Name: fmt.Sprintf("p%02d", i), GPUs: 1})
		want = append(want, fmt.Sprintf("p%02d", i))
	}
	for i := range 2 {
		for j := range 2 {
			f.pod(t, gang("globex", fmt.Sprintf("gang%d", i), 2, j, 4, nil))
			want = append(want, fmt.Sprintf("gang%d-%d", i, j))
		}
	}
	kubetest.Eventually(t, 30*time.Second, "the first controller binds some pods", func() (bool, error) {
		return first.Binds() >= 5, nil
	})
	stopFirst()
	second, _ := f.controller(t, testTenants, nil)
	second.OnBind = record
	f.waitBound(t, "globex", want...)
	time.Sleep(time.Second) // a few more cycles: nothing more to bind
	mu.Lock()
	defer mu.Unlock()
	// A bind the first controller sent as it stopped may have been made
	// with its answer lost: such a pod is bound, counted by neither.
	for _, p := range want {
		if count["globex/"+p] > 1 {
			t.Errorf("pod %s bound %d times", p, count["globex/"+p])
		}
	}
	if got := first.Binds() + second.Binds(); got > int64(len(want)) || second.Binds() == 0 {
		t.Errorf("binds = %d + %d: want the second to bind what the first left, %d in all at most", first.Binds(), second.Binds(), len(want))
	}
	// The second controller never tried to bind a pod already bound
	// (the API server would refuse it with a conflict).
	if n := second.BindConflicts(); n != 0 {
		t.Errorf("the second controller sent %d binds of pods already bound", n)
	}
	checkNoGPUTwice(t, f)
}

// checkNoGPUTwice fails when two live pods hold one GPU of a node.
func checkNoGPUTwice(t *testing.T, f *fixture) {
	t.Helper()
	pods, err := f.api.Client.CoreV1().Pods("").List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		gpus, err := parseGPUs(p.Annotations[AnnotationGPUs])
		if err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
		for _, g := range gpus {
			k := fmt.Sprintf("%s/%d", p.Spec.NodeName, g)
			if other, ok := held[k]; ok {
				t.Errorf("GPU %s held by %s and %s", k, other, p.Name)
			}
			held[k] = p.Name
		}
	}
}

// TestLeaderElection: two controllers share a Lease; only the leader
// binds, and when it stops the other takes over; no bind of either falls
// outside its own time as leader, and those times never overlap.
func TestLeaderElection(t *testing.T) {
	f := setup(t)
	for i := range 4 {
		f.nodes(t, kubetest.Node{Name: fmt.Sprintf("n%d", i), GPUs: 8, Labels: h100("c", "ethernet", "")})
	}
	type span struct{ from, to time.Time }
	var mu sync.Mutex
	leading := map[string][]span{}
	binds := map[string][]time.Time{}
	count := map[string]int{}
	start := func(id string) (*Controller, context.CancelFunc, chan struct{}) {
		c, err := New(Config{Client: f.api.Client, TenantsName: "t", Tenants: []byte(testTenants), Tick: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		c.OnBind = func(pod, node string) {
			mu.Lock()
			binds[id] = append(binds[id], time.Now())
			count[pod]++
			mu.Unlock()
		}
		lease := &Lease{Namespace: "default", Name: "allot", Identity: id,
			Duration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			OnLead: func() {
				mu.Lock()
				leading[id] = append(leading[id], span{from: time.Now()})
				mu.Unlock()
			},
			OnLose: func() {
				mu.Lock()
				if s := leading[id]; len(s) > 0 && s[len(s)-1].to.IsZero() {
					s[len(s)-1].to = time.Now()
				}
				mu.Unlock()
			}}
		ctx, cancel := context.WithCancel(f.ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.Run(ctx, lease)
		}()
		t.Cleanup(func() { cancel(); <-done })
		return c, cancel, done
	}
	a, cancelA, doneA := start("a")
	b, cancelB, doneB := start("b")
	var names []string
	for i := range 10 {
		f.pod(t, kubetest.Pod{Namespace: "globex", Name: fmt.Sprintf("w1-%d", i), GPUs: 1})
		names = append(names, fmt.Sprintf("w1-%d", i))
	}
	f.waitBound(t, "globex", names...)
	// Stop whichever leads; the other takes over for the second wave.
	leader, cancelLeader, doneLeader := a, cancelA, doneA
	if b.Binds() > 0 {
		leader, cancelLeader, doneLeader = b, cancelB, doneB
	}
	if a.Binds() > 0 && b.Binds() > 0 {
		t.Fatalf("both controllers bound in the first wave: %d and %d", a.Binds(), b.Binds())
	}
	cancelLeader()
	<-doneLeader
	before := leader.Binds()
	for i := range 10 {
		f.pod(t, kubetest.Pod{Namespace: "globex", Name: fmt.Sprintf("w2-%d", i), GPUs: 1})
		names = append(names, fmt.Sprintf("w2-%d", i))
	}
	f.waitBound(t, "globex", names...)
	if leader.Binds() != before {
		t.Errorf("the stopped leader bound %d more pods", leader.Binds()-before)
	}
	if a.Binds() == 0 || b.Binds() == 0 {
		t.Errorf("binds a=%d b=%d: want the second controller to take over", a.Binds(), b.Binds())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if count["globex/"+n] != 1 {
			t.Errorf("pod %s bound %d times", n, count["globex/"+n])
		}
	}
	for id, ts := range binds {
		for _, at := range ts {
			in := false
			for _, s := range leading[id] {
				in = in || (!at.Before(s.from) && (s.to.IsZero() || !at.After(s.to)))
			}
			if !in {
				t.Errorf("controller %s bound at %v outside its leading %v", id, at, leading[id])
			}
		}
	}
	for _, sa := range leading["a"] {
		for _, sb := range leading["b"] {
			if overlap(sa.from, sa.to, sb.from, sb.to) {
				t.Errorf("a led %v-%v and b led %v-%v at once", sa.from, sa.to, sb.from, sb.to)
			}
		}
	}
}

func overlap(af, at, bf, bt time.Time) bool {
	far := time.Now().Add(time.Hour)
	if at.IsZero() {
		at = far
	}
	if bt.IsZero() {
		bt = far
	}
	return af.Before(bt) && bf.Before(at)
}

// TestFractionsShareOneGPU: pods asking half a GPU (allot.dev/gpu-milli)
// share one GPU, leaving the node's other GPU whole for a pod that needs
// a whole one; kube-scheduler has no such request at all.
func TestFractionsShareOneGPU(t *testing.T) {
	f := setup(t)
	f.nodes(t, kubetest.Node{Name: "n0", GPUs: 2, Labels: h100("c", "ethernet", "")})
	f.controller(t, testTenants, nil)
	half := map[string]string{AnnotationGPUMilli: "500"}
	f.pod(t, kubetest.Pod{Namespace: "globex", Name: "half-0", Annotations: half})
	f.waitBound(t, "globex", "half-0")
	f.pod(t, kubetest.Pod{Namespace: "globex", Name: "half-1", Annotations: half})
	f.waitBound(t, "globex", "half-1")
	a, b := f.get(t, "globex", "half-0").Annotations[AnnotationGPUs], f.get(t, "globex", "half-1").Annotations[AnnotationGPUs]
	if a == "" || a != b {
		t.Fatalf("halves on GPUs %q and %q: want one GPU shared", a, b)
	}
	f.pod(t, kubetest.Pod{Namespace: "globex", Name: "whole", GPUs: 1})
	f.waitBound(t, "globex", "whole")
	if g := f.get(t, "globex", "whole").Annotations[AnnotationGPUs]; g == a {
		t.Fatalf("the whole-GPU pod got GPU %s, which the halves share", g)
	}
	f.pod(t, kubetest.Pod{Namespace: "globex", Name: "third", Annotations: half})
	f.waitPending(t, "globex", "third", "InsufficientCapacity")
}

// TestSchedulerPluginsPodGroup: pods labelled with the scheduler-plugins
// pod group take their gang's size from its PodGroup's spec.minMember:
// they wait until the PodGroup exists, then bind together.
func TestSchedulerPluginsPodGroup(t *testing.T) {
	f := setup(t, kubetest.WithPodGroups())
	for i := range 3 {
		f.nodes(t, kubetest.Node{Name: fmt.Sprintf("n%d", i), GPUs: 8, Labels: h100("c", "infiniband", "l")})
	}
	dyn, err := dynamic.NewForConfig(f.api.Config)
	if err != nil {
		t.Fatal(err)
	}
	f.controller(t, testTenants, func(cfg *Config) { cfg.Dynamic = dyn })
	for i := range 3 {
		p := kubetest.Pod{Namespace: "globex", Name: fmt.Sprintf("pg-%d", i), GPUs: 8}
		pod, err := f.api.AddPod(f.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		pod.Labels = map[string]string{LabelPodGroup: "pg"}
		if _, err := f.api.Client.CoreV1().Pods("globex").Update(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if c := f.waitPending(t, "globex", "pg-0", ReasonInvalidPod); !strings.Contains(c.Message, "PodGroup pg") {
		t.Errorf("without its PodGroup: %q", c.Message)
	}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "pg", "namespace": "globex"},
		"spec":     map[string]any{"minMember": int64(3)},
	}}
	if _, err := dyn.Resource(PodGroupResource).Namespace("globex").Create(f.ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := f.waitBound(t, "globex", "pg-0", "pg-1", "pg-2")
	if nodes[0] == nodes[1] || nodes[1] == nodes[2] || nodes[0] == nodes[2] {
		t.Fatalf("gang on %v", nodes)
	}
	if p := f.get(t, "globex", "pg-0"); p.Annotations[AnnotationPlacement] == "" {
		t.Errorf("a PodGroup's pods are bound as a gang: no placement on %s", p.Name)
	}
}

// TestGangBoundInPartOntoALostNode: a gang bound in part whose placement
// sends the rest to a node that is gone (the API server would accept that
// Binding) is not finished there: its bound pod is evicted instead, so
// that the gang can be placed whole again.
func TestGangBoundInPartOntoALostNode(t *testing.T) {
	f := setup(t)
	f.nodes(t, kubetest.Node{Name: "n0", GPUs: 8, Labels: h100("c", "infiniband", "l")})
	for i := range 2 {
		f.pod(t, gang("globex", "g", 2, i, 8, nil))
	}
	placement := "g-0=n0:0,1,2,3,4,5,6,7;g-1=ghost:0,1,2,3,4,5,6,7"
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "globex", Name: "g-0",
		Annotations: map[string]string{AnnotationGPUs: "0,1,2,3,4,5,6,7", AnnotationPlacement: placement}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n0"}}
	if err := f.api.Client.CoreV1().Pods("globex").Bind(f.ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, _ := f.controller(t, testTenants, nil)
	kubetest.Eventually(t, 30*time.Second, "the bound part evicted", func() (bool, error) {
		_, err := f.api.Client.CoreV1().Pods("globex").Get(f.ctx, "g-0", metav1.GetOptions{})
		return err != nil, nil
	})
	f.waitPending(t, "globex", "g-1", ReasonPodGroupIncomplete)
	if c.Binds() != 0 {
		t.Fatalf("controller bound %d pods", c.Binds())
	}
}

// TestRestartDuringPreemption: a controller that evicted a spot pod for a
// standard one stops while the spot pod takes its grace to exit; the pod
// says why it goes (allot.dev/evicted-for), and the next controller
// neither evicts a second victim for the same job nor binds the standard
// pod before the first is gone, and then binds it where the first ran.
func TestRestartDuringPreemption(t *testing.T) {
	f := setup(t)
	f.nodes(t, kubetest.Node{Name: "n0", GPUs: 8, Labels: h100("c", "ethernet", "")},
		kubetest.Node{Name: "n1", GPUs: 8, Labels: h100("c", "ethernet", "")})
	first, stopFirst := f.controller(t, testTenants, nil)
	spot := map[string]string{AnnotationClass: "spot"}
	f.pod(t, kubetest.Pod{Namespace: "spotty", Name: "s0", GPUs: 8, Grace: 60, Annotations: spot})
	f.pod(t, kubetest.Pod{Namespace: "spotty", Name: "s1", GPUs: 8, Grace: 60, Annotations: spot})
	f.waitBound(t, "spotty", "s0", "s1")
	f.kubelet.Hold("spotty/s0")
	f.kubelet.Hold("spotty/s1")
	f.pod(t, kubetest.Pod{Namespace: "globex", Name: "urgent", GPUs: 8})
	f.waitPending(t, "globex", "urgent", "AwaitingPreemption")
	stopFirst()
	if first.Deletes() != 1 {
		t.Fatalf("the first controller evicted %d pods, want 1", first.Deletes())
	}
	victim, other := "s0", "s1"
	if f.get(t, "spotty", "s1").DeletionTimestamp != nil {
		victim, other = "s1", "s0"
	}
	if got := f.get(t, "spotty", victim).Annotations[AnnotationEvictedFor]; got != "globex/urgent" {
		t.Fatalf("victim says it goes for %q", got)
	}
	second, _ := f.controller(t, testTenants, nil)
	time.Sleep(time.Second) // cycles of the second controller while the victim stops
	if second.Deletes() != 0 || f.get(t, "spotty", other).DeletionTimestamp != nil {
		t.Fatalf("the restarted controller evicted %d more pods for the same job", second.Deletes())
	}
	if p := f.get(t, "globex", "urgent"); p.Spec.NodeName != "" {
		t.Fatalf("urgent bound to %s while its victim still runs", p.Spec.NodeName)
	}
	f.kubelet.Release("spotty/" + victim)
	node := f.waitBound(t, "globex", "urgent")[0]
	if node == f.get(t, "spotty", other).Spec.NodeName {
		t.Fatalf("urgent bound onto %s, where %s still runs", node, other)
	}
	if second.Deletes() != 0 {
		t.Fatalf("the restarted controller evicted %d pods", second.Deletes())
	}
	f.kubelet.Release("spotty/" + other)
}
