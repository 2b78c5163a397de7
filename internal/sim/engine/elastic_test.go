package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// resizeLog is a log that also records resizes and the GPUs held.
type resizeLog struct {
	log
	resized []sched.Resize
	held    float64 // GPU-seconds, from the allocations
}

func (l *resizeLog) Resized(_ *model.Job, r sched.Resize, _ time.Time) {
	l.resized = append(l.resized, r)
}

func (l *resizeLog) Advance(from, to time.Time) {
	for _, j := range l.eng.Holding() {
		for _, a := range j.Status.Allocations {
			l.held += to.Sub(from).Seconds() * float64(len(a.GPUs))
		}
	}
}

func TestScaling(t *testing.T) {
	for _, tc := range []struct {
		eff     float64
		n, base int
		want    float64
	}{
		{0.9, 4, 4, 1},
		{0.9, 2, 1, 1.8},
		{0.9, 8, 4, 1.8},
		{0.9, 4, 1, 4 * 0.81},
		{0.9, 3, 2, 1.5 * math.Pow(0.9, math.Log2(1.5))},
		{1, 6, 2, 3},
		{0.8, 2, 1, 1.6},
		{0.9, 0, 1, 1},
	} {
		if got := engine.Scaling(tc.eff, tc.n, tc.base); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Scaling(%g, %d, %d) = %g, want %g", tc.eff, tc.n, tc.base, got, tc.want)
		}
	}
}

