package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/agent/shim"
)

// run is one run of an agent: its end and the error Run returned.
type run struct {
	cancel context.CancelFunc
	done   chan error
}

// start runs an agent on cfg until stop.
func start(cfg Config) *run {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- Run(ctx, cfg) }()
	return r
}

// stop ends the run and waits for Run to return.
func (r *run) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of its end")
	}
}

// logged is an agent's configuration for node that logs into buf.
func (l *lab) logged(t *testing.T, node string, buf *syncBuffer) Config {
	t.Helper()
	cfg := l.config(t, node)
	cfg.Logger = slog.New(slog.NewTextHandler(buf, nil))
	return cfg
}

// serverLog is what the server has of attempt n's log of job id.
func (l *lab) serverLog(t *testing.T, id string, n int) string {
	t.Helper()
	var b strings.Builder
	if err := l.cl.Logs(context.Background(), id, n, false, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pidOf waits for a line "pid N" in attempt 1's log of job id and returns N.
func (l *lab) pidOf(t *testing.T, id string) int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^pid (\d+)$`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := re.FindStringSubmatch(l.serverLog(t, id, 1)); m != nil {
			pid, _ := strconv.Atoi(m[1])
			t.Cleanup(func() {
				if alive(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never wrote its pid", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leftRunning runs an agent on cfg (OnExitLeave) until the job doc runs and
// has written its pid, and then, once meanwhile has returned (nil: at
// once), ends it: a job a previous run of the agent left. It returns the
// job's ID and pid.
func (l *lab) leftRunning(t *testing.T, cfg Config, doc string, meanwhile func(id string)) (string, int) {
	t.Helper()
	first := start(cfg)
	id := l.submit(t, doc)
	t.Cleanup(func() { _, _ = l.cl.Cancel(context.Background(), id) })
	l.waitState(t, id, "Running")
	pid := l.pidOf(t, id)
	if meanwhile != nil {
		meanwhile(id)
	}
	first.stop(t)
	return id, pid
}

// waitFor polls ok for up to within.
func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never %s within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An agent that exits with OnExitLeave leaves its job running; the next
// run with the same Data adopts it: no NodeLost, no kill, the log goes on
// with every line once and in order, those written while no agent ran
// included, and the job's exit code is reported, whether the job ends
// after the adoption or while no agent runs. With cgroups and with
// process groups alike.
func TestAgentRestartAdoptsJob(t *testing.T) {
	for _, tc := range []struct {
		name, cgroups string
		lines         int
		endsAway      bool
	}{
		{"Cgroup", "", 30, false},
		{"ProcessGroup", "none", 30, false},
		{"EndsWhileAway", "", 12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server's node timeout is longer than the agent is away.
			l := newLabTimeout(t, 5*time.Second)
			var logs syncBuffer
			cfg := l.logged(t, "h100-01", &logs)
			cfg.OnExit, cfg.Cgroups = OnExitLeave, tc.cgroups
			id, pid := l.leftRunning(t, cfg, fmt.Sprintf(`name: adopted
tenant: team
command: ["sh", "-c", 'echo "pid $$"; i=0; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done; exit 3']
resources: {gpus_per_instance: 2}
`, tc.lines), nil)
			if !alive(pid) {
				t.Fatalf("the job (pid %d) did not outlive its agent", pid)
			}
			if !strings.Contains(logs.String(), "leaving instance running") {
				t.Errorf("the agent did not say it left the job running:\n%s", logs.String())
			}
			if tc.endsAway {
				waitFor(t, "the job ended while no agent ran", 10*time.Second, func() bool { return !alive(pid) })
			} else {
				time.Sleep(500 * time.Millisecond) // lines written while no agent runs
			}
			second := start(cfg)
			defer second.stop(t)
			if !tc.endsAway {
				waitFor(t, "adopted", 5*time.Second, func() bool { return strings.Contains(logs.String(), "adopted an instance") })
				if !alive(pid) {
					t.Fatalf("the job (pid %d) died as the agent adopted it", pid)
				}
			}
			j := l.waitState(t, id, "Failed")
			if len(j.AttemptHistory) != 1 || j.AttemptHistory[0].ExitCode != 3 || j.AttemptHistory[0].Reason != "Failed" {
				t.Fatalf("attempts %+v, want one that exited with code 3", j.AttemptHistory)
			}
			var got []string
			for _, line := range strings.Split(l.serverLog(t, id, 1), "\n") {
				if strings.HasPrefix(line, "line ") {
					got = append(got, strings.TrimPrefix(line, "line "))
				}
			}
			var want []string
			for i := range tc.lines {
				want = append(want, strconv.Itoa(i))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("the log's lines are %v, want %v once each, in order", got, want)
			}
			if strings.Contains(logs.String(), "fencing") || strings.Contains(logs.String(), "lost") {
				t.Errorf("the agent fenced or lost the job:\n%s", logs.String())
			}
		})
	}
}

// sleeper60 is a job that says its pid and sleeps a minute.
const sleeper60 = `name: sleeper
tenant: team
command: ["sh", "-c", 'echo "pid $$"; exec sleep 60']
resources: {gpus_per_instance: 8}
checkpoint: {grace: 1s}
`

// A stop order's deadline outlives the agent that gave it: a job that
// ignores SIGTERM, canceled with its grace of 2 s, is killed at the end of
// it although its agent exited and another adopted it meanwhile, and the
// adopted instance counts as stopping.
func TestAgentRestartKeepsStopDeadline(t *testing.T) {
	l := newLabTimeout(t, 5*time.Second)
	var logs syncBuffer
	cfg := l.logged(t, "h100-01", &logs)
	cfg.OnExit = OnExitLeave
	var ordered time.Time
	id, pid := l.leftRunning(t, cfg, `name: stubborn
tenant: team
command: ["sh", "-c", 'trap "echo ignored TERM" TERM; echo "pid $$"; while :; do sleep 0.05; done']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 2s}
`, func(id string) {
		if _, err := l.cl.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the stop order given", 5*time.Second, func() bool { return strings.Contains(logs.String(), "stopping instance") })
		ordered = time.Now()
	})
	second := start(cfg)
	defer second.stop(t)
	waitFor(t, "adopted", 5*time.Second, func() bool { return strings.Contains(logs.String(), "stopping=true") })
	waitFor(t, "the job killed", 10*time.Second, func() bool { return !alive(pid) })
	if took := time.Since(ordered); took > 4*time.Second {
		t.Errorf("the job was killed %s after its 2 s grace began, want about 2 s", took.Round(time.Millisecond))
	}
	if !strings.Contains(l.serverLog(t, id, 1), "ignored TERM") {
		t.Error("the job never got SIGTERM")
	}
}

// A job whose agent does not come back is stopped by its shim once the
// agent's lease is older than the node timeout (SIGTERM, then its grace),
// as the server then requeues it; the agent's next run reports nothing of
// it and removes its files.
func TestShimFencesJobOfGoneAgent(t *testing.T) {
	l := newLab(t)
	cfg := l.config(t, "h100-01")
	cfg.OnExit, cfg.NodeTimeout = OnExitLeave, time.Second
	id, pid := l.leftRunning(t, cfg, `name: orphan
tenant: team
command: ["sh", "-c", 'trap "echo got TERM; exit 0" TERM; echo "pid $$"; while :; do sleep 0.05; done']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 5s}
`, nil)
	left := time.Now()
	if !alive(pid) {
		t.Fatal("the job died with its agent")
	}
	waitFor(t, "the job stopped by its shim", 10*time.Second, func() bool { return !alive(pid) })
	if took := time.Since(left); took < 700*time.Millisecond {
		t.Errorf("the job stopped %s after its agent left, before the 1 s node timeout", took)
	}
	name := filepath.Join(cfg.Data, "state", id+".1.0")
	// The shim writes how the job ended just after the job is gone.
	waitFor(t, "the shim's exit record", 5*time.Second, func() bool {
		_, err := shim.ReadExit(name + ".exit.json")
		return err == nil
	})
	if e, err := shim.ReadExit(name + ".exit.json"); err != nil || !e.Fenced || e.Outcome != launch.Stopped || e.Killed {
		t.Errorf("exit %+v (%v), want fenced and stopped by SIGTERM", e, err)
	}
	second := start(cfg)
	defer second.stop(t)
	waitFor(t, "its files removed", 10*time.Second, func() bool {
		left, _ := filepath.Glob(name + ".*")
		return len(left) == 0
	})
}

// An instance a previous run left that the server requeued meanwhile (the
// agent stayed away past the node timeout) is fenced: killed, its files
// removed, nothing reported.
func TestAgentRestartFencesRequeued(t *testing.T) {
	l := newLab(t)
	var logs syncBuffer
	cfg := l.logged(t, "h100-01", &logs)
	cfg.OnExit = OnExitLeave // and no node timeout: the shim never fences the job itself
	id, pid := l.leftRunning(t, cfg, sleeper60, nil)
	waitFor(t, "requeued by the server", 15*time.Second, func() bool {
		j, err := l.cl.GetJob(context.Background(), id)
		return err == nil && len(j.AttemptHistory) > 0 && j.AttemptHistory[0].Reason == "NodeLost"
	})
	if !alive(pid) {
		t.Fatal("the job died without an agent: the test shows nothing")
	}
	second := start(cfg)
	defer second.stop(t)
	waitFor(t, "the job killed", 10*time.Second, func() bool { return !alive(pid) })
	if !strings.Contains(logs.String(), "fencing an instance a previous run left") {
		t.Errorf("the agent did not say it fenced the job:\n%s", logs.String())
	}
	waitFor(t, "its record removed", 10*time.Second, func() bool {
		left, _ := filepath.Glob(filepath.Join(cfg.Data, "state", id+".1.0.*"))
		return len(left) == 0
	})
}

// An instance the server says runs here of which nothing does (its shim
// and job died with the host) is reported lost: the server requeues it
// without counting a retry.
func TestAgentRestartReportsLostAttempt(t *testing.T) {
	l := newLabTimeout(t, 5*time.Second)
	cfg := l.config(t, "h100-01")
	cfg.OnExit = OnExitLeave
	id, pid := l.leftRunning(t, cfg, sleeper60, nil)
	// The host crashes: the shim and the job die, and the shim writes
	// nothing.
	var r record
	b, err := os.ReadFile(filepath.Join(cfg.Data, "state", id+".1.0.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil || r.Shim <= 0 {
		t.Fatalf("record %+v: %v", r, err)
	}
	_ = syscall.Kill(r.Shim, syscall.SIGKILL)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	waitFor(t, "the shim and the job dead", 5*time.Second, func() bool { return !alive(r.Shim) && !alive(pid) })
	second := start(cfg)
	defer second.stop(t)
	waitFor(t, "attempt 1 lost", 15*time.Second, func() bool {
		j, err := l.cl.GetJob(context.Background(), id)
		return err == nil && len(j.AttemptHistory) > 0 && j.AttemptHistory[0].Reason == "NodeLost"
	})
}

// An agent that stops its jobs as it exits (OnExitStop) delivers every
// report of their ends before Run returns: the checkpoint a job saves on
// SIGTERM, its last log lines, and its exit, reported Stopped so that the
// job comes back from that checkpoint without a retry or a lost attempt
// counted. So
// does one that supervises its jobs in its own process (InProcess), where
// a job's parent is the agent's process, not a shim.
func TestShutdownReportsCheckpointSavedOnStop(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		t.Run(map[bool]string{false: "Shim", true: "InProcess"}[inProcess], func(t *testing.T) {
			l := newLab(t)
			cfg := l.config(t, "h100-01")
			cfg.StopTimeout, cfg.InProcess = 10*time.Second, inProcess
			r := start(cfg)
			id := l.submit(t, `name: saver
