package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestGPUWorkEvictsCPUWork: CPU-only work that takes a GPU node's every
// vCPU (ND96: 96) keeps its 8 GPUs idle. Work that needs those GPUs evicts
// it (GPUWorkFirst), whatever its class; CPU-only work does not, and spot
// work evicts nothing.
func TestGPUWorkEvictsCPUWork(t *testing.T) {
	start := now.Add(-time.Hour) // past the protection of a fresh start
	for _, tc := range []struct {
		name  string
		add   func(w *World)
		evict bool
	}{
		{"standard GPU work evicts it", func(w *World) { w.Job("job", "bob").GPUs(1, 8).CPU(8000, 0) }, true},
		{"reserved GPU work evicts it", func(w *World) {
			w.Job("job", "bob").GPUs(1, 8).CPU(8000, 0).Class(model.ClassReserved)
		}, true},
		{"CPU-only work does not", func(w *World) { w.Job("job", "bob").GPUs(1, 0).CPU(8000, 0) }, false},
		{"spot GPU work does not", func(w *World) { w.Job("job", "bob").GPUs(1, 8).CPU(8000, 0).Class(model.ClassSpot) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := oneRegion(1)
			w.Job("miner", "alice").GPUs(1, 0).CPU(96000, 0).Running(start, model.Allocation{Node: "h-1"})
			tc.add(w)
			p := schedule(t, w)
			if !tc.evict {
				if len(p.Preemptions) != 0 {
					t.Fatalf("preemptions %+v, want none", p.Preemptions)
				}
				return
			}
			if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "miner" || p.Preemptions[0].Reason != sched.GPUWorkFirst {
				t.Fatalf("preemptions %+v, want miner for GPUWorkFirst", p.Preemptions)
			}
		})
	}
}

// TestCPUBlockedDetail: a job that cannot evict the CPU-only work holding
// a GPU node's CPU (spot) says that CPU, not GPUs, is what it lacks.
func TestCPUBlockedDetail(t *testing.T) {
	w := oneRegion(1)
	w.Job("miner", "alice").GPUs(1, 0).CPU(96000, 0).Running(now.Add(-time.Hour), model.Allocation{Node: "h-1"})
	w.Job("job", "bob").GPUs(1, 8).CPU(8000, 0).Class(model.ClassSpot)
	p := schedule(t, w)
	expect(t, p, "job", sched.InsufficientCapacity)
	if pd, _ := pendingOf(p, "job"); !strings.Contains(pd.Detail, "the GPUs are free but not the CPU or memory it asks") {
		t.Errorf("detail %q does not say the CPU blocks", pd.Detail)
	}
}
