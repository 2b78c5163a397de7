package forecast_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
)

// busyFleet is schedtest's busy world of nodes 8-GPU nodes, 90 % full,
// with pending jobs queued; every job gets a duration (running work ends
// within the next two days, queued work runs 1–24 h), and the last queued
// job, a gang of 8 H100 nodes, allows all three regions.
func busyFleet(b *testing.B, nodes, pending int) (*sched.Snapshot, time.Time, *model.Job) {
	w, err := schedtest.NewBusy(schedtest.BusyConfig{Nodes: nodes, Pending: pending, Fill: 0.9, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var last *model.Job
	for _, j := range w.World.Jobs {
		switch j.Status.State {
		case model.StateQueued:
			j.Spec.Duration = time.Duration(1+rng.IntN(24)) * time.Hour
			last = j
		default:
			j.Spec.Duration = w.Now.Sub(j.Status.StartedAt) + time.Duration(rng.Int64N(int64(48*time.Hour)))
		}
	}
	last.Spec.Placement.Regions = []string{"r0", "r1", "r2"}
	last.Spec.Placement.Reservation = ""
	// A gang of 8 whole H100 nodes: it waits for the queue and for ends.
	last.Spec.Priority = model.Priority{Class: model.ClassStandard}
	last.Spec.Resources = model.Resources{InstanceCount: 8, GPUsPerInstance: 8, GPUModels: []string{"H100"}}
	return w.World.Snapshot(), w.Now, last
}

// BenchmarkForecast times what 'job why' asks of the forecast on a
// 10,000-GPU fleet (1,250 nodes, 90 % full, 500 queued; the run carries
// the first 256): the estimate of
// the last job in the queue, and its estimate in each of three regions.
//
//	go test -run '^$' -bench BenchmarkForecast -benchtime 3x -v ./internal/forecast/
func BenchmarkForecast(b *testing.B) {
	snap, now, j := busyFleet(b, 1250, 500)
	f := forecast.New(sched.Config{MinRunTime: sched.DefaultMinRunTime}, benchOpts)
	// Pinned to r1, where it does not start within the budget: the run
	// takes every cycle it may, the worst case of one estimate.
	pinned := *snap
	pinned.Jobs = append([]*model.Job(nil), snap.Jobs...)
	pinned.Jobs[len(pinned.Jobs)-1] = forecast.Pin(j, "r1")
	b.Run("estimate", func(b *testing.B) {
		for b.Loop() {
			e := f.Starts(&pinned, now, j.ID)[j.ID]
			if e.How == "" {
				b.Fatal("no estimate")
			}
		}
	})
	b.Run("per-region", func(b *testing.B) {
		for b.Loop() {
			if est := f.PerRegion(snap, now, j); len(est) != 3 {
				b.Fatalf("%d regions", len(est))
			}
		}
	})
	e := f.Starts(&pinned, now, j.ID)[j.ID]
	b.Logf("estimate in r1 %v (%s); %s", e.Start, e.Why, e.How)
	for r, e := range f.PerRegion(snap, now, j) {
		b.Logf("in %s: %v (%s); %s", r, e.Start, e.Why, e.How)
	}
}

// benchOpts are the bounds the benchmark runs with: the defaults.
var benchOpts = forecast.Options{}
