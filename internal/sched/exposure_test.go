package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestExposure checks what 'job why' says may preempt a running job
// against the core itself: for each case, a job of the class the answer
// names arrives and the core preempts the job, or, when the answer says
// nothing of that kind may, does not.
func TestExposure(t *testing.T) {
	h := time.Hour
	// Two H100 nodes (16 GPUs); partition p is guaranteed 8 in eastus.
	world := func() *World {
		return NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", 2, h100, "l1").
			Partition("p", "eastus", "H100", 8).Tenant("inside", "p").Tenant("q", "p").
			Partition("o", "eastus", "H100", 8).Tenant("other", "o").Tenant("free", "")
	}
	tests := []struct {
		name    string
		setup   func(w *World)
		want    []string       // words of Exposure.By, in order
		not     string         // words no entry may have
		evictor func(w *World) // work the core must preempt the job for (nil: none)
		spared  func(w *World) // work the core must not preempt it for (nil: none)
	}{{
		name: "spot: any higher class",
		setup: func(w *World) {
			w.Job("x", "inside").Class(model.ClassSpot).GPUs(1, 8).Running(Epoch.Add(-h), On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
		},
		want:    []string{"standard or reserved work of any tenant", "reclaiming what it is owed, protected or not"},
		evictor: func(w *World) { w.Job("new", "other").GPUs(2, 8) },
	}, {
		name: "within its partition's guarantee: only its own partition",
		setup: func(w *World) {
			w.Job("x", "inside").GPUs(1, 8).Running(Epoch.Add(-h), On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("o1", "other").GPUs(1, 8).Running(Epoch.Add(-h), On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
		},
		want:    []string{"reserved work of its own partition p only", "guarantee of 8 GPUs H100 in eastus"},
		not:     "reclaiming",
		spared:  func(w *World) { w.Job("new", "other").Class(model.ClassReserved).GPUs(1, 8).Models("H100") },
		evictor: func(w *World) { w.Job("new", "q").Class(model.ClassReserved).GPUs(1, 8) },
	}, {
		name: "borrowing: any tenant's higher class, and a reclaim",
		setup: func(w *World) {
			w.Job("x", "inside").GPUs(2, 8).Running(Epoch.Add(-h), On("h-1", 0, 1, 2, 3, 4, 5, 6, 7), On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
		},
		want:    []string{"reserved work of any tenant", "holds 16 GPUs of its 8 GPUs guaranteed", "reclaiming"},
		evictor: func(w *World) { w.Job("new", "other").GPUs(1, 8) },
	}, {
		name: "CPU-only work on a GPU node: GPU work first",
		setup: func(w *World) {
			w.Job("x", "inside").GPUs(1, 0).CPU(96000, 0).Running(Epoch.Add(-h), model.Allocation{Node: "h-1"})
		},
		want:    []string{"work that needs the GPUs of its nodes"},
		not:     "partition",
		evictor: func(w *World) { w.Job("new", "other").GPUs(2, 8).CPU(8000, 0) },
	}, {
		name: "protected for min_run_time",
		setup: func(w *World) {
			w.Job("x", "free").Class(model.ClassSpot).GPUs(1, 8).Running(Epoch.Add(-time.Minute), On("h-1", 0, 1, 2, 3, 4, 5, 6, 7))
			w.Job("o1", "other").GPUs(1, 8).Running(Epoch.Add(-h), On("h-2", 0, 1, 2, 3, 4, 5, 6, 7))
		},
		want: []string{"standard or reserved work of any tenant", "reclaiming what it is owed, protected or not"},
		// p is owed its 8 GPUs and takes them back at once; o holds its
		// guarantee, so its reserved work waits for the protection.
		evictor: func(w *World) { w.Job("new", "inside").GPUs(1, 8).Models("H100") },
		spared:  func(w *World) { w.Job("new", "other").Class(model.ClassReserved).GPUs(1, 8).Models("H100") },
	}}
	cfg := sched.Config{MinRunTime: 10 * time.Minute}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := world()
			tc.setup(w)
			e, ok := sched.New(cfg).Exposure(w.Snapshot(), Epoch, "x")
			if !ok {
				t.Fatal("x holds nothing")
			}
			all := strings.Join(e.By, " | ")
			for _, want := range tc.want {
				if !strings.Contains(all, want) {
					t.Errorf("exposure %q lacks %q", all, want)
				}
			}
			if tc.not != "" && strings.Contains(all, tc.not) {
				t.Errorf("exposure %q says %q", all, tc.not)
			}
			started := w.Snapshot().Jobs[0].Status.StartedAt
			if wantUntil := started.Add(10 * time.Minute); wantUntil.After(Epoch) != !e.ProtectedUntil.IsZero() ||
				(!e.ProtectedUntil.IsZero() && !e.ProtectedUntil.Equal(wantUntil)) {
				t.Errorf("protected until %v, want %v if after now", e.ProtectedUntil, wantUntil)
			}
			for _, c := range []struct {
				add     func(*World)
				preempt bool
			}{{tc.evictor, true}, {tc.spared, false}} {
				if c.add == nil {
					continue
				}
				w := world()
				tc.setup(w)
				c.add(w)
				p := sched.New(cfg).Schedule(w.Snapshot(), Epoch)
				got := false
				for _, pr := range p.Preemptions {
					got = got || pr.Job == "x"
				}
				if got != c.preempt {
					t.Errorf("the core preempts x: %v, want %v (exposure %q; plan %+v)", got, c.preempt, all, p)
				}
			}
		})
	}
	if _, ok := sched.New(cfg).Exposure(world().Snapshot(), Epoch, "x"); ok {
		t.Error("a job that holds nothing has an exposure")
	}
}
