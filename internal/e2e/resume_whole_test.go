package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// upRun is one run of 'allot up' on a data directory that outlives it.
type upRun struct {
	url, admin string
	stop       func()
}

// startUpAt starts 'allot up' on data, with the example fleet and more
// flags.
func startUpAt(t *testing.T, data string, log *syncBuffer, more ...string) upRun {
	t.Helper()
	// stop waits past the agents' stop timeout (30 s): they stop the jobs
	// and deliver their last checkpoints before up exits.
	url, admin, stop, err := startServerStop(data, log, 45*time.Second, append([]string{"up", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "examples/fleet.yaml"), "--tenants", filepath.Join(root, "examples/tenants.yaml"),
		"--log-level", "warn"}, more...)...)
	if err != nil {
		t.Fatalf("start allot up: %v\n%s", err, log.String())
	}
	return upRun{url: url, admin: admin, stop: stop}
}

// run submits a job of tenant research with 'job run' and returns its ID.
func (u upRun) run(t *testing.T, args ...string) string {
	t.Helper()
	out := allotAtMust(t, u.url, "", append([]string{"job", "run", "--token", u.admin, "--tenant", "research", "-o", "json"}, args...)...)
	m := regexp.MustCompile(`"id":\s*"([^"]+)"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("job run printed %q, want {\"id\": …}", out)
	}
	return m[1]
}

// rankLog is what one rank of demo train printed in one attempt.
type rankLog struct {
	attempt int
	resumed int   // the step the gang started from, -1 when it did not say
	steps   []int // the steps it finished, in order
	worlds  []int // with --elastic, the world size of each step
}

var (
	stepLine  = regexp.MustCompile(`(?m)^step (\d+)/\d+ loss \S+(?: world (\d+))?`)
	gangLine  = regexp.MustCompile(`every rank starts from step (\d+)`)
	attemptOf = regexp.MustCompile(`attempt-(\d+)\.rank-(\d+)\.log$`)
)

// rankLogs reads what each rank of job printed in each attempt from the
// log files the virtual agents of 'allot up' keep on their disks
// (DATA/agents/NODE/logs/JOB/attempt-N.rank-R.log), which outlive the
// server's memory and its restarts: by rank, in attempt order.
func rankLogs(t *testing.T, data, job string) map[int][]rankLog {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(data, "agents", "*", "logs", job, "attempt-*.rank-*.log"))
	out := map[int][]rankLog{}
	for _, f := range files {
		m := attemptOf.FindStringSubmatch(f)
		b, err := os.ReadFile(f)
		if m == nil || err != nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		r, _ := strconv.Atoi(m[2])
		l := rankLog{attempt: n, resumed: -1}
		if g := gangLine.FindStringSubmatch(string(b)); g != nil {
			l.resumed, _ = strconv.Atoi(g[1])
		}
		for _, s := range stepLine.FindAllStringSubmatch(string(b), -1) {
			k, _ := strconv.Atoi(s[1])
			w, _ := strconv.Atoi(s[2])
			l.steps, l.worlds = append(l.steps, k), append(l.worlds, w)
		}
		out[r] = append(out[r], l)
	}
	for r := range out {
		slices.SortFunc(out[r], func(a, b rankLog) int { return a.attempt - b.attempt })
	}
	return out
}

// waitSteps waits until every one of the 4 ranks finished step at least
// min in one attempt after attempt after, the same for all, and returns
// the logs and that attempt.
func waitSteps(t *testing.T, data, job string, after, min int, what string) (map[int][]rankLog, int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		logs := rankLogs(t, data, job)
		n := -1
		ok := len(logs) == 4
		for r := range 4 {
			ls := logs[r]
			if !ok || len(ls) == 0 {
				ok = false
				break
			}
			last := ls[len(ls)-1]
			ok = ok && last.attempt > after && (n < 0 || last.attempt == n) && len(last.steps) > 0 && slices.Max(last.steps) >= min
			n = last.attempt
		}
		if ok {
			return logs, n
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for r := range 4 {
				for _, l := range logs[r] {
					fmt.Fprintf(&b, "\n  rank %d attempt %d: resumed %d, %d steps", r, l.attempt, l.resumed, len(l.steps))
					if len(l.steps) > 0 {
						fmt.Fprintf(&b, " %d..%d", l.steps[0], l.steps[len(l.steps)-1])
					}
				}
			}
			t.Fatalf("%s: after 90 s the ranks' logs of an attempt after %d do not all reach step %d:%s", what, after, min, b.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// checkWhole checks that in attempt n every rank started from the same
// step, the last step every rank finished before it, and that no rank did
// a step twice over all its attempts.
func checkWhole(t *testing.T, logs map[int][]rankLog, n int, what string) int {
	t.Helper()
	from := -1
	for r := range 4 {
		var done []int
		var cur *rankLog
		for i, l := range logs[r] {
			if l.attempt < n {
				done = append(done, l.steps...)
			}
			if l.attempt == n {
				cur = &logs[r][i]
			}
		}
		if cur == nil {
			t.Fatalf("%s: rank %d has no log of attempt %d", what, r, n)
		}
		if from < 0 {
			from = cur.resumed
		}
		if cur.resumed != from || cur.resumed <= 0 {
			t.Errorf("%s: rank %d started attempt %d from step %d, rank 0 from %d: want every rank from the same step, none from the beginning", what, r, n, cur.resumed, from)
		}
		if len(done) > 0 && cur.resumed != done[len(done)-1] {
			t.Errorf("%s: rank %d resumed from step %d, but its last step before was %d", what, r, cur.resumed, done[len(done)-1])
		}
		all := append(done, cur.steps...)
		for i := 1; i < len(all); i++ {
			if all[i] != all[i-1]+1 {
				t.Errorf("%s: rank %d did step %d after step %d (a step done twice or skipped)", what, r, all[i], all[i-1])
				break
			}
		}
	}
	return from
}

// TestGangResumesWholeUnderUp runs a 4-node 'demo train' under 'allot up'
// (which shares a checkpoint root between its nodes): requeued with one of
// its nodes taken meanwhile by another job, and then with 'allot up'
// restarted under it, every rank resumes from the same step, the step it
// stopped at, and none does a step twice (issue 44).
func TestGangResumesWholeUnderUp(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	log := &syncBuffer{}
	up := startUpAt(t, data, log)
	defer func() {
		up.stop()
		if t.Failed() {
			t.Logf("allot up's log (last 8 KiB):\n%s", tail(log.String(), 8<<10))
		}
	}()
	run := func(args ...string) string { t.Helper(); return up.run(t, args...) }
	job := run("--name", "train4", "--instances", "4", "--gpus", "8", "--gpu-model", "H100", "--region", "eastus",
		"--", "allot", "demo", "train", "--steps", "100000", "--step-time", "100ms", "--checkpoint-every", "1000")
	_, first := waitSteps(t, data, job, 0, 20, "attempt 1")
	nodes := nodesOf(t, up, job)
	if len(nodes) != 4 {
		t.Fatalf("the gang runs on %v, want 4 nodes", nodes)
	}

	// A job of a higher class that needs rank 2's node preempts the gang,
	// which resumes on another node in its place.
	blocker := run("--name", "blocker", "--gpus", "8", "--node", nodes[2], "--priority", "reserved", "--", "sleep", "600")
	logs, second := waitSteps(t, data, job, first, 20, "after the preemption")
	from := checkWhole(t, logs, second, "preempted, rank 2's node taken")
	again := nodesOf(t, up, job)
	if slices.Contains(again, nodes[2]) {
		t.Errorf("attempt %d runs on %v, want off %s, which the blocker took", second, again, nodes[2])
	}
	if got := allotAtMust(t, up.url, up.admin, "job", "show", blocker, "-o", "json"); !strings.Contains(got, `"state": "Running"`) {
		t.Errorf("the blocker is not Running:\n%s", got)
	}
	t.Logf("attempt %d on %v resumed every rank from step %d", second, again, from)

	// Requeued as a preemption would: every rank back on its node.
	allotAtMust(t, up.url, up.admin, "job", "requeue", job)
	logs, third := waitSteps(t, data, job, second, from+20, "after the requeue")
	from = checkWhole(t, logs, third, "requeued")
	if back := nodesOf(t, up, job); !slices.Equal(back, again) {
		t.Errorf("attempt %d runs on %v, want each rank back on its node %v", third, back, again)
	}
	t.Logf("attempt %d resumed every rank from step %d", third, from)

	// Restart 'allot up' under the running gang: its agents stop the
	// ranks, deliver the parts they save on SIGTERM, and the job comes back
	// on the same nodes, each rank on its own.
	before := nodesOf(t, up, job)
	up.stop()
	up = startUpAt(t, data, log)
	logs, fourth := waitSteps(t, data, job, third, from+1, "after allot up restarted")
	from = checkWhole(t, logs, fourth, "after allot up restarted")
	if after := nodesOf(t, up, job); !slices.Equal(after, before) {
		t.Errorf("after the restart the gang runs on %v, want each rank back on its node %v", after, before)
	}
	t.Logf("attempt %d (after the restart) resumed every rank from step %d", fourth, from)
	t.Logf("history:\n%s", allotAtMust(t, up.url, up.admin, "job", "show", job))
	allotAtMust(t, up.url, up.admin, "job", "cancel", "--force", job, blocker)
}

// nodesOf are the nodes of job's current allocation, by rank.
func nodesOf(t *testing.T, up upRun, job string) []string {
	t.Helper()
	var j struct {
		Allocations []struct{ Node string }
	}
	if err := json.Unmarshal([]byte(allotAtMust(t, up.url, up.admin, "job", "show", job, "-o", "json")), &j); err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, a := range j.Allocations {
		nodes = append(nodes, a.Node)
	}
	return nodes
}
