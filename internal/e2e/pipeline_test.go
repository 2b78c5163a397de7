package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// pipelineJob is the part of the API's Job the pipeline tests look at.
type pipelineJob struct {
	ID, Name, State, Reason, Detail string
	StartedAt                       time.Time `json:"started_at"`
	EndedAt                         time.Time `json:"ended_at"`
	Spec                            struct {
		After []string `json:"after"`
	} `json:"spec"`
}

// submitPipeline submits a pipeline file through the CLI as the lab's
// tenant and returns the IDs of its steps, in the order of the file.
func (l *agentLab) submitPipeline(t *testing.T, doc string) []string {
	t.Helper()
	path := writeFile(t, "pipeline.yaml", doc)
	out := l.must(t, l.team, "job", "submit", "-f", path, "-o", "json")
	var ids []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &ids); err != nil || len(ids) == 0 {
		t.Fatalf("job submit printed %q", out)
	}
	out2 := make([]string, len(ids))
	for i, v := range ids {
		out2[i] = v.ID
	}
	return out2
}

func (l *agentLab) pipelineJob(t *testing.T, id string) pipelineJob {
	t.Helper()
	out := l.must(t, l.team, "job", "show", id, "-o", "json")
	var j pipelineJob
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("job show: %v\n%s", err, out)
	}
	return j
}

// pipelineOf is a two-step pipeline whose first step runs first for a
// second (so that the second is seen waiting) and then runs first.
func pipelineOf(first string) string {
	return `name: prepare
tenant: team
command: ["sh", "-c", "sleep 1; ` + first + `"]
resources: {gpus_per_instance: 1}
---
name: train
tenant: team
after: [prepare]
command: ["true"]
resources: {gpus_per_instance: 1}
`
}

// TestPipelineRunsInOrder submits a two-step pipeline with 'allot job
// submit -f': the second step is Blocked, holding nothing and saying what
// it waits for in show, list and why, until the first succeeded, and
// starts only then.
func TestPipelineRunsInOrder(t *testing.T) {
	lab := startLab(t)
	ids := lab.submitPipeline(t, pipelineOf("exit 0"))
	prep, train := ids[0], ids[1]

	if a := lab.job(t, train).Allocations; len(a) != 0 {
		t.Errorf("the blocked step holds %d allocations", len(a))
	}
	j := lab.pipelineJob(t, train)
	if j.State != "Blocked" || j.Reason != "WaitsForPredecessor" || !strings.HasPrefix(j.Detail, "waits for "+prep+" (") ||
		len(j.Spec.After) != 1 || j.Spec.After[0] != prep {
		t.Fatalf("train right after submit: %+v, want Blocked waiting for %s", j, prep)
	}
	show := lab.must(t, lab.team, "job", "show", train)
	for _, want := range []string{"Blocked", "WaitsForPredecessor", "waits for " + prep, "After", prep} {
		if !strings.Contains(show, want) {
			t.Errorf("job show lacks %q:\n%s", want, show)
		}
	}
	why := lab.must(t, lab.team, "job", "why", train)
	for _, want := range []string{"Blocked", "WaitsForPredecessor", "waits for " + prep, "Estimated start:"} {
		if !strings.Contains(why, want) {
			t.Errorf("job why lacks %q:\n%s", want, why)
		}
	}
	list := lab.must(t, lab.team, "job", "list", "--state", "Blocked")
	if rows := strings.Split(strings.TrimSpace(list), "\n"); len(rows) != 2 || !strings.HasPrefix(rows[1], train+" ") ||
		!strings.Contains(rows[1], "Blocked") || !strings.Contains(rows[1], "WaitsForPredecessor: "+prep+" (") {
		t.Errorf("job list --state Blocked:\n%s\nwant one row, %s Blocked WaitsForPredecessor: %s (…)", list, train, prep)
	}

	lab.waitState(t, prep, "Succeeded", 30*time.Second)
	lab.waitState(t, train, "Succeeded", 30*time.Second)
	pj, tj := lab.pipelineJob(t, prep), lab.pipelineJob(t, train)
	if tj.StartedAt.Before(pj.EndedAt) {
		t.Errorf("train started at %s, before prepare ended at %s", tj.StartedAt, pj.EndedAt)
	}
	// Promptly: on prepare's end, not some later tick or poll.
	if d := tj.StartedAt.Sub(pj.EndedAt); d > 5*time.Second {
		t.Errorf("train started %s after prepare ended", d)
	}
}

