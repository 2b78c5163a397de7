package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// A checkpoint an agent reports is recorded with its node; only that node's
// token may say so, and a tenant or the administrator may name only a node
// of the current attempt. The job's next attempt goes back to that node,
// over an idle node the scorer would pick first, and its assignment names
// the node; meanwhile the node keeps the job's files, and gives them up
// once the job ended.
func TestCheckpointStaysWithItsNode(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	submit := func(doc string) *model.Job {
		t.Helper()
		specs, err := spec.ParseJobs("test", []byte(doc), nil)
		must(err)
		j, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
		must(err)
		must(srv.Cycle(ctx))
		return wholeJob(t, srv, j.ID)
	}
	report := func(node, id string, n int, e Event) {
		t.Helper()
		e.Node = node
		_, err := srv.ReportEvent(ctx, Principal{Node: node}, id, n, e)
		must(err)
	}
	// b fills h100-01, so a starts on h100-02; b ends, and h100-01 is the
	// idle node of the lowest rank again.
	b := submit(`{name: b, tenant: team, command: [x], resources: {gpus_per_instance: 8}}`)
	a := submit(`{name: a, tenant: team, command: [x], resources: {gpus_per_instance: 8}, retry: {max_retries: 1}}`)
	if got := []string{b.Status.Allocations[0].Node, a.Status.Allocations[0].Node}; !slices.Equal(got, []string{"h100-01", "h100-02"}) {
		t.Fatalf("b and a on %v, want h100-01 and h100-02", got)
	}
	report("h100-01", b.ID, 1, Event{Type: EventStarted})
	report("h100-01", b.ID, 1, Event{Type: EventExited})
	report("h100-02", a.ID, 1, Event{Type: EventStarted})

	const path = "/work/jobs/a/checkpoints/step-60"
	if _, err := srv.ReportCheckpoint(ctx, Principal{Node: "h100-01"}, a.ID, CheckpointReport{Path: path, Node: ""}); !isCode(err, CodeForbidden) {
		t.Errorf("a node the job does not run on reported its checkpoint: %v, want Forbidden", err)
	}
	if _, err := srv.ReportCheckpoint(ctx, Principal{Node: "h100-02"}, a.ID, CheckpointReport{Path: path, Node: "h100-03"}); !isCode(err, CodeForbidden) {
		t.Errorf("h100-02's token reported a checkpoint on h100-03: %v, want Forbidden", err)
	}
	if _, err := srv.ReportCheckpoint(ctx, Principal{Tenant: "team"}, a.ID, CheckpointReport{Path: path, Node: "h100-03"}); !isInvalid(err, "node") {
		t.Errorf("the tenant named a node a does not run on: %v, want InvalidSpec on node", err)
	}
	j, err := srv.ReportCheckpoint(ctx, Principal{Node: "h100-02"}, a.ID, CheckpointReport{Path: path, Node: ""})
	must(err)
	if j.Status.CheckpointPath != path || j.Status.CheckpointNode != "h100-02" {
		t.Fatalf("checkpoint %q on %q, want %q on h100-02", j.Status.CheckpointPath, j.Status.CheckpointNode, path)
	}
	keep, err := srv.JobFilesToKeep("h100-02", []string{a.ID, b.ID, "no-such-job"})
	must(err)
	if !slices.Equal(keep, []string{a.ID}) {
		t.Errorf("h100-02 keeps the files of %v, want a's", keep)
	}

	// a fails and is retried: back on h100-02, where its checkpoint is.
	report("h100-02", a.ID, 1, Event{Type: EventExited, ExitCode: 1})
	if j := wholeJob(t, srv, a.ID); j.Status.State != model.StateQueued || j.Status.CheckpointNode != "h100-02" {
		t.Fatalf("after the failure: %s with its checkpoint on %q, want Queued with it on h100-02", j.Status.State, j.Status.CheckpointNode)
	}
	for _, n := range []string{"h100-01", "h100-02"} {
		keep, err := srv.JobFilesToKeep(n, []string{a.ID, b.ID})
		must(err)
		if want := []string{a.ID}; n == "h100-01" {
			want = []string{}
			if !slices.Equal(keep, want) {
				t.Errorf("%s keeps %v, want none (b ended, a never ran there)", n, keep)
			}
		} else if !slices.Equal(keep, want) {
			t.Errorf("%s keeps %v while a is queued, want a's", n, keep)
		}
	}
	clock.Advance(DefaultRetryBackoff)
	must(srv.Cycle(ctx))
	a = wholeJob(t, srv, a.ID)
	if len(a.Status.Allocations) != 1 || a.Status.Allocations[0].Node != "h100-02" {
		t.Fatalf("retried a on %+v, want h100-02, where its checkpoint is", a.Status.Allocations)
	}
	as, err := srv.NodeAssignments(ctx, "h100-02", 0, 0)
	must(err)
	if len(as.Run) != 1 || as.Run[0].ResumeFrom != path || as.Run[0].ResumeNode != "h100-02" {
		t.Errorf("assignment %+v, want a resuming from %s on h100-02", as.Run, path)
	}
	report("h100-02", a.ID, 2, Event{Type: EventStarted})
	report("h100-02", a.ID, 2, Event{Type: EventExited})
	keep, err = srv.JobFilesToKeep("h100-02", []string{a.ID})
	must(err)
	if len(keep) != 0 {
		t.Errorf("h100-02 keeps %v after a succeeded, want none", keep)
	}
	if _, err := srv.JobFilesToKeep("h100-99", nil); !isCode(err, CodeNotFound) {
		t.Errorf("an unknown node: %v, want NotFound", err)
	}
}

