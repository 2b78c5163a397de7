package model

import (
	"strings"
	"testing"
	"time"
)

func part(rank, attempt int, step, node string, at int) CheckpointPart {
	return CheckpointPart{Rank: rank, Attempt: attempt, Step: step, Path: "/ck/rank-" + string(rune('0'+rank)) + "/" + step, Node: node,
		At: time.Unix(int64(at), 0)}
}

// A save is the job's checkpoint only once every rank's part of it is in;
// a rank that runs ahead does not move the job's checkpoint.
func TestAddPartCompletesOnlyWhole(t *testing.T) {
	var s JobStatus
	if s.AddPart(part(0, 1, "step-10", "n0", 1), 3) || s.AddPart(part(1, 1, "step-10", "n1", 2), 3) {
		t.Fatal("a save of 2 of 3 ranks completed")
	}
	if s.CheckpointPath != "" {
		t.Fatalf("checkpoint %q before the save is whole", s.CheckpointPath)
	}
	// Rank 0 runs ahead to step 20 before rank 2 reports step 10.
	if s.AddPart(part(0, 1, "step-20", "n0", 3), 3) {
		t.Fatal("step 20 of one rank completed")
	}
	if !s.AddPart(part(2, 1, "step-10", "n2", 4), 3) {
		t.Fatal("step 10 of every rank did not complete")
	}
	if len(s.CheckpointParts) != 3 || s.CheckpointParts[2].Node != "n2" || s.CheckpointParts[0].Step != "step-10" {
		t.Fatalf("parts %+v", s.CheckpointParts)
	}
	if s.CheckpointPath != "/ck/rank-0/step-10" || s.CheckpointNode != "n0" || !s.LastCheckpoint.Equal(time.Unix(4, 0)) {
		t.Errorf("checkpoint %q on %q at %v, want rank 0's part of step 10 at the last part's time", s.CheckpointPath, s.CheckpointNode, s.LastCheckpoint)
	}
	// Rank 0's step 20 stays pending; the parts of step 10 are gone.
	if len(s.PartsPending) != 1 || s.PartsPending[0].Step != "step-20" {
		t.Errorf("pending %+v, want rank 0's step 20 alone", s.PartsPending)
	}
	// Parts of an earlier attempt never complete with this one's.
	if s.AddPart(part(1, 2, "step-20", "n1", 5), 3) || s.AddPart(part(2, 2, "step-20", "n2", 6), 3) {
		t.Error("a save completed with a part of another attempt")
	}
	if s.CheckpointParts[0].Step != "step-10" {
		t.Errorf("checkpoint moved to %s", s.CheckpointParts[0].Step)
	}
}

// A rank reports at most MaxPendingParts saves ahead of the others.
func TestAddPartBoundsPending(t *testing.T) {
	var s JobStatus
	for i := range 50 {
		s.AddPart(part(0, 1, "step-"+strings.Repeat("x", i), "n0", i), 2)
	}
	if len(s.PartsPending) != MaxPendingParts {
		t.Errorf("%d parts pending, want %d", len(s.PartsPending), MaxPendingParts)
	}
}

// Every rank resumes, or none: a part on a node's disk reaches only the
// rank placed there, and one rank that cannot reach its part starts every
// rank from the beginning.
func TestResumeOfAllOrNone(t *testing.T) {
	var s JobStatus
	for r, n := range []string{"n0", "n1", "n2"} {
		s.AddPart(part(r, 1, "step-10", n, r), 3)
	}
	rs, why := s.ResumeOf([]string{"n0", "n1", "n2"})
	if why != "" || len(rs) != 3 || rs[1].Path != "/ck/rank-1/step-10" || rs[1].Node != "n1" {
		t.Fatalf("on the parts' nodes: %+v, %q", rs, why)
	}
	rs, why = s.ResumeOf([]string{"n0", "n1", "n9"})
	if rs != nil || !strings.Contains(why, "rank 2's part of checkpoint step-10 is on node n2") || !strings.Contains(why, "every rank starts from the beginning") {
		t.Errorf("one rank moved: %+v, %q", rs, why)
	}
	if rs, why = s.ResumeOf([]string{"n0", "n1"}); rs != nil || !strings.Contains(why, "3 parts and this attempt 2 ranks") {
		t.Errorf("another world size: %+v, %q", rs, why)
	}
	// Parts every host reaches serve any placement.
	var shared JobStatus
	for r := range 2 {
		shared.AddPart(part(r, 1, "step-7", "", r), 2)
	}
	if rs, why = shared.ResumeOf([]string{"x", "y"}); why != "" || rs[1].Path != "/ck/rank-1/step-7" {
		t.Errorf("shared parts: %+v, %q", rs, why)
	}
	// One path on one node's disk serves a gang only when every rank runs there.
	var one JobStatus
	one.SetCheckpoint("/ck/step-3", "n0", time.Unix(1, 0))
	if rs, why = one.ResumeOf([]string{"n0", "n1"}); rs != nil || why == "" {
		t.Errorf("one path on n0 for ranks on n0 and n1: %+v, %q", rs, why)
	}
	if rs, why = one.ResumeOf([]string{"n0"}); why != "" || rs[0].Path != "/ck/step-3" {
		t.Errorf("one path on n0 for one rank there: %+v, %q", rs, why)
	}
	if rs, _ := (&JobStatus{}).ResumeOf([]string{"n0"}); rs != nil {
		t.Errorf("no checkpoint: %+v", rs)
	}
	if got := s.CheckpointNodes(); len(got) != 3 || got[2] != "n2" {
		t.Errorf("checkpoint nodes %v", got)
	}
	if got := shared.CheckpointNodes(); got != nil {
		t.Errorf("shared parts lie on no node: %v", got)
	}
}
