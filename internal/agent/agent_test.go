package agent

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/api"
	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/server/servertest"
)

// lab is a server in agent mode on the three-node test fleet, served over
// loopback, and a client with its admin token.
type lab struct {
	srv   *server.Server
	cl    *client.Client
	admin string
	url   string
	dir   string // the server's data directory (its admin token's file)
}

func newLab(t *testing.T) *lab {
	t.Helper()
	return newLabTimeout(t, time.Second)
}

// newLabTimeout is newLab with the server's node timeout nodeTimeout.
func newLabTimeout(t *testing.T, nodeTimeout time.Duration) *lab {
	t.Helper()
	return newLabWith(t, func(c *server.Config) { c.Nodes = server.Agents{Timeout: nodeTimeout} })
}

// newLabWith is newLab with configure's changes to the server's config.
func newLabWith(t *testing.T, configure func(*server.Config)) *lab {
	t.Helper()
	fleet, ten := servertest.Lab(t)
	dir := t.TempDir()
	st := servertest.Store(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := server.Config{Store: st, Fleet: fleet, Tenancy: ten, Tick: 100 * time.Millisecond, RetryBackoff: 100 * time.Millisecond,
		Nodes: server.Agents{Timeout: time.Second}}
	configure(&cfg)
	srv, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := srv.EnsureAdminToken(ctx, filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api.New(api.Config{Server: srv, Rate: -1}))
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); hs.Close(); <-done })
	cl, err := client.New(hs.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	return &lab{srv: srv, cl: cl, admin: tok, url: hs.URL, dir: dir}
}

// workDir is a work directory jobs under dynamic uids can enter: unlike
// t.TempDir's, its parents are not 0700.
func workDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "allot-agent-work-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// config is an agent's configuration for node in fresh directories.
func (l *lab) config(t *testing.T, node string) Config {
	t.Helper()
	v, err := gpu.ParseVirtual("virtual:8xH100-80GB", node)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Client: l.cl, Node: node, GPUs: v, Data: t.TempDir(), Work: workDir(t), Heartbeat: 200 * time.Millisecond,
		Wait: 2 * time.Second, ShipEvery: 100 * time.Millisecond}
}

func (l *lab) runAgent(t *testing.T, ctx context.Context, node string) Config {
	t.Helper()
	cfg := l.config(t, node)
	runAgent(t, ctx, cfg)
	return cfg
}

// runAgent runs an agent on cfg until ctx ends or the test does, and has
// the test's cleanup wait for it to stop before its directories go: an
// agent still recording a job's end in its state directory made
// TempDir's removal fail ("directory not empty").
func runAgent(t *testing.T, ctx context.Context, cfg Config) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = Run(ctx, cfg); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (l *lab) submit(t *testing.T, doc string) string {
	t.Helper()
	j, err := l.cl.Submit(context.Background(), []byte(doc), "application/yaml")
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// logHas fails t unless the log of job id's first attempt holds want.
func (l *lab) logHas(t *testing.T, id, want string) {
	t.Helper()
	var log bytes.Buffer
	if err := l.cl.Logs(context.Background(), id, 1, false, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), want) {
		t.Errorf("log %q lacks %q", log.String(), want)
	}
}

func (l *lab) waitState(t *testing.T, id, state string) client.Job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j, err := l.cl.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s (%s: %s), want %s", id, j.State, j.Reason, j.Detail, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAgentRunsJob(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.runAgent(t, ctx, "h100-01")
	id := l.submit(t, `name: hello
tenant: team
command: ["sh", "-c", 'echo "cvd=$CUDA_VISIBLE_DEVICES job=$ALLOT_JOB_ID"; echo ckpt-1 > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; sleep 0.3']
resources: {gpus_per_instance: 2}
`)
	j := l.waitState(t, id, "Succeeded")
	if want := filepath.Join(cfg.Work, "jobs", jobDirName(id), "checkpoints", "ckpt-1"); j.CheckpointPath != want {
		t.Errorf("checkpoint %q, want %s (from the CHECKPOINT marker, relative to the checkpoint directory)", j.CheckpointPath, want)
	}
	l.logHas(t, id, "cvd=GPU-virtual-h100-01-0,GPU-virtual-h100-01-1 job="+id)
	if _, err := os.Stat(filepath.Join(cfg.Data, "logs", id, "attempt-1.log")); err != nil {
		t.Errorf("no local log file: %v", err)
	}
}

