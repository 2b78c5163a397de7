package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The agent tests run their own server (--agents external, a 2 s node
// timeout) on the three-node fleet of testdata/agent-fleet.yaml, and one
// 'allot agent --gpus virtual:8xH100-80GB' process per node. The cases run
// one after the other on that fleet, each leaving it empty.

// agentLab is the server and agents of the agent tests.
type agentLab struct {
	url, admin, team string
	dir              string
	work             string // the agents' --work, which jobs under other uids can enter
	ckpt             string // the agents' shared --checkpoint-root
	log              *syncBuffer
	tokens           map[string]string // node -> its node token

	mu     sync.Mutex // guards agents
	agents map[string]*exec.Cmd
}

var labNodes = []string{"h100-01", "h100-02", "h100-03"}

func startLab(t *testing.T, extra ...string) *agentLab {
	t.Helper()
	needServer(t)
	if !strings.Contains(serverHelp, "--agents") {
		t.Skip("allot server has no --agents flag")
	}
	dir := t.TempDir()
	lab := &agentLab{dir: dir, work: workDir(t), ckpt: workDir(t), log: &syncBuffer{}, agents: map[string]*exec.Cmd{}}
	args := append([]string{"server",
		"--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "internal/e2e/testdata/agent-fleet.yaml"),
		"--tenants", filepath.Join(root, "internal/e2e/testdata/agent-tenants.yaml"),
		"--agents", "external", "--node-timeout", "2s", "--tick", "500ms", "--rate-limit", "0", "--retry-backoff", "1s"}, extra...)
	url, admin, stop, err := startServerArgs(filepath.Join(dir, "data"), lab.log, args...)
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, lab.log.String())
	}
	lab.url, lab.admin = url, admin
	t.Cleanup(func() {
		lab.mu.Lock()
		stopAgents(slices.Collect(maps.Values(lab.agents)), 5*time.Second)
		lab.mu.Unlock()
		stop()
		if t.Failed() {
			t.Logf("server and agents log (last 12 KiB):\n%s", tail(lab.log.String(), 12<<10))
		}
	})
	lab.tokens = map[string]string{}
	for _, n := range labNodes {
		lab.tokens[n] = strings.TrimSpace(lab.must(t, admin, "token", "create", "--node", n))
		lab.startAgent(t, n)
	}
	lab.team = strings.TrimSpace(lab.must(t, admin, "token", "create", "--tenant", "team"))
	lab.waitNodesReady(t, labNodes...)
	return lab
}

// runAgent starts 'allot agent' for node with 8 virtual H100 GPUs, a
// heartbeat every 300 ms and its token in the environment (a command line
// is world-readable), given servers (one URL or several), its output
// prefixed in log. It stops its jobs as it exits (--on-exit stop), so that
// none outlives a test; extra flags come last and win.
func runAgent(t *testing.T, servers, node, token, data, work, nodeTimeout string, log *syncBuffer, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"agent", "--server", servers, "--node", node,
		"--gpus", "virtual:8xH100-80GB", "--data", data, "--heartbeat", "300ms",
		"--address", "127.0.0.1", "--work", work, "--node-timeout", nodeTimeout, "--on-exit", "stop"}, extra...)...)
	cmd.Env = append(cleanEnv(), "ALLOT_TOKEN="+token)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.WriteString("[agent " + node + "] " + sc.Text() + "\n")
		}
	}()
	go func() { _ = cmd.Wait(); pw.Close() }()
	return cmd
}

// stopAgents sends the agents SIGTERM and kills those still running
// after grace.
func stopAgents(cmds []*exec.Cmd, grace time.Duration) {
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, c := range cmds {
		for c.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = c.Process.Kill()
	}
}

