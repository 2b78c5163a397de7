package sched

import (
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Snapshot is everything one cycle may look at. The core never changes it.
type Snapshot struct {
	Fleet   *model.Fleet
	Tenancy *model.Tenancy
	// Jobs holds the queued jobs (State Queued) and those holding capacity
	// (Preparing, Running) with their allocations. Others are ignored.
	Jobs []*model.Job
}

// Config holds the policy knobs of the core.
type Config struct {
	// Scorer ranks feasible nodes; nil means BinPack.
	Scorer Scorer
	// MinRunTime protects a job from preemption until its current attempt
	// has run this long (Slurm's PreemptExemptTime), so preemption cannot
	// loop and a resumed job gets to make progress.
	MinRunTime time.Duration
	// DisablePreemption turns step 4 off.
	DisablePreemption bool
}

// DefaultMinRunTime is the protection of freshly started work.
const DefaultMinRunTime = 10 * time.Minute
