package sched_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// FuzzSession feeds a Session whatever a driver might report (allocations
// on nodes the fleet lacks or GPUs a node lacks, jobs that hold nothing,
// the same job twice, releases of jobs never held, unknown nodes' health,
// updates that move a job)
// and requires that it never panics outside a cycle, that Hold refuses
// only allocations naming a GPU the node lacks, and that each cycle decides
// as Schedule does on the work the Session accepted (both panicking counts
// as deciding alike). An odd first byte turns preemption for a better
// priority value on (PriorityGap 2), and jobs then get values of 0 to 3;
// a first byte with bit 1 set turns holds on (HoldAfter 10m).
func FuzzSession(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5})
	f.Add([]byte{0, 3, 9, 200, 0, 3, 9, 1, 4, 0, 1, 3, 5})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 3, 1, 9, 3, 40, 6, 3, 3, 7, 8})
	f.Add([]byte{2, 0, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 6, 200, 6, 200, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		w := randomWorld()
		gap, hold := 0, time.Duration(0)
		if len(ops) > 0 && ops[0]%2 == 1 {
			gap = 2
		}
		if len(ops) > 0 && ops[0]&2 != 0 {
			hold = 10 * time.Minute
		}
		s := sched.New(sched.Config{MinRunTime: 5 * time.Minute, PriorityGap: gap, HoldAfter: hold})
		ss := s.NewSession(&w.Fleet, &w.Tenancy)
		held := map[string]*model.Job{}
		var order []string // IDs ever held, each once
		listed := map[string]bool{}
		clock := Epoch
		names := []string{"h-a-1", "h-b-2", "t4-1", "a-3", "gone"}
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		for n := 0; len(ops) > 0 && n < 64; n++ {
			switch next() % 7 {
			case 0: // a job starts holding, with allocations as given
				idb := next()
				id := fmt.Sprintf("f%d", idb%8)
				b := w.Job(id, []string{"t1", "t3", "t5", "ghost"}[next()%4]).GPUs(1+int(next()%2), 1+int(next()%2))
				w.Jobs = w.Jobs[:len(w.Jobs)-1] // kept apart from the queue
				j := b.Job
				if idb&8 != 0 { // it may use held nodes, and yields (hold.go)
					j.Spec.Checkpoint.Interval = 30 * time.Minute
				}
				if gap > 0 {
					j.Spec.Priority.Value = int(next() % 4)
				}
				j.Status.State = []model.State{model.StateRunning, model.StatePreparing, model.StateQueued}[next()%3]
				j.Status.StartedAt = clock.Add(-time.Duration(next()) * time.Minute)
				for k := 0; k < j.Spec.Resources.InstanceCount; k++ {
					gpus := make([]int, j.Spec.Resources.GPUsPerInstance)
					for g := range gpus {
						gpus[g] = int(int8(next())) % 10
					}
					j.Status.Allocations = append(j.Status.Allocations,
						model.Allocation{Node: names[next()%byte(len(names))], GPUs: gpus, GPUMilli: model.MilliPerGPU})
				}
				err := ss.Hold(j)
				valid := true
				for _, a := range j.Status.Allocations {
					for _, g := range a.GPUs {
						if a.Node != "gone" && (g < 0 || g >= gpusOf(w, a.Node)) {
							valid = false
						}
					}
				}
				if wantErr := j.Status.State.Holds() && !valid; (err != nil) != wantErr {
					t.Fatalf("Hold(%s, %v) = %v", j.Status.State, j.Status.Allocations, err)
				}
				if !listed[id] {
					order, listed[id] = append(order, id), true
				}
				delete(held, id)
				if err == nil && j.Status.State.Holds() {
					held[id] = j
				}
			case 1:
				id := fmt.Sprintf("f%d", next()%8)
				ss.Release(id)
				delete(held, id)
			case 2:
				h := []model.Health{model.NodeReady, model.NodeNotReady, model.NodeDraining}[next()%3]
				name := names[next()%byte(len(names))]
				err := ss.SetHealth(name, h)
				for i := range w.Fleet.Nodes {
					if w.Fleet.Nodes[i].Name == name {
						w.Fleet.Nodes[i].Health = h
					}
				}
				if (err != nil) != (name == "gone") {
					t.Fatalf("SetHealth(%s) = %v", name, err)
				}
			case 3:
				clock = clock.Add(time.Duration(next()) * time.Minute)
			case 4: // a status change reported for a job held: a checkpoint, a requeue, a move
				id := fmt.Sprintf("f%d", next()%8)
				old := held[id]
				if old == nil {
					continue
				}
				c := copyJob(old)
				switch next() % 3 {
				case 0:
					c.Status.LastCheckpoint = clock
				case 1:
					c.Status.State, c.Status.Allocations = model.StateQueued, nil
				default:
					c.Status.Allocations[0].Node = names[next()%byte(len(names))]
					c.Status.Allocations[0].GPUs = []int{int(int8(next())) % 10}
				}
				err := ss.Update(c)
				delete(held, id)
				if err == nil && c.Status.State.Holds() {
					held[id] = c
				}
			default: // a cycle, with a few queued jobs
				var jobs, queued []*model.Job
				for _, id := range order {
					if j := held[id]; j != nil {
						jobs = append(jobs, j)
					}
				}
				for k := 0; k < int(next()%4); k++ {
					// Some bounded by a timeout: reservations "rh" and "rh3"
					// keep nodes ahead of their windows.
					q := w.Job(fmt.Sprintf("q%d-%d", n, k), "t1").GPUs(1, 1+int(next()%8)).
						Timeout(time.Duration(next()%4)*20*time.Minute, 0).Job
					if gap > 0 {
						q.Spec.Priority.Value = int(next() % 4)
					}
					w.Jobs = w.Jobs[:len(w.Jobs)-1]
					queued = append(queued, q)
				}
				want, wantPanic := planOrPanic(func() sched.Plan {
					return s.Schedule(&sched.Snapshot{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Jobs: append(jobs, queued...)}, clock)
				})
				got, gotPanic := planOrPanic(func() sched.Plan { return ss.Schedule(queued, clock) })
				if gotPanic != wantPanic {
					t.Fatalf("Session panicked: %v, Schedule panicked: %v", gotPanic, wantPanic)
				}
				if g, x := planJSON(t, got), planJSON(t, want); !wantPanic && !bytes.Equal(g, x) {
					t.Fatalf("the Session's Plan differs from Schedule's\nsession:  %s\nschedule: %s", g, x)
				}
			}
		}
	})
}

func planOrPanic(f func() sched.Plan) (p sched.Plan, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return f(), false
}

func gpusOf(w *World, node string) int {
	for _, n := range w.Fleet.Nodes {
		if n.Name == node {
			return w.Fleet.Catalog[n.SKU].GPUs
		}
	}
	return 0
}
