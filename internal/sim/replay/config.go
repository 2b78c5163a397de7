package replay

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/trace/philly"
)

// Sharing says whether a virtual cluster may use capacity beyond its own.
type Sharing string

const (
	// Static: a job runs only on its own VC's nodes.
	Static Sharing = "static"
	// Borrow: idle GPUs anywhere may be borrowed; the core reclaims them
	// by preemption when their owner has work.
	Borrow Sharing = "borrow"
)

// Defaults of Config.
const (
	DefaultCheckpoint    = 30 * time.Minute
	DefaultSpreadPenalty = 0.1
	DefaultLeafNodes     = 32
	DefaultSample        = time.Hour
	// DefaultPriorityGap is Config.PriorityGap's default: two GPU-hours of
	// predicted remaining service.
	DefaultPriorityGap = 7200
)

// ErrConfig is wrapped by every error about a Config.
var ErrConfig = errors.New("replay: bad config")

// Config describes one replay.
type Config struct {
	Jobs    []philly.Job
	VCs     []philly.VC
	Policy  string  // one of Policies
	Sharing Sharing // Static or Borrow
	// ClusterScale keeps ⌈nodes × ClusterScale⌉ nodes of every VC; 1 when 0.
	ClusterScale float64
	// Checkpoint is how often every job checkpoints; a preempted job loses
	// the work since its last checkpoint. Zero means DefaultCheckpoint;
	// negative means never (a preempted job starts over).
	Checkpoint time.Duration
	// MinRunTime is sched.Config.MinRunTime: work is protected from
	// preemption this long after it starts. Negative means 0.
	MinRunTime time.Duration
	// SpreadPenalty slows a job by this fraction of its run time for every
	// node it spans beyond the fewest it needs and every leaf group beyond
	// the fewest its node count needs. Negative means 0.
	SpreadPenalty float64
	// LeafNodes is the size of an InfiniBand leaf group; DefaultLeafNodes
	// when 0.
	LeafNodes int
	// Limit replays only the first Limit jobs in submit order (skipped ones
	// included); 0 replays all.
	Limit int
	// FullQueue shows the core every queued job in every cycle instead of
	// the window that can start (see window); it is slow, for checking.
	FullQueue bool
	// Sample is the bucket of the utilisation time series; DefaultSample
	// when 0.
	Sample time.Duration
	// Progress, when set, is called now and then with jobs finished and
	// jobs to finish.
	Progress func(done, total int)
	// PriorityGap is, under the allot policy and static sharing, the
	// core's sched.Config.PriorityGap: a queued job preempts running work
	// of its own VC whose priority value is at least this much lower
	// (values are GPU-seconds of predicted remaining service, see
	// policy.go), once the work has run MinRunTime. Zero means
	// DefaultPriorityGap; negative turns preemption for a better value
	// off. Other policies, and borrow sharing (where the core already
	// preempts to reclaim guarantees), never preempt for a value.
	PriorityGap int
	// HoldAfter is the core's sched.Config.HoldAfter: a queued job that
	// has waited this long keeps nodes for itself until it starts. 0
	// turns it off.
	HoldAfter time.Duration
	// Walltime gives every job a walltime, its retry.timeout, of Walltime
	// times its run time at full speed (rounded up to a minute), as a user
	// who asks for more than the job needs would: the core's holds let
	// work that surely ends by a held job's start backfill the held nodes
	// (sched.Config.HoldAfter). Philly has no requested walltimes; 0, the
	// default, gives none. It must be 0 or at least 1; a job slowed by its
	// spread past its walltime still runs to its end, and Result.PastWalltime
	// counts such attempts.
	Walltime float64
	// CheckIncremental is engine.Config.CheckIncremental: every cycle is
	// also planned from scratch, and a different Plan fails the run.
	CheckIncremental bool
}

func (c *Config) normalise() error {
	if !slices.Contains(Policies, c.Policy) {
		return fmt.Errorf("%w: unknown policy %q (want %s)", ErrConfig, c.Policy, strings.Join(Policies, ", "))
	}
	if c.Sharing != Static && c.Sharing != Borrow {
		return fmt.Errorf("%w: sharing %q: want static or borrow", ErrConfig, c.Sharing)
	}
	if c.ClusterScale == 0 {
		c.ClusterScale = 1
	}
	if c.ClusterScale < 0 || c.ClusterScale > 100 {
		return fmt.Errorf("%w: cluster scale %g: want (0, 100]", ErrConfig, c.ClusterScale)
	}
	if c.Checkpoint == 0 {
		c.Checkpoint = DefaultCheckpoint
	}
	c.MinRunTime = max(c.MinRunTime, 0)
	c.SpreadPenalty = max(c.SpreadPenalty, 0)
	if c.LeafNodes == 0 {
		c.LeafNodes = DefaultLeafNodes
	}
	if c.LeafNodes < 1 {
		return fmt.Errorf("%w: leaf group of %d nodes", ErrConfig, c.LeafNodes)
	}
	if c.Sample <= 0 {
		c.Sample = DefaultSample
	}
	if c.PriorityGap == 0 {
		c.PriorityGap = DefaultPriorityGap
	}
	if c.Limit < 0 {
		return fmt.Errorf("%w: limit %d is negative", ErrConfig, c.Limit)
	}
	if c.Walltime != 0 && !(c.Walltime >= 1) {
		return fmt.Errorf("%w: walltime %g × the run time: want 0 (none) or at least 1", ErrConfig, c.Walltime)
	}
	if len(c.VCs) == 0 {
		return fmt.Errorf("%w: no virtual clusters", ErrConfig)
	}
	return nil
}