// TestPipelineFailedStepCancelsTheNext lets the first step fail: the
// second is canceled, never started, with a reason naming the failed step.
func TestPipelineFailedStepCancelsTheNext(t *testing.T) {
	lab := startLab(t)
	ids := lab.submitPipeline(t, pipelineOf("exit 3"))
	prep, train := ids[0], ids[1]
	lab.waitState(t, prep, "Failed", 30*time.Second)
	j := lab.wait(t, train, "Canceled", 10*time.Second, func(j labJob) bool { return j.State != "Blocked" })
	if j.State != "Canceled" || j.Reason != "PredecessorFailed" || !strings.Contains(j.Detail, prep+" ended Failed") ||
		len(j.AttemptHistory) != 0 {
		t.Fatalf("train after prepare failed: state %s reason %s detail %q, %d attempts; want Canceled PredecessorFailed "+
			"naming %s, never started", j.State, j.Reason, j.Detail, len(j.AttemptHistory), prep)
	}
	why := lab.must(t, lab.team, "job", "why", train)
	if !strings.Contains(why, "PredecessorFailed") || !strings.Contains(why, prep) {
		t.Errorf("job why of the canceled step:\n%s", why)
	}
}

// TestPipelineBadInput submits pipelines that cannot be: a cycle, an
// unknown name in after:, a step waiting for itself. Each is refused with
// exit status 2 naming the field, and no step of the file is created.
func TestPipelineBadInput(t *testing.T) {
	lab := startLab(t)
	step := func(name, after string) string {
		return "name: " + name + "\ntenant: team\nafter: " + after + "\ncommand: [\"true\"]\nresources: {gpus_per_instance: 1}\n"
	}
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"cycle", step("bad-a", "[bad-c]") + "---\n" + step("bad-b", "[bad-a]") + "---\n" + step("bad-c", "[bad-b]"),
			[]string{"pipeline.yaml:3:", "after:", `job "bad-a" waits for itself through a cycle: bad-a → bad-c → bad-b → bad-a`}},
		{"unknown name", "name: bad-a\ntenant: team\ncommand: [\"true\"]\n---\n" + step("bad-b", "[bad-a, bad-nope]"),
			[]string{"InvalidSpec", `unknown job "bad-nope"`, "(field after[1])", "none was submitted"}},
		{"self", step("bad-a", "[bad-a]"),
			[]string{"pipeline.yaml:3:", "after[0]:", `job "bad-a" cannot wait for itself`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := lab.run(t, lab.team, "job", "submit", "-f", writeFile(t, "pipeline.yaml", tc.doc))
			if r.code != 2 {
				t.Errorf("exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.err, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.err)
				}
			}
		})
	}
	// Over HTTP, where no CLI checks the file first: a cycle is 400 naming
	// the field of the first job on it.
	status, body := send(t, lab.url, "POST", "/v1/jobs/batch", lab.team, []map[string]any{
		{"name": "bad-a", "after": []string{"bad-b"}, "command": []string{"true"}},
		{"name": "bad-b", "after": []string{"bad-a"}, "command": []string{"true"}},
	})
	var e struct{ Code, Field, Message string }
	if _ = json.Unmarshal(body, &e); status != 400 || e.Code != "InvalidSpec" || e.Field != "[0].after" ||
		!strings.Contains(e.Message, "cycle") {
		t.Errorf("POST a cycle: %d %s, want 400 InvalidSpec field [0].after", status, body)
	}
	if out := lab.must(t, lab.team, "job", "list", "-o", "json"); strings.Contains(out, "bad-") {
		t.Errorf("a refused pipeline left jobs behind:\n%s", out)
	}
}
