package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// elasticJob is what the test reads of an elastic job through the CLI
// (job show -o json).
type elasticJob struct {
	State       string `json:"state"`
	Instances   int    `json:"instances"`
	Resizes     int    `json:"resizes"`
	Allocations []struct {
		Node string `json:"node"`
	} `json:"allocations"`
	History []struct {
		Number int      `json:"number"`
		Nodes  []string `json:"nodes"`
		Reason string   `json:"reason"`
		Detail string   `json:"detail"`
	} `json:"attempt_history"`
}

// rank0Logs is what rank 0 of job printed, by attempt (rankLogs).
func rank0Logs(t *testing.T, data, job string) map[int]rankLog {
	t.Helper()
	out := map[int]rankLog{}
	for _, l := range rankLogs(t, data, job)[0] {
		out[l.attempt] = l
	}
	return out
}

// TestElasticTrainUnderUp runs an elastic 'demo train' of 2 to 6 H100
// nodes under 'allot up' (a resize interval of seconds): it grows into the
// idle nodes of its cluster, gives one back when a job of a higher class
// needs that node, and each time its next attempt resumes every rank from
// the checkpoint rank 0 saved as the old ranks stopped, with the new world
// size: no step is done twice or skipped across a resize (issue 42).
func TestElasticTrainUnderUp(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	log := &syncBuffer{}
	up := startUpAt(t, data, log, "--resize-interval", "5s")
	url, admin := up.url, up.admin
	defer func() {
		up.stop()
		if t.Failed() {
			t.Logf("allot up's log (last 8 KiB):\n%s", tail(log.String(), 8<<10))
		}
	}()
	run := func(args ...string) string { t.Helper(); return up.run(t, args...) }
	show := func(id string) elasticJob {
		t.Helper()
		var j elasticJob
		if err := json.Unmarshal([]byte(allotAtMust(t, url, admin, "job", "show", id, "-o", "json")), &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	// waitFor polls the job until ok holds of it and rank 0 of its
	// current attempt has run a few steps.
	waitFor := func(id, what string, ok func(elasticJob) bool) elasticJob {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			j := show(id)
			if ok(j) && j.State == "Running" {
				if l := rank0Logs(t, data, id)[len(j.History)]; len(l.steps) >= 3 {
					return j
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 90 s; the job is %s with %d instances, %d resizes:\n%s", what, j.State, j.Instances, j.Resizes,
					allotAtMust(t, url, admin, "job", "show", id))
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	job := run("--name", "elastic", "--instances", "2-6", "--gpus", "8", "--gpu-model", "H100", "--region", "eastus",
		"--", "allot", "demo", "train", "--elastic", "--steps", "100000", "--step-time", "400ms", "--checkpoint-every", "10")

	// Growth: the job starts with 2 instances and grows into its
	// cluster's idle nodes once the resize interval passed.
	j := waitFor(job, "growth to 6 instances", func(j elasticJob) bool { return j.Instances == 6 })
	if j.Resizes < 1 || !strings.HasPrefix(j.History[0].Detail, "grew 2→") || len(j.History[0].Nodes) != 2 {
		t.Fatalf("growth: attempt 1 %+v", j.History[0])
	}
	grown := len(j.History)

	// Shrink: a reserved job that must run on the node of the last
	// instance takes it back; the elastic job goes on with 5 (and may grow
	// again later into another idle node).
	last := j.Allocations[len(j.Allocations)-1].Node
	blocker := run("--name", "blocker", "--gpus", "8", "--node", last, "--priority", "reserved", "--", "sleep", "600")
	j = waitFor(job, "the shrink for the blocker", func(j elasticJob) bool {
		return len(j.History) > grown && j.History[grown-1].Reason == "Resized"
	})
	if d := j.History[grown-1].Detail; !strings.HasPrefix(d, "shrank 6→5 for "+blocker+" (reserved)") {
		t.Errorf("attempt %d ended %q, want a shrink 6→5 for the blocker", grown, d)
	}
	if got := allotAtMust(t, url, admin, "job", "show", blocker, "-o", "json"); !strings.Contains(got, `"state": "Running"`) {
		t.Errorf("the blocker is not Running:\n%s", got)
	}

	// Every attempt after the first resumed from the step the one before
	// it stopped at (rank 0's checkpoint of the whole job), ran with as
	// many ranks as it had nodes, and did every step once.
	logs := rank0Logs(t, data, job)
	for n := 1; n <= len(j.History); n++ {
		l, ok := logs[n]
		world := len(j.History[n-1].Nodes)
		if !ok || len(l.steps) == 0 {
			t.Errorf("attempt %d: rank 0 printed no step", n)
			continue
		}
		for i, s := range l.steps {
			if l.worlds[i] != world {
				t.Errorf("attempt %d ran step %d with world %d, want %d (its nodes)", n, s, l.worlds[i], world)
				break
			}
			if i > 0 && s != l.steps[i-1]+1 {
				t.Errorf("attempt %d did step %d after %d", n, s, l.steps[i-1])
				break
			}
		}
		if n == 1 {
			continue
		}
		prev := logs[n-1]
		if len(prev.steps) == 0 {
			continue
		}
		stopped := prev.steps[len(prev.steps)-1]
		if l.resumed != stopped || l.steps[0] != stopped+1 {
			t.Errorf("attempt %d resumed every rank from step %d and did step %d first; attempt %d stopped after step %d: want a resume from it, no step lost or done twice",
				n, l.resumed, l.steps[0], n-1, stopped)
		}
	}
	text := allotAtMust(t, url, admin, "job", "show", job)
	for _, want := range []string{"Instances:", "of 2-6 (elastic)", "Resizes:", "#1→#2 grew 2→", fmt.Sprintf("shrank 6→5 for %s", blocker)} {
		if !strings.Contains(text, want) {
			t.Errorf("job show lacks %q:\n%s", want, text)
		}
	}
	if why := allotAtMust(t, url, admin, "job", "why", job); !strings.Contains(why, "Size:") || !strings.Contains(why, "of 2-6 instances") {
		t.Errorf("job why does not say the job's size:\n%s", why)
	}
	sizes := []int{}
	for _, a := range j.History {
		sizes = append(sizes, len(a.Nodes))
	}
	if !slices.Contains(sizes, 2) || !slices.Contains(sizes, 6) || !slices.Contains(sizes, 5) {
		t.Errorf("attempts ran with %v instances, want 2, 6 and 5 among them", sizes)
	}
	t.Logf("sizes of the attempts: %v\n%s", sizes, text)
	allotAtMust(t, url, admin, "job", "cancel", "--force", job, blocker)
}
