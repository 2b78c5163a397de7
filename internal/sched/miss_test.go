package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// The core answers a job from the verdict of an earlier job of its shape
// that asked other CPU and memory only where those could not have made a
// difference. These worlds are ones where they do: a shared verdict would
// leave the second job pending.

// An ND96 node has 96 vCPUs. hog holds one GPU and 94 of them; x asks 4
// vCPUs, which no node has, though its GPUs are free; y asks one, which
// fits. x's failure was the CPU's, so y may not share it.
func TestCPUBoundFailureIsNotSharedWithASmallerJob(t *testing.T) {
	w := oneNode()
	w.Job("hog", "bob").GPUs(1, 1).CPU(94_000, 0).Running(Epoch, On("h-1", 0))
	w.Job("x", "alice").GPUs(1, 1).CPU(4_000, 0).Submitted(now.Add(-2 * time.Minute))
	w.Job("y", "alice").GPUs(1, 1).CPU(1_000, 0).Submitted(now.Add(-time.Minute))
	p := schedule(t, w)
	expect(t, p, "x", sched.InsufficientCapacity)
	if pd, _ := pendingOf(p, "x"); !strings.Contains(pd.Detail, "the GPUs are free but not the CPU or memory it asks (1×any GPU, 4000 mCPU per instance)") {
		t.Errorf("x: detail %q does not say the CPU blocks it", pd.Detail)
	}
	expect(t, p, "y", sched.ReasonNone)
}

// No GPU is free, so x and y fail to be placed alike (y may share x's
// verdict for that). Evicting spot work frees GPUs and 1 vCPU: with the
// 2 vCPUs already free that is 3, too few for x's 4 but enough for y's 2.
// So x's failed preemption may not answer y's.
func TestFailedPreemptionIsNotSharedWithASmallerJob(t *testing.T) {
	w := oneNode()
	w.Job("hog", "bob").GPUs(1, 1).CPU(93_000, 0).Running(Epoch, On("h-1", 0))
	w.Job("s", "bob").GPUs(1, 7).CPU(1_000, 0).Class(model.ClassSpot).Running(Epoch, On("h-1", 1, 2, 3, 4, 5, 6, 7))
	w.Job("x", "alice").GPUs(1, 1).CPU(4_000, 0).Submitted(now.Add(-3 * time.Minute))
	w.Job("y", "alice").GPUs(1, 1).CPU(2_000, 0).Submitted(now.Add(-2 * time.Minute))
	w.Job("z", "alice").GPUs(1, 1).CPU(5_000, 0).Submitted(now.Add(-time.Minute))
	p := schedule(t, w)
	expect(t, p, "x", sched.InsufficientCapacity)
	expect(t, p, "y", sched.ReasonNone)
	if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "s" || p.Preemptions[0].For != "y" {
		t.Errorf("preemptions %+v, want s for y", p.Preemptions)
	}
	expect(t, p, "z", sched.InsufficientCapacity)
}

// Every H100 is busy; the T4 nodes (64 vCPUs) are idle. x asks 80 vCPUs,
// which only an ND96 H100 node has, so it finds no node; y asks 8, which
// a T4 node has. Jobs share a verdict only where their CPU and memory fit
// the same SKUs.
func TestVerdictIsNotSharedAcrossTheSKUsAJobFits(t *testing.T) {
	w := twoLeaves()
	for _, n := range []string{"h-l1-1", "h-l1-2", "h-l2-1", "h-l2-2"} {
		w.Job("busy-"+n, "bob").GPUs(1, 8).Running(Epoch, On(n, 0, 1, 2, 3, 4, 5, 6, 7))
	}
	w.Job("x", "alice").GPUs(1, 1).CPU(80_000, 0).Submitted(now.Add(-2 * time.Minute))
	w.Job("y", "alice").GPUs(1, 1).CPU(8_000, 0).Submitted(now.Add(-time.Minute))
	p := schedule(t, w)
	expect(t, p, "x", sched.InsufficientCapacity)
	expect(t, p, "y", sched.ReasonNone)
}