tenant: team
command: ["sh", "-c", 'trap "echo saved > \"\$ALLOT_CHECKPOINT_DIR/final\"; echo final > \"\$ALLOT_CHECKPOINT_DIR/CHECKPOINT\"; sleep 0.3; echo saved on TERM; exit 0" TERM; echo "parent $PPID"; echo "pid $$"; while :; do sleep 0.1; done']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 10s}
`)
			l.waitState(t, id, "Running")
			l.pidOf(t, id)
			if parent := strings.Contains(l.serverLog(t, id, 1), fmt.Sprintf("parent %d\n", os.Getpid())); parent != inProcess {
				t.Errorf("the job's parent is the agent's process: %v, want %v", parent, inProcess)
			}
			r.stop(t)
			j, err := l.cl.GetJob(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(cfg.Work, "jobs", jobDirName(id), "checkpoints", "final"); j.CheckpointPath != want {
				t.Errorf("checkpoint %q when Run returned, want %s (saved on SIGTERM)", j.CheckpointPath, want)
			}
			if log := l.serverLog(t, id, 1); !strings.Contains(log, "saved on TERM") {
				t.Errorf("the log's last line had not reached the server when Run returned:\n%s", log)
			}
			// Requeued with no back-off, the job may be placed again at once.
			if len(j.AttemptHistory) == 0 || j.AttemptHistory[0].Reason != "Requeued" || (j.State != "Queued" && j.State != "Preparing") {
				t.Errorf("job %s, attempts %+v: want attempt 1 requeued and the job queued (or placed again)", j.State, j.AttemptHistory)
			}
		})
	}
}
