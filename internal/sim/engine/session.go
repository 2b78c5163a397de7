package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// The core's state carried between cycles.
//
// A cycle plans on a sched.Session the engine keeps for the whole run,
// not on a Snapshot the core rebuilds whole. The engine is the driver and
// knows every change, but the jobs the core sees are not always its own:
// Config.Select offers only part of the running work (the trace replay
// offers the VCs where something changed), and Config.Input (strategy,
// operator policies) copies the jobs whose priority it rewrites and
// derives a new tenancy every cycle. So, as the server does
// (internal/server/session.go), the Session is told the difference
// between what the core is about to see and what it was told last:
//
//   - a job holding capacity that the Session does not hold: Hold;
//   - one it holds that is gone from the snapshot or no longer holds
//     (completed, stopped, preempted by the Plan just committed): Release;
//   - one given another priority by Input: Hold again (a change of spec);
//   - one whose status changed (a new checkpoint, other allocations after
//     a preemption and a bind at one moment), or another copy of it:
//     Update;
//   - a tenancy that differs: Reset (it keeps the work held).
//
// Node health changes come from the engine itself (SetHealth) and go to
// the Session at once. A Snapshot whose fleet is not the engine's, or
// which the Session refuses (a job twice), is planned from scratch and
// the Session built again at the next cycle.
//
// With Config.CheckIncremental every cycle also runs the from-scratch
// sched.Scheduler.Schedule on the same Snapshot, and Run fails with
// ErrIncremental when the two Plans differ.

// ErrIncremental is returned by Run when a Plan on the engine's Session
// differs from the from-scratch Plan (Config.CheckIncremental).
var ErrIncremental = errors.New("engine: incremental plan differs from the from-scratch plan")

// incremental is the engine's Session with what it was told.
type incremental struct {
	ss      *sched.Session
	fleet   *model.Fleet
	tenancy *model.Tenancy // what the Session was last Reset with
	held    map[string]*told
	mark    uint64 // counts syncs; told.seen is the last that found the job
}

// told is a job as the Session was told of it: the pointer it keeps, and
// what of it may change in place without the Session noticing.
type told struct {
	job        *model.Job
	state      model.State
	checkpoint time.Time
	allocs     []model.Allocation // kept, so its identity stays unique
	priority   model.Priority
	seen       uint64
}

// schedule is the Plan of the core over in at now: on the engine's
// Session, and also from scratch with Config.CheckIncremental.
func (e *Engine) schedule(in *sched.Snapshot, now time.Time) (sched.Plan, error) {
	inc := &e.inc
	queued, err := inc.sync(e.core, in)
	if err != nil {
		inc.drop()
		return e.core.Schedule(in, now), nil
	}
	plan := inc.ss.Schedule(queued, now)
	if !e.cfg.CheckIncremental {
		return plan, nil
	}
	full := e.core.Schedule(in, now)
	got, _ := json.Marshal(plan)
	want, _ := json.Marshal(full)
	if !bytes.Equal(got, want) {
		held := len(inc.held)
		inc.drop()
		return sched.Plan{}, fmt.Errorf("%w at %s (%d jobs held, %d queued):\nincremental %s\nscratch     %s",
			ErrIncremental, now.UTC().Format(time.RFC3339), held, len(queued), got, want)
	}
	return plan, nil
}

// drop forgets the Session: the next cycle builds a new one.
func (inc *incremental) drop() { *inc = incremental{} }

// sync tells the Session what changed in in since the last sync (a new
// Session when there is none) and returns in's queued jobs.
func (inc *incremental) sync(core *sched.Scheduler, in *sched.Snapshot) ([]*model.Job, error) {
	switch {
	case inc.ss == nil || inc.fleet != in.Fleet:
		inc.ss = core.NewSession(in.Fleet, in.Tenancy)
		inc.fleet, inc.tenancy, inc.held = in.Fleet, in.Tenancy, map[string]*told{}
	case inc.tenancy != in.Tenancy && !reflect.DeepEqual(inc.tenancy, in.Tenancy):
		inc.ss.Reset(in.Fleet, in.Tenancy)
		inc.tenancy = in.Tenancy
	default:
		inc.tenancy = in.Tenancy // alike: the next cycle compares with the newest
	}

	inc.mark++
	queued := make([]*model.Job, 0, max(len(in.Jobs)-len(inc.held), 0))
	seen := 0 // jobs of in that hold capacity
	for _, j := range in.Jobs {
		switch {
		case j.Status.State == model.StateQueued:
			queued = append(queued, j)
			continue
		case !j.Status.State.Holds():
			continue
		}
		seen++
		h := inc.held[j.ID]
		var err error
		switch {
		case h == nil:
			h = &told{}
			inc.held[j.ID] = h
			err = inc.ss.Hold(j)
		case h.seen == inc.mark:
			return nil, fmt.Errorf("job %s is twice in the snapshot", j.ID)
		case h.priority != j.Spec.Priority:
			err = inc.ss.Hold(j)
		case h.job == j && h.state == j.Status.State && h.checkpoint.Equal(j.Status.LastCheckpoint) &&
			sameSlice(h.allocs, j.Status.Allocations):
			h.seen = inc.mark
			continue // unchanged: the Session reads it in place
		default:
			err = inc.ss.Update(j)
		}
		if err != nil {
			return nil, err
		}
		*h = told{job: j, state: j.Status.State, checkpoint: j.Status.LastCheckpoint,
			allocs: j.Status.Allocations, priority: j.Spec.Priority, seen: inc.mark}
	}
	if seen < len(inc.held) { // some job stopped holding or left the snapshot
		for id, h := range inc.held {
			if h.seen != inc.mark {
				inc.ss.Release(id)
				delete(inc.held, id)
			}
		}
	}
	return queued, nil
}

// sameSlice reports whether a and b are the same allocations slice, not
// only alike: Plan.Apply gives every bind a new one.
func sameSlice(a, b []model.Allocation) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// SetHealth records a node's health, in the fleet and in the engine's
// Session, and asks for a cycle.
func (e *Engine) SetHealth(node string, health model.Health) error {
	for i := range e.cfg.Fleet.Nodes {
		n := &e.cfg.Fleet.Nodes[i]
		if n.Name != node {
			continue
		}
		if n.Health == health {
			return nil
		}
		n.Health = health
		e.dirty = true
		if e.inc.ss != nil && e.inc.fleet == e.cfg.Fleet {
			return e.inc.ss.SetHealth(node, health)
		}
		return nil
	}
	return fmt.Errorf("engine: set health: node %q is not in the fleet", node)
}
