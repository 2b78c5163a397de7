package agent

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An agent that exits stops its instances within StopTimeout, whatever
// grace they asked for: a job that ignores SIGTERM and asks for 4 minutes is
// killed, with its children, and Run returns.
func TestShutdownBoundsGrace(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	cfg.StopTimeout = 300 * time.Millisecond
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg) }()
	id := l.submit(t, `name: stubborn
tenant: team
command: ["sh", "-c", 'trap "" TERM; sleep 600 & echo "pids $$ $!"; wait']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 4m}
`)
	l.waitState(t, id, "Running")
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) == 0 {
		var log strings.Builder
		_ = l.cl.Logs(ctx, id, 1, false, &log)
		if _, line, ok := strings.Cut(log.String(), "pids "); ok {
			for _, f := range strings.Fields(line) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
		} else if time.Now().After(deadline) {
			t.Fatal("the job never wrote its PIDs")
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer func() { // whatever happened, none of the job's processes outlives the test
		for _, pid := range pids {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(b), "600") {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
	start := time.Now()
	cancel()
	select {
	case <-ran:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15s of its end")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run returned %v after its end, want about the stop timeout (300ms)", took)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			t.Errorf("process %d of the job outlived the agent", pid)
		}
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}
