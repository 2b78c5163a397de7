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
	// Headroom is capacity the driver expects to be asked for within
	// Config.ResizeInterval (an endpoint's replicas at its next daily peak,
	// say): elastic jobs do not grow into it (elastic.go). It keeps
	// nothing from queued jobs.
	Headroom []Headroom
	// Images are the images each node holds, by node name: the image
	// references jobs name (model.Container.Image) that the node's agent
	// pulled and keeps. A job prefers a node that holds its image when
	// nodes are otherwise alike (ImageLocalityWeight, images.go). The core
	// never changes it.
	Images map[string][]string
}

// Headroom keeps GPUs of one GPU model in one region free of growth.
type Headroom struct {
	Region   string
	GPUModel string
	GPUs     int
}

// Config holds the policy knobs of the core.
type Config struct {
	// Scorer ranks feasible nodes; nil means BinPack.
	Scorer Scorer
	// MinRunTime protects a job from preemption until its current attempt
	// has run this long (Slurm's PreemptExemptTime), so preemption cannot
	// loop and a resumed job gets to make progress. Spot work is not
	// protected from a partition taking back its guarantee (state.reclaims):
	// a guarantee is not kept waiting for spot.
	MinRunTime time.Duration
	// DisablePreemption turns step 4 off.
	DisablePreemption bool
	// PriorityGap, when positive, lets a queued job preempt running work of
	// its own tenant and priority class whose priority value is at least
	// PriorityGap below its own (reason BetterPriority), within
	// MinRunTime's protection and cheapest lost work first, like every
	// preemption; work in the tenant's own reservations included, since
	// the tenant gives way only to itself. Zero, the default, turns it
	// off: the core then preempts only for a higher class, a guarantee or
	// a reservation (see priority.go).
	PriorityGap int
	// HoldAfter, when positive, lets a queued job that has waited this long
	// keep nodes for itself: the nodes of one gang domain where the least
	// work stands between it and a start take, until it starts, only it,
	// higher classes, spot work, other partitions' guaranteed work and work
	// that surely ends before theirs (hold.go). One job holds per domain
	// and reservation. Zero, the default, turns it off: work that fits
	// always starts, and a job that needs much in one place may wait while
	// small jobs take each GPU as it frees up.
	HoldAfter time.Duration
	// EarmarkLead, when positive, is how long before its start a
	// reservation begins to earmark nodes (earmark.go): one that starts
	// later keeps nothing yet, so that a reservation far ahead cannot keep
	// nodes from everyone meanwhile. Work that runs on its nodes at its
	// start gives way to it then as to any active reservation. Zero, the
	// default, earmarks for every reservation ahead.
	EarmarkLead time.Duration
	// ResizeInterval is the least time between two resizes of an elastic
	// job (model.Elastic), counted from the start of its current attempt:
	// it grows no sooner, and is protected from shrinks and eviction that
	// long when MinRunTime is shorter (elastic.go). Snapshot.Headroom is
	// what a driver expects to be asked for within it. Zero means
	// model.DefaultResizeInterval.
	ResizeInterval time.Duration
	// Observer, when not nil, is told as the cycle goes, so that a driver
	// can time the core's decisions; nil costs nothing.
	Observer Observer
}

// Observer watches a cycle from inside without taking part in it: the Plan
// is the same with or without one. Its methods run on the caller's
// goroutine, in this order: Prepared once, then Decided once per queued
// job, in the order the queue served them. An Observer must not change
// what it is given.
type Observer interface {
	// Prepared is called when the cycle's own state is built from the
	// Snapshot, before the first job is decided.
	Prepared()
	// Decided is called when j was bound, preempted for, or given the
	// reason it stays pending.
	Decided(j *model.Job)
}

// DefaultMinRunTime is the protection of freshly started work.
const DefaultMinRunTime = 10 * time.Minute