// The operator's JobEnv reaches every job under the job's own env, and
// allot's variables win over both.
func TestAgentJobEnv(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	cfg.JobEnv = map[string]string{"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64", "MODE": "host", "ALLOT_ATTEMPT": "9"}
	runAgent(t, ctx, cfg)
	id := l.submit(t, `name: env
tenant: team
command: ["sh", "-c", 'echo "lib=$LD_LIBRARY_PATH mode=$MODE attempt=$ALLOT_ATTEMPT"']
env: {MODE: job}
resources: {gpus_per_instance: 1}
`)
	l.waitState(t, id, "Succeeded")
	l.logHas(t, id, "lib=/usr/local/nvidia/lib64 mode=job attempt=1")
	if cfg.JobEnv["MODE"] != "host" {
		t.Error("the job's env was written into the agent's JobEnv")
	}
}

// A fraction of a GPU learns its share of the GPU's memory, as discovery
// found it (80 GB virtual H100s: a quarter is 20,480 MiB).
func TestAgentFractionMemory(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.runAgent(t, ctx, "h100-01")
	id := l.submit(t, `name: quarter
tenant: team
command: ["sh", "-c", 'echo "milli=$ALLOT_GPU_MILLI mib=$ALLOT_GPU_MEMORY_MIB mps=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"']
resources: {gpu_milli: 250}
`)
	l.waitState(t, id, "Succeeded")
	l.logHas(t, id, "milli=250 mib=20480 mps=0=20480M")
}

func TestAgentRegistrationRefused(t *testing.T) {
	l := newLab(t)
	v, _ := gpu.ParseVirtual("virtual:4xA100-80GB", "h100-02")
	err := Run(context.Background(), Config{Client: l.cl, Node: "h100-02", GPUs: v, Data: t.TempDir(), Work: workDir(t)})
	if err == nil || !strings.Contains(err.Error(), "gpus") {
		t.Fatalf("registering 4 A100s as an 8xH100 node: %v, want a refusal naming gpus", err)
	}
}

func TestNodeTokenActsForItsNodeOnly(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	tok, err := l.cl.CreateNodeToken(ctx, "h100-01")
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := client.New(l.cl.Server(), tok.Token)
	if err := cl.Register(ctx, "h100-01", []client.GPU{}, ""); err == nil || !strings.Contains(err.Error(), "gpus") {
		t.Fatalf("register with no GPUs: %v, want a refusal naming gpus", err)
	}
	var ae *client.APIError
	if err := cl.Heartbeat(ctx, "h100-02", nil); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("heartbeat for another node: %v, want 403", err)
	}
	if _, err := cl.ListJobs(ctx, client.JobFilter{Tenant: "team"}); err == nil {
		t.Fatal("a node token listed a tenant's jobs")
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := l.config(t, "h100-01")
	cfg.Client = cl
	go func() { _ = Run(runCtx, cfg) }()
	id := l.submit(t, `name: tok
tenant: team
command: ["sh", "-c", "echo c > $ALLOT_CHECKPOINT_DIR/CHECKPOINT; echo ran"]
resources: {gpus_per_instance: 1}
`)
	if j, want := l.waitState(t, id, "Succeeded"), filepath.Join(cfg.Work, "jobs", jobDirName(id), "checkpoints", "c"); j.CheckpointPath != want {
		t.Errorf("checkpoint %q reported with a node token, want %s", j.CheckpointPath, want)
	}
}

// A heartbeat gives up well before the node timeout, so that an agent
// given several servers reaches another in time.
func TestHeartbeatTimeout(t *testing.T) {
	for _, tc := range []struct {
		beat, node, want time.Duration
	}{
		{DefaultHeartbeat, 30 * time.Second, 10 * time.Second},
		{300 * time.Millisecond, 15 * time.Second, time.Second},
		{300 * time.Millisecond, 2 * time.Second, 666666666 * time.Nanosecond},
		{5 * time.Second, 0, 10 * time.Second},
	} {
		a := &Agent{cfg: Config{Heartbeat: tc.beat, NodeTimeout: tc.node}}
		if got := a.heartbeatTimeout(); got != tc.want {
			t.Errorf("heartbeat %v, node timeout %v: %v, want %v", tc.beat, tc.node, got, tc.want)
		}
	}
}
