package server

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
// Step 4 of a cycle plans on a sched.Session that the server keeps from one
// cycle to the next, instead of a Snapshot the core rebuilds whole. What the
// core is about to see (the snapshot after the strategy, the policies and
// coreView) is compared with what the Session was told, and only the
// differences are reported:
//
//   - a job holding capacity that the Session does not hold: Hold;
//   - one it holds that is gone from the snapshot or no longer holds:
//     Release;
//   - one whose record changed: Update (a status change: state,
//     checkpoint, allocations), or Hold again when the strategy or a
//     policy gave it another priority (a change of spec, which Update does
//     not promise to take);
//   - a node whose health changed: SetHealth;
//   - a tenancy that differs (a reservation made or deleted, the strategy
//     deriving other limits from it): Reset.
//
// The cache never changes a job record in place (cache.go), so a record
// that is the same pointer as last cycle is the same job. The strategy and
// the policies copy the records they rewrite each cycle, changing only the
// priority: a copy of the same record with the same priority is the same
// job to the core.
//
// The deltas are taken against the snapshot, not against what the cycle
// commits: a Plan that loses a race at commit, or a store that fails,
// leaves nothing to undo, since the next cycle compares again with what
// the cache then holds. A cycle that panics may leave the Session half
// told; the server then drops it and builds a new one at the next cycle,
// as it does after any failure but a commit conflict.
//
// With Config.CheckIncremental every cycle also runs the from-scratch
// Scheduler.Schedule on the same snapshot and fails with ErrIncremental
// when the two Plans differ.

// ErrIncremental is returned by a cycle whose Plan on the server's Session
// differs from the from-scratch Plan (Config.CheckIncremental). Run stops
// on it.
var ErrIncremental = errors.New("server: incremental plan differs from the from-scratch plan")

// incremental is the Session the cycles plan on, with what it was told.
// The server's cycleMu guards it.
type incremental struct {
	ss *sched.Session
	// fleet is the fleet whose node health the Session was last told;
	// health is that health, by node index.
	fleet  *model.Fleet
	health []model.Health
	// tenancy is what the Session was last Reset with.
	tenancy *model.Tenancy
	// held is what the Session was told holds capacity, by job ID.
	held map[string]*heldJob
	mark uint64 // counts syncs; heldJob.seen is the last that found the job
}

// heldJob is a job the Session was told of: the cache's record and the
// job as the core saw it (a copy when the strategy or a policy rewrote it).
type heldJob struct {
	record *model.Job
	job    *model.Job
	seen   uint64
}

// drop forgets the Session: the next cycle builds a new one.
func (inc *incremental) drop() { *inc = incremental{} }

// plan is step 4 of a cycle: the Plan of the core over in, on the
// server's Session brought in step with in. records are the cache's job
// records by ID. With Config.CheckIncremental it also plans from scratch
// and returns ErrIncremental when the Plans differ.
func (s *Server) plan(in *sched.Snapshot, records map[string]*model.Job, now time.Time) (sched.Plan, error) {
	inc := &s.inc
	queued, err := inc.sync(s.core, in, records)
	if err != nil {
		// A record the Session refuses (an allocation its node lacks) is
		// one the from-scratch core counts: plan from scratch this once.
		s.log.Warn("scheduling session out of step; planning from scratch", "err", err)
		inc.drop()
		return s.core.Schedule(in, now), nil
	}
	plan := inc.ss.Schedule(queued, now)
	if !s.cfg.CheckIncremental {
		return plan, nil
	}
	full := s.scratch.Schedule(in, now)
	got, _ := json.Marshal(plan)
	want, _ := json.Marshal(full)
	if !bytes.Equal(got, want) {
		held := len(inc.held)
		inc.drop()
		s.log.Error("incremental plan differs from the from-scratch plan", "incremental", string(got), "scratch", string(want))
		return sched.Plan{}, fmt.Errorf("%w at %s (%d jobs held, %d queued)", ErrIncremental,
			now.UTC().Format(time.RFC3339Nano), held, len(queued))
	}
	return plan, nil
}