// An elastic job of one to two 8-GPU instances (2 h of work at its base
// size, a checkpoint every 20 minutes) runs alone on n-1 while a filler
// holds n-2. At 50 minutes the filler stops and a Plan grows the job onto
// n-2: the attempt started at 0 kept the work of its checkpoint at 40
// minutes and loses the 10 after it; the next runs Scaling times as fast.
// At 80 minutes a Plan shrinks it back (for a job that takes n-2): the
// grown attempt checkpointed at 70 minutes, 20 minutes at its speed kept;
// the rest of the work runs at the base speed.
func TestResizeRestartsFromCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		eff   float64 // Config.ScalingEfficiency
		speed float64 // at two instances
		ckpts engine.Checkpoints
	}{
		{"default efficiency", 0, 1.8, engine.CheckpointsShared},
		{"efficiency 0.8", 0.8, 1.6, engine.CheckpointsShared},
		{"linear", 1, 2, engine.CheckpointsShared},
		{"local checkpoints", 0, 1.8, engine.CheckpointsLocal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 2, "ND96-H100x8-IB", "l1")
			w.Partition("p", "r", "H100", 16).Tenant("owner", "p")
			l := &resizeLog{}
			e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true,
				Recorder: l, ScalingEfficiency: tc.eff, Checkpoints: tc.ckpts})
			l.eng = e
			el := job("el", "owner", 8, 20*time.Minute)
			el.Spec.Elastic = &model.Elastic{MinInstances: 1, MaxInstances: 2}
			if err := el.Spec.Validate(); err != nil {
				t.Fatal(err)
			}
			submit := func(j *model.Job, work time.Duration) {
				if err := e.Submit(j, work); err != nil {
					t.Fatal(err)
				}
			}
			submit(el, 2*time.Hour)
			submit(job("filler", "owner", 8, 0), engine.Forever)
			all := func(node string) sched.Placement {
				return sched.Placement{Node: node, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, GPUMilli: model.MilliPerGPU}
			}
			seen := map[time.Duration]time.Duration{}
			look := func(d time.Duration) {
				e.At(schedtest.Epoch.Add(d), func(time.Time) {
					done, _, ok := e.Progress("el")
					if !ok {
						t.Errorf("no progress at %s", d)
					}
					seen[d] = done
				})
			}
			look(45 * time.Minute)
			e.At(schedtest.Epoch.Add(50*time.Minute), func(time.Time) {
				if j, _ := e.Job("el"); j.Status.Allocations[0].Node != "n-1" {
					t.Fatalf("el runs on %s, want n-1", j.Status.Allocations[0].Node)
				}
				e.Stop("filler")
				grow := sched.Resize{Job: "el", From: 1, To: 2, Nodes: []sched.Placement{all("n-1"), all("n-2")},
					Reason: sched.IdleCapacity, LostGPUSeconds: 8 * 600}
				if err := e.Commit(sched.Plan{Resizes: []sched.Resize{grow}}); err != nil {
					t.Fatal(err)
				}
			})
			look(50 * time.Minute)
			look(60 * time.Minute)
			e.At(schedtest.Epoch.Add(80*time.Minute), func(time.Time) {
				shrink := sched.Resize{Job: "el", From: 2, To: 1, Nodes: []sched.Placement{all("n-1")}, For: "other",
					Reason: sched.HigherClass, LostGPUSeconds: 16 * 600}
				if err := e.Commit(sched.Plan{Resizes: []sched.Resize{shrink}}); err != nil {
					t.Fatal(err)
				}
				submit(job("other", "owner", 8, 0), engine.Forever) // takes n-2, so the job does not grow again
			})
			look(80 * time.Minute)
			look(90 * time.Minute)
			if err := e.Run(schedtest.Epoch.Add(10 * time.Hour)); err != nil {
				t.Fatal(err)
			}
			min := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
			kept := 40 + 20*tc.speed // minutes of work at the shrink
			for d, want := range map[time.Duration]time.Duration{
				45 * time.Minute: 45 * time.Minute,      // one instance, at 1
				50 * time.Minute: 40 * time.Minute,      // grown: back to the checkpoint at 40
				60 * time.Minute: min(40 + 10*tc.speed), // two instances
				80 * time.Minute: min(kept),             // shrunk: back to the checkpoint at 70
				90 * time.Minute: min(kept + 10),        // one instance again
			} {
				if got := seen[d]; (got - want).Abs() > time.Microsecond {
					t.Errorf("progress at %s = %s, want %s", d, got, want)
				}
			}
			ends := 80*time.Minute + min(120-kept)
			if got := l.endedAt["el"].Sub(schedtest.Epoch); (got - ends).Abs() > time.Microsecond {
				t.Errorf("el ended after %s, want %s", got, ends)
			}
			if len(l.resized) != 2 || !l.resized[0].Grows() || l.resized[1].Grows() {
				t.Errorf("resizes heard %+v, want a growth then a shrink", l.resized)
			}
			if el.Status.Resizes != 2 || len(el.Status.Attempts) != 3 {
				t.Errorf("el: %d resizes, %d attempts; want 2 and 3", el.Status.Resizes, len(el.Status.Attempts))
			}
			// GPUs held: the job 8, 16 from 50 to 80 minutes, 8 after; the
			// filler 8 until 50, the other job 8 from 80 to the end.
			want := (8*50 + 16*30 + 8*ends.Minutes() - 8*80 + 8*50 + 8*(600-80)) * 60
			if math.Abs(l.held-want) > 1e-3 {
				t.Errorf("GPU-seconds held %g, want %g", l.held, want)
			}
		})
	}
}

// The core grows an elastic job alone on two nodes once its resize
// interval has run, with nothing else happening: the engine wakes for it.
// The growth at 10 minutes loses the attempt's work (no checkpoint yet,
// 10 minutes × 8 GPUs, as the core counts it); the 2 h of work then run
// at 1.8 times the speed.
func TestCoreGrowsAnIdleElasticJob(t *testing.T) {
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 2, "ND96-H100x8-IB", "l1")
	w.Partition("p", "r", "H100", 16).Tenant("owner", "p")
	l := &resizeLog{}
	e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true,
		Recorder: l, Core: sched.Config{ResizeInterval: 10 * time.Minute}})
	l.eng = e
	el := job("el", "owner", 8, 20*time.Minute)
	el.Spec.Elastic = &model.Elastic{MinInstances: 1, MaxInstances: 2}
	if err := e.Submit(el, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(schedtest.Epoch.Add(10 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if len(l.resized) != 1 || !l.resized[0].Grows() || l.resized[0].LostGPUSeconds != 8*600 {
		t.Fatalf("resizes %+v, want one growth losing 4800 GPU-seconds", l.resized)
	}
	ends := 10*time.Minute + time.Duration(math.Ceil(float64(2*time.Hour)/1.8))
	if got := l.endedAt["el"].Sub(schedtest.Epoch); got != ends {
		t.Errorf("el ended after %s, want %s", got, ends)
	}
}
