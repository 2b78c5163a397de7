package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/kube/kubetest"
	"github.com/allot-dev/allot/internal/syncbuf"
)

// TestKubeJobWhy runs 'allot kube' against a real kube-apiserver and asks
// 'allot job why' about a pod past its tenant's quota.
func TestKubeJobWhy(t *testing.T) {
	api := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	kc, err := api.Kubeconfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	tenants := filepath.Join(dir, "tenants.yaml")
	if err := os.WriteFile(tenants, []byte(`
partitions: [{name: shared, tier: shared}]
tenants: [{name: acme, kind: customer, partition: shared}]
quotas: [{tenant: acme, region: eastus, series: ND, gpus: 4}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := api.AddNode(ctx, kubetest.Node{Name: "h100-0", GPUs: 8, Labels: map[string]string{
		"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "topology.kubernetes.io/region": "eastus", "allot.dev/series": "ND"}}); err != nil {
		t.Fatal(err)
	}
	if err := api.AddNamespace(ctx, "team-a", "acme"); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncbuf.Buffer
	kctx, stop := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		done <- Run(kctx, []string{"kube", "--kubeconfig", kc, "--tenants", tenants, "--data", filepath.Join(dir, "data"),
			"--listen", "127.0.0.1:0", "--tick", "200ms"}, &out, &errOut)
	}()
	defer func() {
		stop()
		if rc := <-done; rc != 0 {
			t.Errorf("allot kube exited %d: %s", rc, errOut.String())
		}
	}()
	var url string
	kubetest.Eventually(t, 30*time.Second, "allot kube listening", func() (bool, error) {
		m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil, nil
	})
	if _, err := api.AddPod(ctx, kubetest.Pod{Namespace: "team-a", Name: "train-0", GPUs: 8}); err != nil {
		t.Fatal(err)
	}
	token, err := os.ReadFile(filepath.Join(dir, "data", "kube-token"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ALLOT_TOKEN", strings.TrimSpace(string(token)))
	var why string
	kubetest.Eventually(t, 30*time.Second, "job why tells QuotaExceeded", func() (bool, error) {
		var o, e syncbuf.Buffer
		Run(ctx, []string{"job", "why", "team-a/train-0", "--server", url}, &o, &e)
		why = o.String() + e.String()
		return strings.Contains(why, "QuotaExceeded"), nil
	})
	t.Logf("allot job why team-a/train-0:\n%s", why)
	for _, want := range []string{"team-a/train-0", "Queued", "acme", "eastus"} {
		if !strings.Contains(why, want) {
			t.Errorf("job why printed %q: want %q in it", why, want)
		}
	}
	// A token that is not the controller's is refused.
	t.Setenv("ALLOT_TOKEN", "wrong")
	var o, e syncbuf.Buffer
	if rc := Run(ctx, []string{"job", "why", "team-a/train-0", "--server", url}, &o, &e); rc == 0 || !strings.Contains(e.String(), "Unauthorized") {
		t.Errorf("job why with a wrong token: exit %d, %q", rc, e.String())
	}
}
