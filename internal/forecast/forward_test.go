package forecast_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
	"github.com/allot-dev/allot/internal/strategy"
)

const t4 = "NC4-T4x1" // one T4 per node

// t4Region is one region of n single-T4 nodes (t-1..t-n) and tenants a, b.
func t4Region(n int) *World {
	return NewWorld().Region("eastus", "us", model.FabricEthernet).Nodes("t", n, t4, "l1").
		Tenant("a", "").Tenant("b", "")
}

func TestStarts(t *testing.T) {
	h := time.Hour
	at := func(d time.Duration) time.Time { return Epoch.Add(d) }
	tests := []struct {
		name  string
		world func() *World
		opts  forecast.Options
		job   string
		want  time.Time // zero: no estimate
		why   string    // words Why holds when there is no estimate
	}{{
		name: "the first end frees the capacity",
		world: func() *World {
			w := t4Region(2)
			w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = 2 * h
			w.Job("r2", "a").Running(Epoch, On("t-2", 0)).Job.Spec.Duration = h
			w.Job("q", "b")
			return w
		},
		job: "q", want: at(h),
	}, {
		name: "a job already past its duration is taken to end now",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch.Add(-3*h), On("t-1", 0)).Job.Spec.Duration = h
			w.Job("q", "b")
			return w
		},
		job: "q", want: Epoch,
	}, {
		name: "a reservation window whose start is known",
		world: func() *World {
			w := t4Region(1).Reserve("res", "b", t4, "eastus", 1, at(3*h), at(9*h))
			w.Job("q", "b").Reservation("res")
			return w
		},
		job: "q", want: at(3 * h),
	}, {
		name: "a reservation window beyond the horizon, busy work on the way",
		world: func() *World {
			w := t4Region(2).Reserve("res", "b", t4, "eastus", 1, at(90*24*h), at(100*24*h))
			for i := range 2 {
				node := "t-" + string(rune('1'+i))
				w.Job("r"+node, "a").Running(Epoch, On(node, 0)).Job.Spec.Duration = time.Duration(1+i) * h
			}
			w.Job("q", "b").Reservation("res")
			return w
		},
		job: "q", want: at(90 * 24 * h),
	}, {
		// Static lets partition p borrow beyond its guarantee only by the
		// GPUs of its reservations active at the time: none now, one once
		// the window opens.
		name: "a reservation window under the static strategy",
		world: func() *World {
			w := t4Region(2).Partition("p", "eastus", "T4", 1).Tenant("c", "p").
				Reserve("res", "c", t4, "eastus", 1, at(3*h), at(9*h))
			w.Tenancy.Strategy = model.StrategyStatic
			w.Job("g", "c").Running(Epoch, On("t-1", 0))
			w.Job("q", "c").Reservation("res")
			return w
		},
		opts: forecast.Options{Prepare: strategy.Apply},
		job:  "q", want: at(3 * h),
	}, {
		name: "the queue ahead goes first",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = h
			w.Job("ahead", "a").Submitted(Epoch.Add(-time.Minute)).Job.Spec.Duration = 2 * h
			w.Job("q", "a")
			return w
		},
		job: "q", want: at(3 * h),
	}, {
		name: "a gang waits for as many ends as it has instances",
		world: func() *World {
			w := t4Region(4)
			for i, d := range []time.Duration{4 * h, h, 3 * h, 2 * h} {
				node := "t-" + string(rune('1'+i))
				w.Job("r"+node, "a").Running(Epoch, On(node, 0)).Job.Spec.Duration = d
			}
			w.Job("gang", "b").GPUs(3, 1)
			return w
		},
		job: "gang", want: at(3 * h),
	}, {
		name: "running work without a duration never ends",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch, On("t-1", 0))
			w.Job("q", "b")
			return w
		},
		job: "q", why: "nothing left to happen",
	}, {
		name: "or ends after the assumed run time",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch.Add(-h), On("t-1", 0))
			w.Job("q", "b")
			return w
		},
		opts: forecast.Options{UnknownRunTime: 4 * h},
		job:  "q", want: at(3 * h),
	}, {
		name: "beyond the horizon there is no estimate",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = 30 * h
			w.Job("q", "b")
			return w
		},
		opts: forecast.Options{Horizon: 24 * h},
		job:  "q", why: "horizon of 1d",
	}, {
		name: "the event bound stops the run",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = h
			for i := range 5 {
				w.Job("ahead-"+string(rune('a'+i)), "a").Submitted(Epoch.Add(-time.Minute)).Job.Spec.Duration = h
			}
			w.Job("q", "b")
			return w
		},
		opts: forecast.Options{MaxEvents: 3},
		job:  "q", why: "within 3 events",
	}, {
		name: "a job held back starts at its not_before",
		world: func() *World {
			w := t4Region(1)
			w.Job("q", "b").Job.Status.NotBefore = at(20 * time.Minute)
			return w
		},
		job: "q", want: at(20 * time.Minute),
	}, {
		name: "a held job has none, and the job behind it goes first",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = h
			w.Job("held", "a").Submitted(Epoch.Add(-time.Minute)).Job.Status.Held = true
			w.Job("q", "a")
			return w
		},
		job: "held", why: "held",
	}, {
		name: "the job behind a held one is not kept waiting by it",
		world: func() *World {
			w := t4Region(1)
			w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = h
			w.Job("held", "a").Submitted(Epoch.Add(-time.Minute)).Job.Status.Held = true
			w.Job("q", "a")
			return w
		},
		job: "q", want: at(h),
	}, {
		name: "a job no node can hold has none, with the core's reason",
		world: func() *World {
			w := t4Region(1)
			w.Job("q", "b").Models("H100")
			return w
		},
		job: "q", why: "SkuNotAvailable",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.world()
			if err := w.Validate(); err != nil {
				t.Fatal(err)
			}
			f := forecast.New(sched.Config{MinRunTime: sched.DefaultMinRunTime}, tt.opts)
			got := f.Starts(w.Snapshot(), Epoch, tt.job)[tt.job]
			if !got.Start.Equal(tt.want) {
				t.Fatalf("start %v (why %q), want %v", got.Start, got.Why, tt.want)
			}
			if tt.why != "" && !strings.Contains(got.Why, tt.why) {
				t.Errorf("why %q, want it to say %q", got.Why, tt.why)
			}
			if !strings.Contains(got.How, "core run forward over") {
				t.Errorf("how %q", got.How)
			}
			t.Logf("how: %s", got.How)
		})
	}
}

