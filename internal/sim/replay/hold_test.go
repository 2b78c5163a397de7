package replay

import (
	"context"
	"testing"
	"time"
)

// TestHoldAfterServesGangs replays the whole trace under static sharing
// with and without the core's HoldAfter of 24 h: holding nodes for a job
// that has waited that long must at least halve the p99 queueing delay of
// the multi-node jobs, at a cost to the average JCT of at most a fifth
// (BENCHMARKS.md, "Holding nodes for a starved job", has the figures). A
// slice is also replayed with holds at 6 h and every Plan checked against
// the from-scratch core.
func TestHoldAfterServesGangs(t *testing.T) {
	if testing.Short() {
		t.Skip("two replays of the whole trace")
	}
	jobs, vcs := loadTrace(t)
	run := func(hold time.Duration, limit int, check bool) *Result {
		t.Helper()
		cfg := sliceConfig(jobs, vcs, "allot", Static)
		cfg.Limit, cfg.CheckIncremental, cfg.HoldAfter = limit, check, hold
		r, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	run(6*time.Hour, sliceJobs, true)
	off, on := run(0, 0, false), run(24*time.Hour, 0, false)
	t.Logf("multi-node jobs' p99 / max queueing delay %.0f / %.0f s without holds, %.0f / %.0f s with; avg JCT %.0f s and %.0f s",
		off.P99QueueGang, off.MaxQueueGang, on.P99QueueGang, on.MaxQueueGang, off.AvgJCT, on.AvgJCT)
	if on.P99QueueGang > off.P99QueueGang/2 {
		t.Errorf("p99 queueing delay of multi-node jobs %.0f s with holds, %.0f s without: want at most half", on.P99QueueGang, off.P99QueueGang)
	}
	if on.AvgJCT > 1.2*off.AvgJCT {
		t.Errorf("avg JCT %.0f s with holds, %.0f s without: want at most a fifth more", on.AvgJCT, off.AvgJCT)
	}
}
