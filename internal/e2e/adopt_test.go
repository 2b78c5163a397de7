package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopAgent sends node's agent SIGTERM and waits for it to exit.
func (l *agentLab) stopAgent(t *testing.T, node string) {
	t.Helper()
	c := l.forgetAgent(node)
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.Process.Signal(syscall.Signal(0)) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("agent %s still runs 20s after SIGTERM", node)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An agent restarted under a running job, as an upgrade does (SIGTERM,
// start the binary again), leaves the job running: the same process, the
// same attempt (no new one, no retry counted), its log going on with no
// line lost or doubled, and a bill without a gap: one attempt from its
// start to its end, billed at its rate for all of it.
func TestAgentRestartKeepsJobRunning(t *testing.T) {
	// Restarts take well under the node timeout; 5 s keeps a loaded host
	// from losing the node meanwhile.
	l := startLab(t, "--node-timeout", "5s")
	leave := []string{"--on-exit", "leave", "--node-timeout", "5s"}
	for _, n := range labNodes {
		l.stopAgent(t, n)
		l.startAgent(t, n, leave...)
	}
	l.waitNodesReady(t, labNodes...)
	since := time.Now().UTC().Add(-time.Second)
	const lines = 80
	id := l.submit(t, fmt.Sprintf(`name: upgrade-proof
tenant: team
command: ["sh", "-c", 'echo "pid=$$"; i=0; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done']
resources: {gpus_per_instance: 8}
checkpoint: {grace: 1s}
`, lines))
	defer l.cancelAll(t, id)
	before := l.waitState(t, id, "Running", 20*time.Second)
	node := before.Allocations[0].Node
	pid := logPid(t, l.waitLog(t, id, 1, "line 3\n", 10*time.Second), "pid")
	if len(before.AttemptHistory) != 1 {
		t.Fatalf("attempts before the restart: %+v", before.AttemptHistory)
	}
	adopted := strings.Count(l.log.String(), "msg=\"adopted an instance")

	l.stopAgent(t, node)
	if !pidAlive(pid) {
		t.Fatalf("the job (pid %d) died with its agent", pid)
	}
	time.Sleep(500 * time.Millisecond) // lines written while no agent runs
	l.startAgent(t, node, leave...)
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(l.log.String(), "msg=\"adopted an instance") == adopted {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted agent of %s adopted nothing within 10s", node)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !pidAlive(pid) {
		t.Fatalf("the job (pid %d) died as the restarted agent took it over", pid)
	}
	after := l.job(t, id)
	if after.State != "Running" || after.Attempts != 1 || len(after.AttemptHistory) != 1 || !after.AttemptHistory[0].Started.Equal(before.AttemptHistory[0].Started) {
		t.Fatalf("after the restart: %s, %d attempts %+v; want Running, attempt 1 alone, started at %s",
			after.State, after.Attempts, after.AttemptHistory, before.AttemptHistory[0].Started)
	}

	l.waitState(t, id, "Succeeded", 20*time.Second)
	until := time.Now().UTC()
	var got []string
	for _, line := range strings.Split(l.logs(t, id, 1), "\n") {
		if n, ok := strings.CutPrefix(line, "line "); ok {
			got = append(got, n)
		}
	}
	var want []string
	for i := range lines {
		want = append(want, strconv.Itoa(i))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the log's lines are %v, want 0 to %d once each, in order", got, lines-1)
	}
	end := l.job(t, id)
	if end.Attempts != 1 || len(end.AttemptHistory) != 1 || end.AttemptHistory[0].Reason != "Completed" || !end.AttemptHistory[0].Started.Equal(before.AttemptHistory[0].Started) {
		t.Fatalf("at the end: %d attempts %+v; want the one attempt, Completed", end.Attempts, end.AttemptHistory)
	}
	a := end.AttemptHistory[0]
	ran := a.Ended.Sub(a.Started)
	if ran < lines*100*time.Millisecond {
		t.Errorf("attempt billed for %s, less than the job ran (%d lines 100 ms apart)", ran, lines)
	}
	var rep costReport
	out := l.must(t, l.admin, "cost", "report", "--by", "job", "-o", "json",
		"--since", since.Format(time.RFC3339Nano), "--until", until.Format(time.RFC3339Nano))
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("cost report: %v\n%s", err, out)
	}
	var rate float64
	for _, r := range a.Rates {
		rate += r
	}
	billed := 0.0
	for _, r := range rep.Rows {
		if r.Job == id {
			billed += r.USD
		}
	}
	if wantUSD := rate * ran.Hours(); rate <= 0 || math.Abs(billed-wantUSD) > 0.005 {
		t.Errorf("billed $%.4f, want $%.4f: %s at $%.2f an hour, without a gap", billed, wantUSD, ran, rate)
	}
}
