package sched_test

import (
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
)

// BenchmarkCycle runs one cycle on 12,500 nodes (100,000 GPUs) with 10,000
// queued jobs and reports placements (jobs bound) per second.
func BenchmarkCycle(b *testing.B) {
	w := schedtest.Synthetic(12_500, 10_000, 1)
	if err := w.Validate(); err != nil {
		b.Fatal(err)
	}
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	snap := w.Snapshot()
	var binds, instances, pending int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := s.Schedule(snap, schedtest.Epoch)
		binds, pending, instances = len(p.Binds), len(p.Pending), 0
		for _, bd := range p.Binds {
			instances += len(bd.Nodes)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(binds)/sec, "placements/s")
	b.ReportMetric(float64(instances)/sec, "instances/s")
	b.ReportMetric(float64(binds), "binds/cycle")
	b.ReportMetric(float64(pending), "pending/cycle")
}

// BenchmarkCycleBusy runs the first cycle on the busy fleet of `allot bench
// sched`: 12,500 nodes (100,000 GPUs) 90 % held by running work of every
// class and partition, 50,000 queued jobs of the realistic mix (gangs of up
// to 64 nodes included), preemption on. It reports decisions (queued jobs
// bound, preempting or given their reason) per second and preemptions per
// cycle. -short shrinks the world to a tenth.
func BenchmarkCycleBusy(b *testing.B) {
	w := busyWorld(b)
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	snap := w.World.Snapshot()
	benchBusyCycles(b, func() sched.Plan { return s.Schedule(snap, w.Now) })
}

// busyWorld is the world of the busy benchmarks (a tenth of it with -short).
func busyWorld(b *testing.B) *schedtest.Busy {
	cfg := schedtest.BusyConfig{Nodes: 12_500, Pending: 50_000, Fill: 0.9, Seed: 1}
	if testing.Short() {
		cfg.Nodes, cfg.Pending = 1_250, 5_000
	}
	w, err := schedtest.NewBusy(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// benchBusyCycles times cycle b.N times and reports decisions per second
// and preemptions per cycle.
func benchBusyCycles(b *testing.B, cycle func() sched.Plan) {
	var decisions, preemptions int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := cycle()
		decisions, preemptions = len(p.Binds)+len(p.Pending), len(p.Preemptions)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(decisions)/sec, "decisions/s")
	b.ReportMetric(float64(preemptions), "preemptions/cycle")
}

// BenchmarkSessionCycleBusy runs the cycle of BenchmarkCycleBusy on a
// Session that holds the running work already: what a driver that carries
// the state pays per cycle, without rebuilding it. A Session's cycle leaves
// it as it was, so every iteration decides the same queue.
func BenchmarkSessionCycleBusy(b *testing.B) {
	w := busyWorld(b)
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	ss := s.NewSession(&w.World.Fleet, &w.World.Tenancy)
	var queued []*model.Job
	for _, j := range w.World.Jobs {
		if err := ss.Hold(j); err != nil {
			b.Fatal(err)
		}
		if j.Status.State == model.StateQueued {
			queued = append(queued, j)
		}
	}
	benchBusyCycles(b, func() sched.Plan { return ss.Schedule(queued, w.Now) })
}
