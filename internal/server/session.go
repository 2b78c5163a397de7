package server

import (
	"errors"
	"time"

	"github.com/allot-dev/allot/internal/sched"
)

// The core's state carried between cycles.
//
// Step 4 of a cycle plans on a sched.Session that the server keeps from one
// cycle to the next, through a sched.Incremental, instead of on a Snapshot
// the core rebuilds whole: what the core is about to see (the snapshot
// after the strategy, the policies and coreView) is compared with what the
// Session was told, and only the differences are reported (see
// sched.Incremental). The cache never changes a job record in place
// (cache.go), and the strategy and the policies copy the records whose
// priority they rewrite: a copy with the same state, checkpoint,
// allocations and priority is the same job to the core.
//
// The deltas are taken against the snapshot, not against what the cycle
// commits: a Plan that loses a race at commit, or a store that fails,
// leaves nothing to undo, since the next cycle compares again with what
// the cache then holds. A cycle that panics or fails may leave the Session
// half told; the server then drops it and builds a new one at the next
// cycle (Cycle), as it does after any failure but a commit conflict.
//
// With Config.CheckIncremental every cycle also runs the from-scratch
// Scheduler.Schedule on the same snapshot and fails with ErrIncremental
// when the two Plans differ.

// ErrIncremental is returned by a cycle whose Plan on the server's Session
// differs from the from-scratch Plan (Config.CheckIncremental). Run stops
// on it.
var ErrIncremental = sched.ErrIncremental

// plan is step 4 of a cycle: the Plan of the core over in, on the
// server's Session brought in step with in.
func (s *Server) plan(in *sched.Snapshot, now time.Time) (sched.Plan, error) {
	plan, err := s.inc.Plan(in, now)
	if errors.Is(err, ErrIncremental) {
		s.log.Error("incremental plan differs from the from-scratch plan", "err", err)
	}
	return plan, err
}