// isInvalid reports whether err refuses field as InvalidSpec.
func isInvalid(err error, field string) bool {
	var se *Error
	return errors.As(err, &se) && se.Code == CodeInvalidSpec && se.Field == field
}

// A gang's ranks each report their part of a save; the save is the job's
// checkpoint once every rank's part is in. The next attempt puts each rank
// back on the node of its part and resumes every rank from its own part;
// when one rank cannot have its node, no rank resumes, and each
// assignment says why.
func TestGangCheckpointResumesWhole(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	specs, err := spec.ParseJobs("test", []byte(`{name: g, tenant: team, command: [x], resources: {instance_count: 2, gpus_per_instance: 8}, retry: {max_retries: 2}}`), nil)
	must(err)
	g, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	must(err)
	must(srv.Cycle(ctx))
	nodes := wholeJob(t, srv, g.ID).Status.Attempts[0].Nodes
	for r, n := range nodes {
		_, err := srv.ReportEvent(ctx, Principal{Node: n}, g.ID, 1, Event{Type: EventStarted, Rank: r, Node: n})
		must(err)
	}
	rank := func(r int) *int { return &r }
	partOf := func(attempt, r int, step string) CheckpointReport {
		return CheckpointReport{Path: fmt.Sprintf("/work/jobs/g/checkpoints/rank-%d/%s", r, step), Rank: rank(r), Step: step}
	}
	if _, err := srv.ReportCheckpoint(ctx, Principal{Node: nodes[0]}, g.ID, partOf(1, 1, "step-10")); !isCode(err, CodeForbidden) {
		t.Errorf("rank 0's node reported rank 1's part: %v, want Forbidden", err)
	}
	if _, err := srv.ReportCheckpoint(ctx, Principal{Tenant: "team"}, g.ID, partOf(1, 2, "step-10")); !isInvalid(err, "rank") {
		t.Errorf("a rank the gang lacks: %v, want InvalidSpec on rank", err)
	}
	j, err := srv.ReportCheckpoint(ctx, Principal{Node: nodes[0]}, g.ID, partOf(1, 0, "step-10"))
	must(err)
	if j.Status.CheckpointPath != "" {
		t.Fatalf("one rank's part made the checkpoint %q", j.Status.CheckpointPath)
	}
	j, err = srv.ReportCheckpoint(ctx, Principal{Node: nodes[1]}, g.ID, partOf(1, 1, "step-10"))
	must(err)
	if len(j.Status.CheckpointParts) != 2 || j.Status.CheckpointParts[1].Node != nodes[1] {
		t.Fatalf("after every rank's part: %+v", j.Status.CheckpointParts)
	}
	// The parts survive a restart of the server (the job record).
	if back, err := decodeJob(encodeJob(j)); err != nil || !slices.Equal(back.Status.CheckpointParts, j.Status.CheckpointParts) {
		t.Fatalf("parts after a round trip through the record: %+v, %v", back.Status.CheckpointParts, err)
	}

	// fail fails attempt n, rank 1 first (the node an attempt failed on
	// is its first failed rank's, which the next attempts avoid).
	fail := func(n int, nodes []string, whileQueued func()) {
		t.Helper()
		for _, r := range []int{1, 0} {
			_, err := srv.ReportEvent(ctx, Principal{Node: nodes[r]}, g.ID, n, Event{Type: EventExited, ExitCode: 1, Rank: r, Node: nodes[r]})
			must(err)
		}
		if whileQueued != nil {
			whileQueued()
		}
		clock.Advance(DefaultRetryBackoff + time.Minute)
		must(srv.Cycle(ctx))
	}
	why := func(want ...string) {
		t.Helper()
		w, err := srv.Explain(ctx, Principal{Tenant: "team"}, g.ID)
		must(err)
		for _, s := range want {
			if !strings.Contains(w.Checkpoint, s) {
				t.Errorf("job why says %q, want %q in it", w.Checkpoint, s)
			}
		}
	}
	fail(1, nodes, func() {
		why("step-10, 2 parts on " + nodes[0] + ", " + nodes[1] + ", which may take it now: every rank resumes there")
	})
	again := wholeJob(t, srv, g.ID).Status.Attempts[1].Nodes
	if !slices.Equal(again, nodes) {
		t.Fatalf("attempt 2 on %v, want each rank on the node of its part %v", again, nodes)
	}
	for r, n := range again {
		as, err := srv.NodeAssignments(ctx, n, 0, 0)
		must(err)
		want := fmt.Sprintf("/work/jobs/g/checkpoints/rank-%d/step-10", r)
		if len(as.Run) != 1 || as.Run[0].ResumeFrom != want || as.Run[0].ResumeNode != n || as.Run[0].NoResume != "" {
			t.Errorf("rank %d's assignment %+v, want it resuming from %s on %s", r, as.Run, want, n)
		}
	}

	// Rank 1's node is drained: the gang runs elsewhere, and no rank
	// resumes (rank 0 could; a mix is never started).
	_, err = srv.DrainNode(ctx, Principal{Admin: true}, nodes[1], "maintenance")
	must(err)
	for r, n := range again {
		_, err := srv.ReportEvent(ctx, Principal{Node: n}, g.ID, 2, Event{Type: EventStarted, Rank: r, Node: n})
		must(err)
	}
	fail(2, again, func() {
		why(nodes[1]+" (rank 1's part) is Draining", "placed elsewhere, every rank starts from the beginning")
	})
	third := wholeJob(t, srv, g.ID).Status.Attempts[2].Nodes
	if third[0] != nodes[0] || slices.Contains(third, nodes[1]) {
		t.Fatalf("attempt 3 on %v, want rank 0 on %s and none on the drained %s", third, nodes[0], nodes[1])
	}
	for _, n := range third {
		as, err := srv.NodeAssignments(ctx, n, 0, 0)
		must(err)
		if len(as.Run) != 1 || as.Run[0].ResumeFrom != "" || !strings.Contains(as.Run[0].NoResume, "rank 1's part of checkpoint step-10 is on node "+nodes[1]) {
			t.Errorf("assignment on %s: %+v, want no resume and why", n, as.Run)
		}
	}
}

