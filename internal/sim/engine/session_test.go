package engine_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// busyWorld is twelve 8-GPU nodes on two leaf groups, two partitions
// guaranteed part of them, a guest without one and a reservation.
func busyWorld() *schedtest.World {
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).
		Nodes("a", 6, "ND96-H100x8-IB", "l1").Nodes("b", 6, "ND96-H100x8-IB", "l2")
	w.Partition("p1", "r", "H100", 32).Partition("p2", "r", "H100", 24).BorrowLimit(16)
	w.Tenant("t1", "p1").Tenant("t2", "p2").Tenant("guest", "")
	w.Reserve("res", "t1", "ND96-H100x8-IB", "r", 2, schedtest.Epoch.Add(2*time.Hour), schedtest.Epoch.Add(20*time.Hour))
	return w
}

// TestIncrementalPlansMatchFromScratch drives random work through the
// engine, with CheckIncremental on: every cycle's Plan on the engine's
// Session must be the from-scratch Plan. The work arrives, completes, is
// stopped and preempted, checkpoints at several intervals, runs on nodes
// that go NotReady and back, and goes through an Input that copies jobs
// to change their priority and, now and then, changes the tenancy.
func TestIncrementalPlansMatchFromScratch(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			w := busyWorld()
			tight := w.Tenancy // p1 guaranteed less, at random moments
			tight.Partitions = append([]model.Partition(nil), w.Tenancy.Partitions...)
			tight.Partitions[0].Guarantees = []model.Guarantee{{Region: "r", GPUModel: "H100", GPUs: 8}}
			var e *engine.Engine
			input := func(s *sched.Snapshot, now time.Time) *sched.Snapshot {
				out := *s
				ten := *s.Tenancy // a new tenancy every cycle, as a strategy derives
				if now.Minute()%7 == 0 {
					ten = tight
				}
				out.Tenancy = &ten
				out.Jobs = make([]*model.Job, len(s.Jobs))
				for i, j := range s.Jobs {
					out.Jobs[i] = j
					if j.Spec.Tenant == "guest" && now.Hour()%3 == 0 { // a policy promotes the guest
						cp := *j
						cp.Spec.Priority = model.Priority{Class: model.ClassStandard, Value: 5}
						out.Jobs[i] = &cp
					}
				}
				return &out
			}
			e = engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch,
				Core: sched.Config{MinRunTime: 10 * time.Minute}, Input: input, CheckIncremental: true})
			tenants := []string{"t1", "t2", "guest"}
			classes := []model.Class{model.ClassSpot, model.ClassStandard, model.ClassReserved}
			var ids []string
			for i := 0; i < 600; i++ {
				at := schedtest.Epoch.Add(time.Duration(i) * 3 * time.Minute)
				id := fmt.Sprintf("j%04d", i)
				e.At(at, func(time.Time) {
					j := job(id, tenants[rng.IntN(len(tenants))], []int{1, 2, 4, 8}[rng.IntN(4)],
						[]time.Duration{0, 5 * time.Minute, 20 * time.Minute}[rng.IntN(3)])
					j.Spec.Priority.Class = classes[rng.IntN(len(classes))]
					if rng.IntN(6) == 0 {
						j.Spec.Resources = model.Resources{InstanceCount: 2 + rng.IntN(2), GPUsPerInstance: 8}
					}
					work := time.Duration(5+rng.IntN(240)) * time.Minute
					if rng.IntN(10) == 0 {
						work = engine.Forever
					}
					if err := e.Submit(j, work); err != nil {
						t.Error(err)
					}
					ids = append(ids, id)
					switch rng.IntN(8) {
					case 0: // stop some live job
						e.Stop(ids[rng.IntN(len(ids))])
					case 1: // a node fails or comes back
						n := w.Fleet.Nodes[rng.IntN(len(w.Fleet.Nodes))].Name
						h := model.NodeNotReady
						if rng.IntN(2) == 0 {
							h = model.NodeReady
						}
						if err := e.SetHealth(n, h); err != nil {
							t.Error(err)
						}
					}
				})
			}
			err := e.Run(schedtest.Epoch.Add(40 * time.Hour))
			if errors.Is(err, engine.ErrIncremental) {
				t.Fatal(err)
			} else if err != nil {
				t.Fatalf("run: %v", err)
			}
			if e.Cycles() < 500 {
				t.Errorf("only %d cycles", e.Cycles())
			}
		})
	}
}