// workDir is a fresh directory that jobs running under other uids can
// enter: t.TempDir's parent is 0700.
func workDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "allot-e2e-work-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startAgent runs 'allot agent' for node with its node token, its output
// prefixed in the log, and the extra flags.
func (l *agentLab) startAgent(t *testing.T, node string, extra ...string) {
	t.Helper()
	// The token in the environment: a command line is world-readable. All
	// agents share one work directory and one checkpoint root, as hosts
	// would share a file system for checkpoints.
	cmd := runAgent(t, l.url, node, l.tokens[node], filepath.Join(l.dir, "agent-"+node), l.work, "2s", l.log,
		append([]string{"--checkpoint-root", l.ckpt}, extra...)...)
	l.mu.Lock()
	l.agents[node] = cmd
	l.mu.Unlock()
}

// killAgent SIGKILLs node's agent.
func (l *agentLab) killAgent(t *testing.T, node string) {
	t.Helper()
	if err := l.forgetAgent(node).Process.Kill(); err != nil {
		t.Fatal(err)
	}
}

// forgetAgent returns node's agent, which the lab no longer stops at its
// end.
func (l *agentLab) forgetAgent(node string) *exec.Cmd {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.agents[node]
	delete(l.agents, node)
	return c
}

func (l *agentLab) run(t *testing.T, token string, args ...string) result {
	t.Helper()
	return allotAt(t, l.url, token, args...)
}