// A checkpoint every host reaches (the agents' shared checkpoint root, or
// a URL) is recorded without a node, though a node token reports it: the
// next attempt resumes from it wherever it runs.
func TestSharedCheckpointHasNoNode(t *testing.T) {
	ctx := context.Background()
	srv, _, must := labWithNodes(t)
	specs, err := spec.ParseJobs("test", []byte(`{name: a, tenant: team, command: [x], resources: {gpus_per_instance: 8}}`), nil)
	must(err)
	a, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	must(err)
	must(srv.Cycle(ctx))
	node := wholeJob(t, srv, a.ID).Status.Allocations[0].Node
	for _, c := range []CheckpointReport{{Path: "/mnt/ckpt/ja/step-1", Shared: true}, {Path: "s3://bucket/a/step-2"}} {
		j, err := srv.ReportCheckpoint(ctx, Principal{Node: node}, a.ID, c)
		must(err)
		if j.Status.CheckpointPath != c.Path || j.Status.CheckpointNode != "" {
			t.Errorf("%+v recorded as %q on %q, want it without a node", c, j.Status.CheckpointPath, j.Status.CheckpointNode)
		}
		if rs, why := j.Status.ResumeOf([]string{"elsewhere"}); why != "" || rs[0].Path != c.Path {
			t.Errorf("%+v: an attempt elsewhere resumes from %+v (%q)", c, rs, why)
		}
	}
	other := "h100-01"
	if other == node {
		other = "h100-02"
	}
	if _, err := srv.ReportCheckpoint(ctx, Principal{Node: other}, a.ID, CheckpointReport{Path: "/mnt/ckpt/ja/step-3", Shared: true}); !isCode(err, CodeForbidden) {
		t.Errorf("a node the job does not run on reported a shared checkpoint: %v, want Forbidden", err)
	}
}