// TestStartsLeavesSnapshot checks that a run changes none of the jobs it
// is given.
func TestStartsLeavesSnapshot(t *testing.T) {
	w := t4Region(1)
	w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = time.Hour
	w.Job("q", "b")
	f := forecast.New(sched.Config{}, forecast.Options{})
	if e := f.Starts(w.Snapshot(), Epoch)["q"]; !e.Start.Equal(Epoch.Add(time.Hour)) {
		t.Fatalf("start %v", e.Start)
	}
	for _, j := range w.Jobs {
		want := model.StateQueued
		if j.ID == "r1" {
			want = model.StateRunning
		}
		if j.Status.State != want || (j.ID == "q" && j.Status.Allocations != nil) {
			t.Errorf("%s is %s with %v after the run", j.ID, j.Status.State, j.Status.Allocations)
		}
	}
}

// TestMaxQueue checks that the queue cut keeps the job asked about and
// the jobs ahead of it, and says so.
func TestMaxQueue(t *testing.T) {
	w := t4Region(1)
	w.Job("r1", "a").Running(Epoch, On("t-1", 0)).Job.Spec.Duration = time.Hour
	for i := range 10 {
		w.Job("x"+string(rune('a'+i)), "a").Submitted(Epoch.Add(time.Duration(i) * time.Minute)).Job.Spec.Duration = time.Hour
	}
	w.Job("q", "b").Submitted(Epoch.Add(time.Hour))
	f := forecast.New(sched.Config{}, forecast.Options{MaxQueue: 2})
	e := f.Starts(w.Snapshot(), Epoch, "q")["q"]
	// Kept: xa and q (the cap, with the job asked about always kept).
	if !e.Start.Equal(Epoch.Add(2*time.Hour)) || !strings.Contains(e.How, "9 queued jobs beyond the first 2 left out") {
		t.Fatalf("start %v, how %q", e.Start, e.How)
	}
}

// TestRunTimeEstimates checks that work without a duration ends at
// Options.RunTime's estimate, the running job's and that of a queued one
// once it starts in the run, that How counts the bases, and that without
// an estimate (RunTime says zero) UnknownRunTime still applies.
func TestRunTimeEstimates(t *testing.T) {
	h := time.Hour
	w := t4Region(1)
	w.Job("r1", "a").Running(Epoch, On("t-1", 0))
	w.Job("q1", "b").Submitted(Epoch)
	w.Job("q2", "b").Submitted(Epoch.Add(time.Minute))
	never := forecast.New(sched.Config{}, forecast.Options{})
	if e := never.Starts(w.Snapshot(), Epoch, "q2")["q2"]; e.Known() {
		t.Fatalf("without run times q2 starts %v, want no estimate (r1 runs on)", e.Start)
	}
	runTime := func(j *model.Job) (time.Duration, string) {
		switch j.ID {
		case "r1":
			return 2 * h, "history of the same job: the median of 3 runs"
		case "q1":
			return h, "retry timeout: 1h"
		}
		return 0, ""
	}
	f := forecast.New(sched.Config{}, forecast.Options{RunTime: runTime})
	e := f.Starts(w.Snapshot(), Epoch, "q2")["q2"]
	if !e.Start.Equal(Epoch.Add(3 * h)) {
		t.Fatalf("q2 starts %v (%s), want r1's 2h then q1's 1h: %v", e.Start, e.Why, Epoch.Add(3*h))
	}
	for _, want := range []string{"1 by history of the same job", "1 by retry timeout", "else never"} {
		if !strings.Contains(e.How, want) {
			t.Errorf("how %q lacks %q", e.How, want)
		}
	}
	unknown := forecast.New(sched.Config{}, forecast.Options{UnknownRunTime: 4 * h,
		RunTime: func(*model.Job) (time.Duration, string) { return 0, "" }})
	if e := unknown.Starts(w.Snapshot(), Epoch, "q1")["q1"]; !e.Start.Equal(Epoch.Add(4 * h)) {
		t.Errorf("with no estimate and UnknownRunTime 4h q1 starts %v, want %v", e.Start, Epoch.Add(4*h))
	}
}
