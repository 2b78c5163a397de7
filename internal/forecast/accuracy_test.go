package forecast_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// workload is a busy fleet at Epoch: running work, a queue behind it and a
// reservation that opens later. Each job's spec carries the duration its
// submitter guessed; real is how long it truly runs (the guess times
// spread, drawn between 1-spread and 1+spread).
func workload(seed uint64, spread float64) (*World, map[string]time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := NewWorld().Region("eastus", "us", model.FabricEthernet).
		Nodes("t", 12, "NC4-T4x1", "l1").Nodes("q", 3, "NC64-T4x4", "l2").
		Tenant("a", "").Tenant("b", "").Tenant("c", "").
		Reserve("res", "c", "NC64-T4x4", "eastus", 1, Epoch.Add(5*time.Hour), Epoch.Add(20*time.Hour))
	real := map[string]time.Duration{}
	guess := func() time.Duration { return time.Duration(20+rng.IntN(160)) * time.Minute }
	actual := func(d time.Duration) time.Duration {
		f := 1 + spread*(2*rng.Float64()-1)
		return max(time.Duration(float64(d)*f).Round(time.Minute), time.Minute)
	}
	// Every single-T4 node and two of the 4-GPU ones run something.
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("run-t%d", i)
		d := guess()
		b := w.Job(id, "a").Running(Epoch.Add(-time.Duration(rng.IntN(20))*time.Minute), On(fmt.Sprintf("t-%d", i), 0))
		b.Job.Spec.Duration = d
		real[id] = actual(d) - Epoch.Sub(b.Job.Status.StartedAt)
	}
	for i := 1; i <= 2; i++ {
		id := fmt.Sprintf("run-q%d", i)
		d := guess()
		b := w.Job(id, "b").GPUs(1, 4).Running(Epoch, On(fmt.Sprintf("q-%d", i), 0, 1, 2, 3))
		b.Job.Spec.Duration = d
		real[id] = actual(d)
	}
	tenants := []string{"a", "b", "c"}
	for i := range 40 {
		id := fmt.Sprintf("q%02d", i)
		b := w.Job(id, tenants[rng.IntN(3)]).Submitted(Epoch.Add(-time.Duration(40-i) * time.Minute))
		switch rng.IntN(6) {
		case 0:
			b.GPUs(1, 4) // a whole 4-GPU node
		case 1:
			b.GPUs(2, 1).Models("T4") // a small gang
		}
		if i%13 == 5 {
			b.Job.Spec.Tenant = "c"
			b.Reservation("res")
		}
		d := guess()
		b.Job.Spec.Duration = d
		real[b.Job.ID] = actual(d)
	}
	return w, real
}

// simulate drives the core forward from Epoch with the jobs' real run
// times, as the simulator would: at every real end and reservation bound,
// release what ended, run a cycle, commit its Plan; and every minute
// between them. It returns when each
// job started (Epoch for those running already).
func simulate(t *testing.T, w *World, real map[string]time.Duration, cfg sched.Config) map[string]time.Time {
	core := sched.New(cfg)
	jobs := make([]*model.Job, len(w.Jobs))
	for i, j := range w.Jobs {
		c := *j
		jobs[i] = &c
	}
	started := map[string]time.Time{}
	ends := map[string]time.Time{}
	for _, j := range jobs {
		if j.Status.State == model.StateRunning {
			ends[j.ID] = Epoch.Add(real[j.ID])
		}
	}
	now := Epoch
	for range 20000 {
		live := jobs[:0]
		for _, j := range jobs {
			if e, ok := ends[j.ID]; ok && !e.After(now) {
				delete(ends, j.ID)
				continue
			}
			live = append(live, j)
		}
		jobs = live
		plan := core.Schedule(&sched.Snapshot{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Jobs: jobs}, now)
		if err := plan.Apply(jobs, now); err != nil {
			t.Fatal(err)
		}
		for _, b := range plan.Binds {
			if _, ok := started[b.Job]; !ok {
				started[b.Job] = now
			}
			ends[b.Job] = now.Add(real[b.Job])
		}
		for _, p := range plan.Preemptions {
			delete(ends, p.Job)
		}
		var next time.Time
		for _, e := range ends {
			if next.IsZero() || e.Before(next) {
				next = e
			}
		}
		for _, r := range w.Tenancy.Reservations {
			for _, b := range []time.Time{r.Start, r.End} {
				if b.After(now) && (next.IsZero() || b.Before(next)) {
					next = b
				}
			}
		}
		queued := false
		for _, j := range jobs {
			queued = queued || j.Status.State == model.StateQueued
		}
		if !queued {
			return started
		}
		// Cycles also run on a one-minute tick, as the server's do.
		if tick := now.Add(time.Minute); next.IsZero() || tick.Before(next) {
			next = tick
		}
		now = next
	}
	t.Fatal("simulation did not settle in 20,000 events")
	return nil
}

// TestEstimateAgainstSimulation estimates every queued job's start at
// Epoch, then runs the workload with its real run times and compares.
// With exact durations the estimate must be exact; with durations off by
// up to ±50 % the test reports the error and bounds its median.
func TestEstimateAgainstSimulation(t *testing.T) {
	cfg := sched.Config{MinRunTime: sched.DefaultMinRunTime}
	for _, tt := range []struct {
		name   string
		spread float64
		opts   forecast.Options
		median time.Duration // most the median absolute error may be
	}{
		// The default bounds on a small fleet: every event its own
		// cycle, so exact.
		{"exact durations", 0, forecast.Options{}, 0},
		// Bounds as tight as on a large fleet: late events are taken
		// together.
		{"exact durations, 32 events", 0, forecast.Options{MaxEvents: 32}, 10 * time.Minute},
		{"durations off by up to 25%", 0.25, forecast.Options{}, time.Hour},
		{"durations off by up to 50%", 0.5, forecast.Options{}, 2 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var errs, waits []time.Duration
			unknown := 0
			for seed := range uint64(10) {
				w, real := workload(seed, tt.spread)
				if err := w.Validate(); err != nil {
					t.Fatal(err)
				}
				est := forecast.New(cfg, tt.opts).Starts(w.Snapshot(), Epoch)
				got := simulate(t, w, real, cfg)
				for id, e := range est {
					actual, ok := got[id]
					if !ok {
						t.Fatalf("seed %d: %s never started in the simulation", seed, id)
					}
					if !e.Known() {
						unknown++
						continue
					}
					d := e.Start.Sub(actual).Abs()
					if tt.spread == 0 && tt.median == 0 && d != 0 {
						t.Errorf("seed %d: %s estimated %s, started %s", seed, id, e.Start.Format(time.TimeOnly), actual.Format(time.TimeOnly))
					}
					errs = append(errs, d)
					waits = append(waits, actual.Sub(Epoch))
				}
			}
			slices.Sort(errs)
			slices.Sort(waits)
			med, p90 := errs[len(errs)/2], errs[len(errs)*9/10]
			t.Logf("%d queued jobs over 10 seeds (%d without an estimate): absolute error median %s, p90 %s, max %s; actual wait median %s, p90 %s",
				len(errs)+unknown, unknown, med, p90, errs[len(errs)-1], waits[len(waits)/2], waits[len(waits)*9/10])
			if unknown > 0 {
				t.Errorf("%d jobs without an estimate, want none (every job in the workload can run)", unknown)
			}
			if med > tt.median {
				t.Errorf("median absolute error %s, want at most %s", med, tt.median)
			}
		})
	}
}
