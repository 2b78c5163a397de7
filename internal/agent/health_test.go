package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/gpu"
)

// runHealthCheck: exit 0 is healthy; a failure says its exit status and
// the start of its output on one line; a check past its timeout fails, its
// children killed with it; the node's name is in ALLOT_NODE.
func TestRunHealthCheck(t *testing.T) {
	ctx := context.Background()
	if ok, detail := runHealthCheck(ctx, `test "$ALLOT_NODE" = n1`, "n1", 5*time.Second); !ok || detail != "" {
		t.Errorf("a passing check: %v %q", ok, detail)
	}
	ok, detail := runHealthCheck(ctx, `echo "GPU 3: XID 79"; echo fell off the bus >&2; exit 3`, "n1", 5*time.Second)
	if ok || !strings.HasPrefix(detail, "exit status 3: GPU 3: XID 79") || !strings.Contains(detail, "fell off the bus") {
		t.Errorf("a failing check: %v %q", ok, detail)
	}
	marker := filepath.Join(t.TempDir(), "late")
	start := time.Now()
	ok, detail = runHealthCheck(ctx, `echo waiting; (sleep 2; touch `+marker+`) & sleep 30`, "n1", 200*time.Millisecond)
	if ok || !strings.HasPrefix(detail, "no answer within 200ms") || time.Since(start) > 5*time.Second {
		t.Errorf("a hanging check: %v %q after %s", ok, detail, time.Since(start))
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child of the timed-out check lived on")
	}
	long := strings.Repeat("x", 3*maxHealthOutput)
	if _, detail := runHealthCheck(ctx, "echo "+long+"; exit 1", "n1", 5*time.Second); len(detail) > maxHealthOutput+len("exit status 1: ") {
		t.Errorf("kept %d bytes of output, want at most %d", len(detail), maxHealthOutput)
	}
}

// An agent with a health check drains its node when the check fails and
// resumes it when it passes again; a drain of the administrator's stays.
func TestHealthCheckDrainsAndResumes(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	flag := filepath.Join(t.TempDir(), "broken")
	cfg := l.config(t, "h100-01")
	cfg.HealthCheck = `if [ -e ` + flag + ` ]; then echo "GPU 0: uncorrectable ECC"; exit 1; fi`
	cfg.HealthCheckEvery = 100 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	t.Cleanup(func() { cancel(); <-done })

	drain := func() (by, reason string) {
		ns, err := l.cl.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			if n.Name == "h100-01" && n.Drain != nil {
				return n.Drain.By, n.Drain.Reason
			}
		}
		return "", ""
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(end) {
				t.Fatalf("waited 10s for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond) // several passing checks
	if by, _ := drain(); by != "" {
		t.Fatalf("drained by %s while the check passes", by)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the failing check to drain the node", func() bool { by, _ := drain(); return by == "health-check" })
	if _, reason := drain(); reason != "health check failed: exit status 1: GPU 0: uncorrectable ECC" {
		t.Errorf("reason %q", reason)
	}
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	waitFor("the passing check to resume the node", func() bool { by, _ := drain(); return by == "" })

	if _, err := l.cl.DrainNode(ctx, "h100-01", "BIOS update"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if by, reason := drain(); by != "admin" || reason != "BIOS update" {
		t.Errorf("the administrator's drain became %s %q", by, reason)
	}
}

// fakeHealth is a gpu.Health whose problems a test sets.
type fakeHealth struct {
	mu       sync.Mutex
	problems []string
	err      error
	watched  chan []gpu.Device
}

func (f *fakeHealth) Watch(ctx context.Context, devs []gpu.Device) error {
	f.watched <- devs
	<-ctx.Done()
	return nil
}

func (f *fakeHealth) Problems(devs []gpu.Device) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.problems, f.err
}

func (f *fakeHealth) set(problems []string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems, f.err = problems, err
}

// An agent with GPU health (and no health-check command) drains its node
// while its GPUs have problems, naming them, and resumes it when they are
// gone; health it cannot read drains nothing.
func TestGPUHealthDrainsAndResumes(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	health := &fakeHealth{watched: make(chan []gpu.Device, 1)}
	cfg := l.config(t, "h100-01")
	cfg.GPUHealth = health
	cfg.HealthCheckEvery = 100 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case devs := <-health.watched:
		if len(devs) != 8 || devs[0].UUID != "GPU-virtual-h100-01-0" {
			t.Fatalf("watched %+v, want the node's 8 GPUs", devs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("GPU health not watched")
	}
	reason := func() string {
		ns, err := l.cl.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			if n.Name == "h100-01" && n.Drain != nil {
				return n.Drain.By + ": " + n.Drain.Reason
			}
		}
		return ""
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(end) {
				t.Fatalf("waited 10s for %s (drain %q)", what, reason())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	health.set(nil, errors.New("nvml init: ERROR_UNKNOWN"))
	time.Sleep(500 * time.Millisecond)
	if r := reason(); r != "" {
		t.Fatalf("drained (%s) while GPU health cannot be read", r)
	}
	health.set([]string{"GPU 3 (GPU-virtual-h100-01-3): XID 79 at 2026-12-04T17:00:00Z"}, nil)
	want := "health-check: health check failed: GPU 3 (GPU-virtual-h100-01-3): XID 79 at 2026-12-04T17:00:00Z"
	waitFor("GPU problems to drain the node", func() bool { return reason() == want })
	health.set(nil, nil)
	waitFor("the node to be resumed", func() bool { return reason() == "" })
}
