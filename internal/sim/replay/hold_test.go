package replay

import (
	"context"
	"testing"
	"time"
)

// TestHoldAfterServesGangs replays the whole trace with and without the
// core's HoldAfter and asserts that holding nodes for a job that has
// waited cuts the p99 queueing delay of the multi-node jobs: to a tenth
// under borrow sharing (6 h) at a cost to the average JCT of at most 5 %,
// and to a third under static sharing (24 h), where a VC's gangs queue
// behind one another, at a cost of at most a fifth (BENCHMARKS.md,
// "Holding nodes for a starved job", has the figures). A slice is also
// replayed with holds and walltimes, every Plan checked against the
// from-scratch core.
func TestHoldAfterServesGangs(t *testing.T) {
	if testing.Short() {
		t.Skip("four replays of the whole trace")
	}
	jobs, vcs := loadTrace(t)
	run := func(sharing Sharing, hold time.Duration, walltime float64, limit int, check bool) *Result {
		t.Helper()
		cfg := sliceConfig(jobs, vcs, "allot", sharing)
		cfg.Limit, cfg.CheckIncremental, cfg.HoldAfter, cfg.Walltime = limit, check, hold, walltime
		r, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	run(Static, 6*time.Hour, 2, sliceJobs, true)
	for _, tc := range []struct {
		sharing        Sharing
		hold           time.Duration
		p99, avgJCT    float64 // at most these times the figures without holds
		p99How, jctHow string
	}{
		{Borrow, 6 * time.Hour, 0.1, 1.05, "at most a tenth", "at most 5 % more"},
		{Static, 24 * time.Hour, 1.0 / 3, 1.2, "at most a third", "at most a fifth more"},
	} {
		off, on := run(tc.sharing, 0, 0, 0, false), run(tc.sharing, tc.hold, 0, 0, false)
		t.Logf("%s, hold after %s: multi-node jobs' p99 / max queueing delay %.0f / %.0f s without holds, %.0f / %.0f s with; avg JCT %.0f s and %.0f s",
			tc.sharing, tc.hold, off.P99QueueGang, off.MaxQueueGang, on.P99QueueGang, on.MaxQueueGang, off.AvgJCT, on.AvgJCT)
		if on.P99QueueGang > tc.p99*off.P99QueueGang {
			t.Errorf("%s: p99 queueing delay of multi-node jobs %.0f s with holds, %.0f s without: want %s", tc.sharing, on.P99QueueGang, off.P99QueueGang, tc.p99How)
		}
		if on.AvgJCT > tc.avgJCT*off.AvgJCT {
			t.Errorf("%s: avg JCT %.0f s with holds, %.0f s without: want %s", tc.sharing, on.AvgJCT, off.AvgJCT, tc.jctHow)
		}
	}
}
