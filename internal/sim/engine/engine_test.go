package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// log records what a run did, as a Recorder.
type log struct {
	started, ended []string
	preempted      []sched.Preemption
	gpuSeconds     float64
	endedAt        map[string]time.Time
	eng            *engine.Engine
}

func (l *log) Advance(from, to time.Time) {
	for _, j := range l.eng.Holding() {
		l.gpuSeconds += to.Sub(from).Seconds() * float64(j.Spec.Resources.InstanceCount*j.Spec.Resources.GPUsPerInstance)
	}
}
func (l *log) Started(j *model.Job, _ time.Time) { l.started = append(l.started, j.ID) }
func (l *log) Preempted(_ *model.Job, p sched.Preemption, _ time.Time) {
	l.preempted = append(l.preempted, p)
}
func (l *log) Ended(j *model.Job, now time.Time) {
	l.ended = append(l.ended, j.ID)
	if l.endedAt == nil {
		l.endedAt = map[string]time.Time{}
	}
	l.endedAt[j.ID] = now
}

// oneNode is a world of one 8-GPU node and two tenants, "owner"
// guaranteed all of it.
func oneNode() *schedtest.World {
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 1, "ND96-H100x8-IB", "l1")
	w.Partition("p", "r", "H100", 8).Tenant("owner", "p").Tenant("guest", "")
	return w
}

func job(id, tenant string, gpus int, checkpoint time.Duration) *model.Job {
	return &model.Job{ID: id, Spec: model.JobSpec{Name: id, Tenant: tenant,
		Resources:  model.Resources{InstanceCount: 1, GPUsPerInstance: gpus},
		Priority:   model.Priority{Class: model.ClassStandard},
		Checkpoint: model.Checkpoint{Interval: checkpoint}}}
}

