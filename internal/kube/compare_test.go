package kube

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/allot-dev/allot/internal/kube/kubetest"
	"github.com/allot-dev/allot/internal/syncbuf"
)

var (
	compare      = flag.Bool("kube-compare", false, "run TestCompareKubeScheduler: kube-scheduler and allot bind the same pods on one API server (minutes)")
	compareNodes = flag.Int("kube-compare-nodes", 1000, "fake 8-GPU nodes of the comparison")
	comparePods  = flag.Int("kube-compare-pods", 5000, "one-GPU pods each scheduler binds in the comparison")
	compareQPS   = flag.Int("kube-compare-qps", 200, "requests per second each scheduler may send the API server (burst twice that)")
)

// TestCompareKubeScheduler measures pods bound per second on one real
// kube-apiserver with -kube-compare-nodes fake 8-GPU nodes: first
// kube-scheduler (the binary scripts/kube-assets.sh builds) binds
// -kube-compare-pods pending one-GPU pods, then, once they are deleted,
// allot's controller binds as many of its own. Each is started once every
// pod of its round exists, and timed from its start to the last bind the
// watch sees. Both talk to the API server at -kube-compare-qps requests
// per second (200, burst 400, by default; allot kube's default, where
// kube-scheduler's own is 50). BENCHMARKS.md has the figures and the
// command:
//
//	KUBEBUILDER_ASSETS=$(scripts/kube-assets.sh) go test -run TestCompareKubeScheduler \
//	    -kube-compare -timeout 30m -v ./internal/kube/
func TestCompareKubeScheduler(t *testing.T) {
	if !*compare {
		t.Skip("a measurement of minutes: run with -kube-compare (BENCHMARKS.md)")
	}
	api := kubetest.Start(t)
	ks := filepath.Join(kubetest.Assets(), "kube-scheduler")
	if _, err := os.Stat(ks); err != nil {
		t.Fatalf("kube-scheduler is not built beside kube-apiserver: run scripts/kube-assets.sh: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	nodeWork := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range nodeWork {
				err := api.AddNode(ctx, kubetest.Node{Name: fmt.Sprintf("gpu-%04d", i), GPUs: 8, Labels: map[string]string{
					LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", LabelRegion: "eastus", LabelZone: fmt.Sprintf("eastus-%d", i%3+1)}})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range *compareNodes {
		nodeWork <- i
	}
	close(nodeWork)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("%d nodes created in %v", *compareNodes, time.Since(start).Round(time.Millisecond))

	// One watch counts the binds of both rounds.
	var bound [2]atomic.Int64
	factory := informers.NewSharedInformerFactory(api.Client, 0)
	inf := factory.Core().V1().Pods().Informer()
	count := func(old, cur any) {
		p, ok := cur.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		if o, ok := old.(*corev1.Pod); ok && o.Spec.NodeName != "" {
			return
		}
		switch p.Namespace {
		case "ks":
			bound[0].Add(1)
		case "allot":
			bound[1].Add(1)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) { count(nil, o) }, UpdateFunc: count}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	dir := t.TempDir()
	kc, err := api.Kubeconfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.AddNamespace(ctx, "ks", "globex"); err != nil {
		t.Fatal(err)
	}
	if err := api.AddNamespace(ctx, "allot", "globex"); err != nil {
		t.Fatal(err)
	}
	makePods := func(ns, scheduler string) {
		t.Helper()
		work := make(chan int)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					if _, err := api.AddPod(ctx, kubetest.Pod{Namespace: ns, Name: fmt.Sprintf("p-%05d", i), GPUs: 1, SchedulerName: scheduler}); err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			}()
		}
		for i := range *comparePods {
			work <- i
		}
		close(work)
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	wait := func(i int) time.Duration {
		t.Helper()
		began := time.Now()
		kubetest.Eventually(t, max(2*time.Minute, time.Duration(*comparePods)*100*time.Millisecond), fmt.Sprintf("all %d pods bound", *comparePods), func() (bool, error) {
			n := bound[i].Load()
			return n >= int64(*comparePods), fmt.Errorf("%d bound", n)
		})
		return time.Since(began)
	}
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.TrimSpace(string(b))
	}

	// Round 1: kube-scheduler.
	makePods("ks", "default-scheduler")
	cfg := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q, qps: %d, burst: %d}
leaderElection: {leaderElect: false}
`, kc, *compareQPS, 2**compareQPS)), 0o600); err != nil {
		t.Fatal(err)
	}
	kctx, stopKS := context.WithCancel(ctx)
	cmd := exec.CommandContext(kctx, ks, "--config", cfg, "--secure-port", "0", "-v", "1")
	var logs syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-scheduler's log:\n%s", logs.String())
		}
	})
	t.Logf("load before kube-scheduler: %s", load())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ksTime := wait(0)
	t.Logf("kube-scheduler (v%s): %d pods bound in %v: %.0f pods/s (load %s)", strings.TrimPrefix(kubetest.Version, "v"),
		*comparePods, ksTime.Round(time.Millisecond), float64(*comparePods)/ksTime.Seconds(), load())
	stopKS()
	_ = cmd.Wait()
	zero := int64(0)
	if err := api.Client.CoreV1().Pods("ks").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 5*time.Minute, "kube-scheduler's pods gone", func() (bool, error) {
		l, err := api.Client.CoreV1().Pods("ks").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0, err
	})

	// Round 2: allot.
	makePods("allot", SchedulerName)
	tenants := []byte("partitions: [{name: shared, tier: shared}]\ntenants: [{name: globex, kind: customer, partition: shared}]\n")
	rc := rest.CopyConfig(api.Config)
	rc.QPS, rc.Burst = float32(*compareQPS), 2**compareQPS
	cl, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Client: cl, TenantsName: "tenants.yaml", Tenants: tenants})
	if err != nil {
		t.Fatal(err)
	}
	actx, stopAllot := context.WithCancel(ctx)
	defer stopAllot()
	t.Logf("load before allot: %s", load())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(actx, nil)
	}()
	allotTime := wait(1)
	t.Logf("allot: %d pods bound in %v: %.0f pods/s in %d cycles (load %s)", *comparePods, allotTime.Round(time.Millisecond),
		float64(*comparePods)/allotTime.Seconds(), c.Cycles(), load())
	stopAllot()
	<-done
	if c.BindConflicts() != 0 {
		t.Errorf("allot sent %d binds of pods already bound", c.BindConflicts())
	}
}