// sync tells the Session what changed in in since the last sync (a new
// Session when there is none) and returns in's queued jobs.
func (inc *incremental) sync(core *sched.Scheduler, in *sched.Snapshot, records map[string]*model.Job) ([]*model.Job, error) {
	switch {
	case inc.ss == nil || !sameNodes(inc.fleet, in.Fleet):
		inc.ss = core.NewSession(in.Fleet, in.Tenancy)
		inc.fleet, inc.tenancy, inc.held = in.Fleet, in.Tenancy, map[string]*heldJob{}
		inc.health = inc.health[:0]
		for _, n := range in.Fleet.Nodes {
			inc.health = append(inc.health, n.Health)
		}
	case !sameTenancy(inc.tenancy, in.Tenancy):
		inc.ss.Reset(in.Fleet, in.Tenancy) // keeps the work held
		inc.fleet, inc.tenancy = in.Fleet, in.Tenancy
		for i, n := range in.Fleet.Nodes {
			inc.health[i] = n.Health
		}
	case inc.fleet != in.Fleet:
		for i, n := range in.Fleet.Nodes {
			if n.Health == inc.health[i] {
				continue
			}
			if err := inc.ss.SetHealth(n.Name, n.Health); err != nil {
				return nil, err
			}
			inc.health[i] = n.Health
		}
		inc.fleet = in.Fleet
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
		rec := records[j.ID]
		h := inc.held[j.ID]
		var err error
		switch {
		case h == nil:
			h = &heldJob{}
			inc.held[j.ID] = h
			err = inc.ss.Hold(j)
		case h.seen == inc.mark:
			return nil, fmt.Errorf("job %s is twice in the snapshot", j.ID)
		case h.job == j || (h.record == rec && h.job.Spec.Priority == j.Spec.Priority):
			h.seen = inc.mark
			continue // the same job: the Session keeps its copy
		case h.job.Spec.Priority != j.Spec.Priority:
			err = inc.ss.Hold(j)
		default:
			err = inc.ss.Update(j)
		}
		if err != nil {
			return nil, err
		}
		h.record, h.job, h.seen = rec, j, inc.mark
	}
	if seen < len(inc.held) { // some job stopped holding or left
		for id, h := range inc.held {
			if h.seen != inc.mark {
				inc.ss.Release(id)
				delete(inc.held, id)
			}
		}
	}
	return queued, nil
}

// sameNodes reports whether fleets a and b have the same nodes, health
// aside: the server's fleet never changes, and each world copies it with
// the nodes' recorded health.
func sameNodes(a, b *model.Fleet) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || len(a.Nodes) != len(b.Nodes) || len(a.Regions) != len(b.Regions) ||
		reflect.ValueOf(a.Catalog).UnsafePointer() != reflect.ValueOf(b.Catalog).UnsafePointer() ||
		(len(a.Regions) > 0 && &a.Regions[0] != &b.Regions[0]) {
		return false
	}
	for i := range a.Nodes {
		x, y := &a.Nodes[i], &b.Nodes[i]
		if x.Name != y.Name || x.SKU != y.SKU || x.Region != y.Region || x.Cluster != y.Cluster ||
			x.Leaf != y.Leaf || x.Rack != y.Rack || len(x.GPUIDs) != len(y.GPUIDs) ||
			(len(x.GPUIDs) > 0 && &x.GPUIDs[0] != &y.GPUIDs[0]) {
			return false
		}
	}
	return true
}

// sameTenancy reports whether tenancies a and b are alike. The strategy
// derives a new one every cycle (strategy.Apply), so pointers differ; a
// tenancy is small next to the fleet.
func sameTenancy(a, b *model.Tenancy) bool {
	return a == b || reflect.DeepEqual(a, b)
}