func TestJobsRunTheirWorkInTurn(t *testing.T) {
	w := oneNode()
	l := &log{}
	e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true, Recorder: l})
	l.eng = e
	for _, id := range []string{"a", "b"} {
		if err := e.Submit(job(id, "owner", 8, 0), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Submit(job("a", "owner", 1, 0), time.Hour); err == nil {
		t.Error("a second job a was accepted")
	}
	if err := e.Run(schedtest.Epoch.Add(5 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := l.endedAt["a"].Sub(schedtest.Epoch); got != time.Hour {
		t.Errorf("a ended after %s, want 1h", got)
	}
	if got := l.endedAt["b"].Sub(schedtest.Epoch); got != 2*time.Hour {
		t.Errorf("b ended after %s, want 2h (it waits for a)", got)
	}
	if l.gpuSeconds != 2*8*3600 {
		t.Errorf("GPU-seconds held = %g, want %d", l.gpuSeconds, 2*8*3600)
	}
	if len(e.Jobs()) != 0 || !e.Now().Equal(schedtest.Epoch.Add(5*time.Hour)) {
		t.Errorf("after the run: %d live jobs, clock %s", len(e.Jobs()), e.Now())
	}
}

// A guest borrows the owner's idle node; the owner's job reclaims it after
// the guest's protection, and the guest loses the work since its last
// checkpoint.
func TestReclaimLosesWorkSinceCheckpoint(t *testing.T) {
	w := oneNode()
	l := &log{}
	cfg := engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true, Recorder: l,
		Core: sched.Config{MinRunTime: 10 * time.Minute}}
	e := engine.New(cfg)
	l.eng = e
	guest := job("guest", "guest", 8, 20*time.Minute)
	if err := e.Submit(guest, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	e.At(schedtest.Epoch.Add(50*time.Minute), func(time.Time) {
		if err := e.Submit(job("owner", "owner", 8, 0), time.Hour); err != nil {
			t.Error(err)
		}
	})
	if err := e.Run(schedtest.Epoch.Add(10 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if len(l.preempted) != 1 || l.preempted[0].Job != "guest" {
		t.Fatalf("preemptions = %+v, want the guest once", l.preempted)
	}
	// 50 minutes run, checkpoint at 40: 10 minutes of 8 GPUs lost.
	if got := l.preempted[0].LostGPUSeconds; got != 8*600 {
		t.Errorf("lost %g GPU-seconds, want %d", got, 8*600)
	}
	if got := l.endedAt["owner"].Sub(schedtest.Epoch); got != 110*time.Minute {
		t.Errorf("owner ended after %s, want 1h50m", got)
	}
	// The guest restarts at 1h50m with 2h − 40m of work left.
	if got := l.endedAt["guest"].Sub(schedtest.Epoch); got != 110*time.Minute+80*time.Minute {
		t.Errorf("guest ended after %s, want 3h10m", got)
	}
}

// An owner job that arrives while the borrower is protected waits for the
// protection to end: the engine wakes for it without any other event.
func TestAwaitingPreemptionWakes(t *testing.T) {
	w := oneNode()
	l := &log{}
	e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true, Recorder: l,
		Core: sched.Config{MinRunTime: 10 * time.Minute}})
	l.eng = e
	if err := e.Submit(job("guest", "guest", 8, 0), engine.Forever); err != nil {
		t.Fatal(err)
	}
	e.At(schedtest.Epoch.Add(time.Minute), func(time.Time) {
		if err := e.Submit(job("owner", "owner", 8, 0), time.Hour); err != nil {
			t.Error(err)
		}
	})
	if err := e.Run(schedtest.Epoch.Add(30 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	owner, ok := e.Job("owner")
	if !ok || owner.Status.State != model.StateRunning || !owner.Status.StartedAt.Equal(schedtest.Epoch.Add(10*time.Minute)) {
		t.Fatalf("owner = %+v, want running since the guest's protection ended at 10m", owner.Status)
	}
	e.Stop("guest")
	if g, ok := e.Job("guest"); ok {
		t.Errorf("stopped guest still live: %+v", g.Status)
	}
	if l.ended[len(l.ended)-1] != "guest" {
		t.Errorf("ended = %v, want the guest last", l.ended)
	}
}

// Callbacks of one moment run in the order they were scheduled, after
// that moment's completions; Input sees every cycle's snapshot.
func TestCallbackOrderAndInput(t *testing.T) {
	w := oneNode()
	var order []string
	inputs := 0
	e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true,
		Input: func(s *sched.Snapshot, _ time.Time) *sched.Snapshot { inputs++; return s }})
	if err := e.Submit(job("a", "owner", 8, 0), time.Hour); err != nil {
		t.Fatal(err)
	}
	at := schedtest.Epoch.Add(time.Hour)
	e.At(at, func(time.Time) {
		_, live := e.Job("a")
		order = append(order, "first", map[bool]string{true: "a-live", false: "a-done"}[live])
	})
	e.At(at, func(time.Time) { order = append(order, "second") })
	e.At(schedtest.Epoch.Add(-time.Hour), func(now time.Time) {
		order = append(order, "past@"+now.Sub(schedtest.Epoch).String())
	})
	if err := e.Run(at); err != nil {
		t.Fatal(err)
	}
	want := []string{"past@0s", "first", "a-done", "second"}
	if len(order) != len(want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order = %v, want %v", order, want)
		}
	}
	if inputs != e.Cycles() || inputs < 2 {
		t.Errorf("Input saw %d snapshots over %d cycles", inputs, e.Cycles())
	}
}

// redoLog is a log that also records where jobs with saved work restart.
type redoLog struct {
	log
	homes  []bool
	redone float64
}

func (l *redoLog) Restarted(_ *model.Job, home bool, gpuSeconds float64, _ time.Time) {
	l.homes = append(l.homes, home)
	l.redone += gpuSeconds
}

// With checkpoints on the nodes' disks, a preempted job keeps its saved
// work only when its next attempt runs on the node of its checkpoint: a
// guest checkpointed on n-2 (20-minute interval, 50 minutes run, 40 saved)
// is evicted by the owner, and restarts once both nodes are free. Shared
// storage: it resumes anywhere. Local, the core told: it goes back to n-2
// and resumes. Local, the core not told: it takes n-1 (the lowest rank)
// and redoes the 40 minutes of 8 GPUs.
func TestLocalCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		ckpts    engine.Checkpoints
		node     string
		ends     time.Duration
		redoneGS float64
	}{
		{engine.CheckpointsShared, "n-1", 190 * time.Minute, 0},
		{engine.CheckpointsLocal, "n-2", 190 * time.Minute, 0},
		{engine.CheckpointsLocalUntold, "n-1", 230 * time.Minute, 40 * 60 * 8},
	} {
		t.Run(tc.ckpts.String(), func(t *testing.T) {
			w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", 2, "ND96-H100x8-IB", "l1")
			w.Partition("p", "r", "H100", 16).Tenant("owner", "p").Tenant("guest", "")
			l := &redoLog{}
			e := engine.New(engine.Config{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Start: schedtest.Epoch, CheckIncremental: true,
				Recorder: l, Core: sched.Config{MinRunTime: 10 * time.Minute}, Checkpoints: tc.ckpts})
			l.eng = e
			submit := func(j *model.Job, work time.Duration) {
				if err := e.Submit(j, work); err != nil {
					t.Fatal(err)
				}
			}
			submit(job("filler", "owner", 8, 0), 10*time.Minute) // takes n-1: the guest starts on n-2
			e.At(schedtest.Epoch.Add(time.Minute), func(time.Time) { submit(job("guest", "guest", 8, 20*time.Minute), 2*time.Hour) })
			e.At(schedtest.Epoch.Add(51*time.Minute), func(time.Time) {
				submit(job("x", "owner", 8, 0), time.Hour)
				submit(job("y", "owner", 8, 0), time.Hour)
			})
			var restartedOn string
			e.At(schedtest.Epoch.Add(112*time.Minute), func(time.Time) {
				for _, j := range e.Holding() {
					if j.ID == "guest" {
						restartedOn = j.Status.Allocations[0].Node
					}
				}
			})
			if err := e.Run(schedtest.Epoch.Add(10 * time.Hour)); err != nil {
				t.Fatal(err)
			}
			if len(l.preempted) != 1 || l.preempted[0].Job != "guest" {
				t.Fatalf("preemptions %+v, want the guest once", l.preempted)
			}
			if restartedOn != tc.node {
				t.Errorf("the guest restarted on %q, want %s", restartedOn, tc.node)
			}
			if got := l.endedAt["guest"].Sub(schedtest.Epoch.Add(time.Minute)); got != tc.ends {
				t.Errorf("the guest ended %s after its submit, want %s", got, tc.ends)
			}
			if l.redone != tc.redoneGS {
				t.Errorf("redone %g GPU-seconds, want %g", l.redone, tc.redoneGS)
			}
			var homes []bool // with local checkpoints, the one restart: home when nothing is redone
			if tc.ckpts != engine.CheckpointsShared {
				homes = []bool{tc.redoneGS == 0}
			}
			if !slices.Equal(l.homes, homes) {
				t.Errorf("restarts recorded (home or not) %v, want %v", l.homes, homes)
			}
		})
	}
}
