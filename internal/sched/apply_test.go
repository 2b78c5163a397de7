package sched_test

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestApplyRecordsAttempts: Apply records each attempt as the server does,
// so that a preempted job waits from its eviction (sched.WaitingSince),
// not from its submission, and replaces the slice rather than writing
// into it, so a copy of a job taken before keeps its own attempts.
func TestApplyRecordsAttempts(t *testing.T) {
	w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 1, h100, "l1").Tenant("alice", "")
	w.Job("j", "alice").GPUs(1, 8).Submitted(Epoch)
	j := w.Jobs[0]
	start, evicted := Epoch.Add(time.Hour), Epoch.Add(3*time.Hour)
	bind := sched.Plan{Binds: []sched.Bind{{Job: "j", Nodes: []sched.Placement{{Node: "a-1", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, GPUMilli: 1000}}}}}
	if err := bind.Apply(w.Jobs, start); err != nil {
		t.Fatal(err)
	}
	if a := j.Status.Attempts; len(a) != 1 || a[0].Number != 1 || !a[0].Started.Equal(start) || !a[0].Ended.IsZero() ||
		len(a[0].Nodes) != 1 || a[0].Nodes[0] != "a-1" {
		t.Fatalf("after the bind: %+v", a)
	}
	before := *j
	preempt := sched.Plan{Preemptions: []sched.Preemption{{Job: "j", For: "k", Reason: sched.HigherClass, Detail: "k needs 8 GPUs"}}}
	if err := preempt.Apply(w.Jobs, evicted); err != nil {
		t.Fatal(err)
	}
	if a := j.Status.Attempts; len(a) != 1 || !a[0].Ended.Equal(evicted) || a[0].Reason != "Preempted" {
		t.Fatalf("after the preemption: %+v", a)
	}
	if got := sched.WaitingSince(j); !got.Equal(evicted) {
		t.Errorf("WaitingSince %s, want the eviction at %s", got, evicted)
	}
	if !before.Status.Attempts[0].Ended.IsZero() {
		t.Errorf("the copy taken before the preemption sees it: %+v", before.Status.Attempts)
	}
	if err := bind.Apply(w.Jobs, evicted.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if a := j.Status.Attempts; len(a) != 2 || a[1].Number != 2 || !a[0].Ended.Equal(evicted) {
		t.Fatalf("after the second bind: %+v", a)
	}
}
