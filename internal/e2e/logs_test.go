package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ticker prints "tick N UNIX-NANOS" every 200 ms, 30 times: each line
// carries the moment the job wrote it.
const ticker = `name: ticker
tenant: research
command: [sh, -c, 'i=0; while [ $i -lt 30 ]; do echo "tick $i $(date +%s%N)"; i=$((i+1)); sleep 0.2; done']
resources: {gpu_milli: 250, gpu_models: [T4]}
`

// TestLogsFollowStreams runs a job under 'allot up' that prints a line
// every 200 ms and follows its log with 'allot job logs -f': every line
// written after the client attached must reach it within a second (agent
// → server → client, each flushing).
func TestLogsFollowStreams(t *testing.T) {
	needServer(t)
	url, admin := startUp(t, t.TempDir())
	out := strings.TrimSpace(allotAtMust(t, url, admin, "job", "submit", "-f", writeFile(t, "ticker.yaml", ticker)))
	id := out
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := strings.TrimSpace(allotAtMust(t, url, admin, "job", "show", id, "-o", "json"))
		if strings.Contains(st, `"state": "Running"`) || strings.Contains(st, `"state":"Running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticker never ran:\n%s", st)
		}
		time.Sleep(100 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "job", "logs", id, "-f", "--token", admin)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "ALLOT_SERVER="+url, "HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	attached := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var seen, late int
	var worst time.Duration
	last := -1
	for sc.Scan() {
		got := time.Now()
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "tick" {
			continue // the head of the log may say how the attempt started
		}
		n, _ := strconv.Atoi(f[1])
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if n != last+1 {
			t.Errorf("line %d after line %d: lines lost or reordered", n, last)
		}
		last = n
		written := time.Unix(0, ns)
		if written.Before(attached.Add(500 * time.Millisecond)) {
			continue // written before the client was there to read it
		}
		seen++
		lag := got.Sub(written)
		worst = max(worst, lag)
		if lag > time.Second {
			late++
			t.Errorf("line %d reached the client %v after the job wrote it, want under 1s", n, lag)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("job logs -f: %v\n%s", err, stderr.String())
	}
	if last != 29 {
		t.Errorf("the last line seen is %d, want 29: -f stopped early", last)
	}
	if seen < 10 {
		t.Fatalf("only %d lines were written while the client followed; want at least 10", seen)
	}
	t.Logf("%d lines followed live, worst latency %v, %d over 1s", seen, worst.Round(time.Millisecond), late)
}

// allotAtMust runs the CLI against url and fails the test unless it exits 0.
func allotAtMust(t *testing.T, url, token string, args ...string) string {
	t.Helper()
	r := allotAt(t, url, token, args...)
	if r.code != 0 {
		t.Fatalf("allot %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}