func (l *agentLab) must(t *testing.T, token string, args ...string) string {
	t.Helper()
	r := l.run(t, token, args...)
	if r.code != 0 {
		t.Fatalf("allot %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

// labJob is the part of the API's Job the agent tests look at.
type labJob struct {
	ID, State, Reason, Detail string
	Allocations               []struct {
		Node string `json:"node"`
	} `json:"allocations"`
	AttemptHistory []struct {
		Number   int       `json:"number"`
		Nodes    []string  `json:"nodes"`
		Started  time.Time `json:"started"`
		Ended    time.Time `json:"ended"`
		ExitCode int       `json:"exit_code"`
		Reason   string    `json:"reason"`
		Detail   string    `json:"detail"`
		Rates    []float64 `json:"usd_per_hour"` // each instance's, fixed as it started
	} `json:"attempt_history"`
	Attempts       int    `json:"attempts"` // made, retries included
	CheckpointPath string `json:"checkpoint_path"`
	Preemptions    int    `json:"preemptions"`
}

func (l *agentLab) submit(t *testing.T, doc string) string {
	t.Helper()
	path := writeFile(t, "job.yaml", doc)
	out := l.must(t, l.team, "job", "submit", "-f", path, "-o", "json")
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
		t.Fatalf("job submit printed %q", out)
	}
	return v.ID
}

func (l *agentLab) job(t *testing.T, id string) labJob {
	t.Helper()
	out := l.must(t, l.team, "job", "show", id, "-o", "json")
	var j labJob
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("job show: %v\n%s", err, out)
	}
	return j
}

// wait polls job id until done says so, for up to limit.
func (l *agentLab) wait(t *testing.T, id, what string, limit time.Duration, done func(labJob) bool) labJob {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j := l.job(t, id)
		if done(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: not %s within %s; last: state %s reason %s detail %q history %+v", id, what, limit,
				j.State, j.Reason, j.Detail, j.AttemptHistory)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func (l *agentLab) waitState(t *testing.T, id, state string, limit time.Duration) labJob {
	t.Helper()
	return l.wait(t, id, state, limit, func(j labJob) bool { return j.State == state })
}

func (l *agentLab) logs(t *testing.T, id string, attempt int) string {
	t.Helper()
	return l.must(t, l.team, logArgs(id, attempt)...)
}

// logArgs is 'allot job logs' of attempt (0: the current one) of job id.
func logArgs(id string, attempt int) []string {
	args := []string{"job", "logs", id}
	if attempt > 0 {
		args = append(args, "--attempt", strconv.Itoa(attempt))
	}
	return args
}

// waitLog polls the job's log until it contains want. A job not placed
// yet has no attempt, and so no log: that is waited out too.
func (l *agentLab) waitLog(t *testing.T, id string, attempt int, want string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		args := logArgs(id, attempt)
		r := l.run(t, l.team, args...)
		s := r.out
		switch {
		case r.code == 0 && strings.Contains(s, want):
			return s
		case r.code != 0 && !strings.Contains(r.err, "has no attempt"):
			t.Fatalf("allot %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s attempt %d: log lacks %q within %s:\n%s", id, attempt, want, limit, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (l *agentLab) waitNodesReady(t *testing.T, names ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := l.must(t, l.admin, "node", "list", "-o", "json")
		var v struct {
			Nodes []struct{ Name, Health string }
		}
		_ = json.Unmarshal([]byte(out), &v)
		ready := 0
		for _, n := range v.Nodes {
			if slices.Contains(names, n.Name) && n.Health == "Ready" {
				ready++
			}
		}
		if ready == len(names) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes %v not all Ready within 20s: %s", names, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cancelAll cancels the jobs still holding or waiting for capacity.
func (l *agentLab) cancelAll(t *testing.T, ids ...string) {
	for _, id := range ids {
		if j := l.job(t, id); j.State == "Queued" || j.State == "Preparing" || j.State == "Running" || j.State == "Preempted" {
			l.run(t, l.team, "job", "cancel", id)
		}
	}
}

const envLine = `echo "rank=$ALLOT_RANK world=$ALLOT_WORLD_SIZE cvd=$CUDA_VISIBLE_DEVICES attempt=$ALLOT_ATTEMPT resume=$ALLOT_RESUME_FROM"`

func TestAgents(t *testing.T) {
	lab := startLab(t)

	t.Run("GangRanksAndDevices", func(t *testing.T) {
		id := lab.submit(t, `name: gang
tenant: team
command: ["sh", "-c", '`+envLine+`; sleep 0.5']
resources: {instance_count: 2, gpus_per_instance: 8, gpu_models: [H100]}
placement: {interconnect: infiniband}
`)
		j := lab.waitState(t, id, "Succeeded", 20*time.Second)
		if len(j.AttemptHistory) != 1 || j.AttemptHistory[0].Reason != "Completed" {
			t.Errorf("attempts %+v, want one Completed", j.AttemptHistory)
		}
		out := lab.waitLog(t, id, 1, "rank=1", 5*time.Second)
		re := regexp.MustCompile(`rank=(\d) world=2 cvd=(\S+)`)
		ms := re.FindAllStringSubmatch(out, -1)
		if len(ms) != 2 || ms[0][1] == ms[1][1] {
			t.Fatalf("want two distinct ranks in the log:\n%s", out)
		}
		a, b := strings.Split(ms[0][2], ","), strings.Split(ms[1][2], ",")
		if len(a) != 8 || len(b) != 8 {
			t.Fatalf("want 8 devices per rank: %v %v", a, b)
		}
		for _, d := range a {
			if slices.Contains(b, d) {
				t.Fatalf("rank devices overlap on %s: %v %v", d, a, b)
			}
		}
	})

	t.Run("CheckpointPreemptResume", func(t *testing.T) {
		// A standard filler holds two nodes; the spot victim gets the third,
		// checkpoints, and is preempted by a standard job. Canceling the
		// filler lets the victim resume on another node.
		filler := lab.submit(t, `name: filler
tenant: team
command: ["sh", "-c", "sleep 60"]
resources: {instance_count: 2, gpus_per_instance: 8}
checkpoint: {grace: 1s}
`)
		lab.waitState(t, filler, "Running", 15*time.Second)
		victim := lab.submit(t, `name: victim
tenant: team
priority: spot
command: ["sh", "-c", 'if [ -n "$ALLOT_RESUME_FROM" ]; then echo "resumed from $ALLOT_RESUME_FROM"; exit 0; fi; echo step-1 > "$ALLOT_CHECKPOINT_DIR/ckpt-1"; echo "$ALLOT_CHECKPOINT_DIR/ckpt-1" > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; trap "echo got SIGTERM; exit 143" TERM; echo first run; while true; do sleep 0.1; done']
resources: {gpus_per_instance: 8}
checkpoint: {grace: 2s}
`)
		defer lab.cancelAll(t, filler, victim)
		v := lab.wait(t, victim, "Running with a checkpoint", 15*time.Second, func(j labJob) bool {
			return j.State == "Running" && j.CheckpointPath != ""
		})
		first := v.Allocations[0].Node
		high := lab.submit(t, `name: urgent
tenant: team
priority: standard
command: ["sh", "-c", "sleep 1"]
resources: {gpus_per_instance: 8}
`)
		defer lab.cancelAll(t, high)
		v = lab.wait(t, victim, "preempted", 15*time.Second, func(j labJob) bool { return j.Preemptions > 0 })
		if d := v.AttemptHistory[0].Detail; !strings.Contains(d, "preempted for "+high) || !strings.Contains(d, "GPU-seconds lost") {
			t.Errorf("victim's attempt 1 detail %q, want it to name %s and the GPU-seconds lost", d, high)
		}
		lab.waitLog(t, victim, 1, "got SIGTERM", 10*time.Second)
		lab.waitState(t, victim, "Queued", 10*time.Second)
		lab.must(t, lab.team, "job", "cancel", filler)
		v = lab.waitState(t, victim, "Succeeded", 20*time.Second)
		if len(v.AttemptHistory) != 2 || v.AttemptHistory[0].Reason != "Preempted" {
			t.Fatalf("victim attempts %+v, want Preempted then Completed", v.AttemptHistory)
		}
		if second := v.AttemptHistory[1].Nodes[0]; second == first {
			t.Errorf("victim resumed on %s, its first node; want another", second)
		}
		lab.waitLog(t, victim, 2, "resumed from "+v.CheckpointPath, 5*time.Second)
		lab.waitState(t, high, "Succeeded", 15*time.Second)
	})

	t.Run("AgentKilledJobRequeued", func(t *testing.T) {
		id := lab.submit(t, `name: survivor
tenant: team
command: ["sh", "-c", 'echo "attempt $ALLOT_ATTEMPT"; sleep 3']
resources: {gpus_per_instance: 8}
retry: {max_retries: 0}
checkpoint: {grace: 1s}
`)
		defer lab.cancelAll(t, id)
		j := lab.waitState(t, id, "Running", 15*time.Second)
		node := j.Allocations[0].Node
		lab.killAgent(t, node)
		// Requeued after the 2 s node timeout, then held back 10 s (the
		// first lost attempt's back-off, longer than grace + 5 s).
		j = lab.waitState(t, id, "Succeeded", 30*time.Second)
		if len(j.AttemptHistory) != 2 || j.AttemptHistory[0].Reason != "NodeLost" || j.AttemptHistory[1].Nodes[0] == node {
			t.Errorf("attempts %+v, want NodeLost on %s then Completed elsewhere", j.AttemptHistory, node)
		}
		lab.startAgent(t, node)
		lab.waitNodesReady(t, node)
	})

	t.Run("FailsAfterMaxRetries", func(t *testing.T) {
		id := lab.submit(t, `name: broken
tenant: team
command: ["sh", "-c", "echo failing; exit 3"]
resources: {gpus_per_instance: 1}
retry: {max_retries: 2}
`)
		j := lab.waitState(t, id, "Failed", 30*time.Second)
		if len(j.AttemptHistory) != 3 {
			t.Fatalf("%d attempts %+v, want exactly max_retries+1 = 3", len(j.AttemptHistory), j.AttemptHistory)
		}
		for i, a := range j.AttemptHistory {
			if a.ExitCode != 3 {
				t.Errorf("attempt %d exit code %d, want 3", a.Number, a.ExitCode)
			}
			// --retry-backoff 1s: the first retry waits 1 s, the second 2 s.
			if i > 0 {
				prev := j.AttemptHistory[i-1]
				if wait, want := a.Started.Sub(prev.Ended), time.Duration(i)*time.Second; wait < want {
					t.Errorf("attempt %d started %s after attempt %d failed, want at least the back-off %s", a.Number, wait, prev.Number, want)
				}
			}
		}
	})

	t.Run("TimedOut", func(t *testing.T) {
		id := lab.submit(t, `name: slow
tenant: team
command: ["sh", "-c", "sleep 30"]
resources: {gpus_per_instance: 1}
retry: {max_retries: 2, timeout: 1s}
checkpoint: {grace: 1s}
`)
		j := lab.waitState(t, id, "TimedOut", 15*time.Second)
		if len(j.AttemptHistory) != 1 {
			t.Errorf("attempts %+v, want one (a time-out is not retried)", j.AttemptHistory)
		}
	})

	t.Run("IgnoresSIGTERMKilledAfterGrace", func(t *testing.T) {
		id := lab.submit(t, `name: stubborn
tenant: team
command: ["sh", "-c", 'trap "echo ignoring TERM" TERM; echo "pid=$$"; while true; do sleep 0.1; done']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 1s}
`)
		lab.waitState(t, id, "Running", 15*time.Second)
		out := lab.waitLog(t, id, 1, "pid=", 5*time.Second)
		m := regexp.MustCompile(`pid=(\d+)`).FindStringSubmatch(out)
		pid, _ := strconv.Atoi(m[1])
		start := time.Now()
		lab.must(t, lab.team, "job", "cancel", id)
		lab.waitLog(t, id, 1, "ignoring TERM", 5*time.Second)
		for syscall.Kill(pid, 0) == nil {
			if time.Since(start) > 6*time.Second {
				t.Fatalf("pid %d still alive %s after cancel with grace 1s", pid, time.Since(start))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("process ended %s after cancel; it ignores SIGTERM, so SIGKILL should come after the 1s grace", d)
		}
	})

	t.Run("LaunchFailureVisible", func(t *testing.T) {
		// A command that cannot start, one that exits non-zero and one a
		// signal ends: each says why in job show, job why and its log
		// (headed on stderr by how the attempt ended, and ended by the
		// agent's own line).
		for _, tc := range []struct{ name, command, cause string }{
			{"no-binary", `["no-such-program-4711", "--epochs", "3"]`, `could not start: `},
			{"exits-3", `["sh", "-c", "echo working; exit 3"]`, "exited with code 3"},
			{"signalled", `["sh", "-c", "echo working; kill -9 $$"]`, "ended by signal killed"},
		} {
			id := lab.submit(t, "name: "+tc.name+"\ntenant: team\ncommand: "+tc.command+"\nresources: {gpus_per_instance: 1}\n")
			j := lab.waitState(t, id, "Failed", 20*time.Second)
			if !strings.Contains(j.Detail, tc.cause) {
				t.Errorf("%s: job show detail %q, want the cause %q", tc.name, j.Detail, tc.cause)
			}
			if tc.name == "no-binary" && !strings.Contains(j.Detail, "no-such-program-4711") {
				t.Errorf("%s: job show detail %q does not name the program", tc.name, j.Detail)
			}
			if why := lab.must(t, lab.team, "job", "why", id); !strings.Contains(why, tc.cause) {
				t.Errorf("%s: job why does not say %q:\n%s", tc.name, tc.cause, why)
			}
			r := lab.run(t, lab.team, "job", "logs", id)
			if r.code != 0 || !strings.HasPrefix(r.err, "# attempt 1: Failed: ") || !strings.Contains(r.err, tc.cause) {
				t.Errorf("%s: job logs exit %d, stderr %q; want it headed by how attempt 1 failed", tc.name, r.code, r.err)
			}
			lines := strings.Split(strings.TrimSpace(r.out), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "allot: rank 0 on ") || !strings.Contains(last, tc.cause) {
				t.Errorf("%s: log ends %q, want the agent's line with %q\n%s", tc.name, last, tc.cause, r.out)
			}
		}
	})

	t.Run("LogsFollow", func(t *testing.T) {
		id := lab.submit(t, `name: chatty
tenant: team
command: ["sh", "-c", "for i in 1 2 3; do echo line-$i; sleep 0.3; done"]
resources: {gpus_per_instance: 1}
`)
		lab.waitState(t, id, "Running", 15*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "job", "logs", id, "-f", "--server", lab.url, "--token", lab.team)
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "line-3") {
			t.Fatalf("job logs -f: %v\n%s", err, out)
		}
	})
}
