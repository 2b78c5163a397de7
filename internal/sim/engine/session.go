package engine

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// The core's state carried between cycles.
//
// A cycle plans on a sched.Session the engine keeps for the whole run,
// through a sched.Incremental, as the server does, not on a Snapshot the
// core rebuilds whole. The engine is the driver and knows every change,
// but the jobs the core sees are not always its own: Config.Select offers
// only part of the running work (the trace replay offers the VCs where
// something changed), and Config.Input (strategy, operator policies)
// copies the jobs whose priority it rewrites and derives a new tenancy
// every cycle. So the Session is told the difference between what the core
// is about to see and what it was told last (see sched.Incremental): the
// engine's records change in place (a new checkpoint; other allocations
// after a preemption and a bind at one moment, which Plan.Apply gives a
// new slice), and node health changes in place too (SetHealth).
//
// With Config.CheckIncremental every cycle also runs the from-scratch
// sched.Scheduler.Schedule on the same Snapshot, and Run fails with
// ErrIncremental when the two Plans differ.

// ErrIncremental is returned by Run when a Plan on the engine's Session
// differs from the from-scratch Plan (Config.CheckIncremental).
var ErrIncremental = sched.ErrIncremental

// SetHealth records a node's health in the fleet, which the next cycle
// tells the engine's Session, and asks for a cycle.
func (e *Engine) SetHealth(node string, health model.Health) error {
	for i := range e.cfg.Fleet.Nodes {
		n := &e.cfg.Fleet.Nodes[i]
		if n.Name != node {
			continue
		}
		if n.Health != health {
			n.Health = health
			e.dirty = true
		}
		return nil
	}
	return fmt.Errorf("engine: set health: node %q is not in the fleet", node)
}

// schedule is the Plan of the core over in at now, on the engine's Session.
func (e *Engine) schedule(in *sched.Snapshot, now time.Time) (sched.Plan, error) {
	return e.inc.Plan(in, now)
}
