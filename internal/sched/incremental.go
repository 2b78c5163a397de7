package sched

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// ErrIncremental is returned by Incremental.Plan, when it checks, for a
// Plan on its Session that differs from the from-scratch Plan.
var ErrIncremental = errors.New("sched: incremental plan differs from the from-scratch plan")

// Incremental plans each cycle on a Session that it keeps in step with the
// Snapshot of the cycle, the one a driver would hand Scheduler.Schedule.
// The live server and the simulation engine both plan this way: the jobs
// the core sees are not always the driver's own records (a strategy and
// operator policies copy the jobs whose priority they rewrite and derive a
// new tenancy every cycle; a simulator may offer only part of the running
// work), so what the core is about to see is compared with what the
// Session was told, and only the differences are told:
//
//   - fleet nodes other than before (other names, SKUs, places or GPUs):
//     a new Session; a node whose health changed: SetHealth;
//   - a tenancy that differs: Reset (it keeps the work held);
//   - a job holding capacity that the Session does not hold: Hold;
//   - one it holds that is gone from the Snapshot or no longer holds:
//     Release;
//   - one given another priority: Hold again (a change of spec, which
//     Update does not promise to take);
//   - one whose state, last checkpoint or allocations changed (a driver
//     gives every bind a new allocations slice): Update.
//
// Any other copy of a job the Session holds is the same job to the core:
// the Session keeps the copy it was told of. A Snapshot the Session
// refuses (a job twice, an allocation its node lacks) is planned from
// scratch, and the Session built again at the next cycle. An Incremental
// serves one goroutine.
type Incremental struct {
	core    *Scheduler
	scratch *Scheduler // the core without its Observer; nil unless checking
	// OnRefused, when not nil, is told why the Session refused a Snapshot
	// that Plan then planned from scratch.
	OnRefused func(error)

	ss      *Session
	fleet   *model.Fleet   // the fleet whose nodes and health the Session was told
	health  []model.Health // by node index
	tenancy *model.Tenancy // what the Session was last Reset with
	held    map[string]*told
	mark    uint64 // counts syncs; told.seen is the last that found the job
	resets  int
	queued  []*model.Job // scratch of sync: what it returns is read by one Plan
	// order is the jobs the last sync found holding, in the Snapshot's
	// order; spare is the list the next sync fills. A driver hands the
	// same copies in the same order cycle after cycle, so sync finds most
	// jobs by walking order instead of looking their IDs up in held.
	order, spare []*told
}

// told is a job as the Session was told of it: what of it may change
// without the Session noticing.
type told struct {
	state      model.State
	checkpoint time.Time
	allocs     []model.Allocation // kept, so its identity stays unique
	priority   model.Priority
	seen       uint64
	job        *model.Job // the copy of the job the last sync found
	at         int        // its place in that sync's order (Incremental.order)
}

// NewIncremental returns an Incremental planning with core. With check set
// every Plan is also made from scratch, and Plan fails with
// ErrIncremental when the two differ (tests; it doubles a cycle's work).
func NewIncremental(core *Scheduler, check bool) *Incremental {
	inc := &Incremental{core: core}
	if check {
		c := core.cfg
		c.Observer = nil
		inc.scratch = New(c)
	}
	return inc
}

// Drop forgets the Session: the next Plan builds a new one. A driver drops
// it after a cycle that failed part way, which may have left it half told.
func (inc *Incremental) Drop() {
	inc.ss, inc.fleet, inc.tenancy, inc.held = nil, nil, nil, nil
	inc.order, inc.spare = inc.order[:0], inc.spare[:0]
	inc.health = inc.health[:0]
}

// Held is how many jobs the Session was told hold capacity.
func (inc *Incremental) Held() int { return len(inc.held) }

// Session is the Session the next Plan starts from; nil before the first
// and after Drop.
func (inc *Incremental) Session() *Session { return inc.ss }

// Reserved is Session.Reserved of the last Plan's Session; nil before one.
func (inc *Incremental) Reserved() map[string][]string {
	if inc.ss == nil {
		return nil
	}
	return inc.ss.Reserved()
}

// Resets counts the Session's Resets (a tenancy that differed).
func (inc *Incremental) Resets() int { return inc.resets }

// Plan returns the core's Plan over in at now, made on the Session once it
// is told what changed since the last Plan.
func (inc *Incremental) Plan(in *Snapshot, now time.Time) (Plan, error) {
	queued, err := inc.sync(in)
	if err != nil {
		inc.Drop()
		if inc.OnRefused != nil {
			inc.OnRefused(err)
		}
		return inc.core.Schedule(in, now), nil
	}
	if !slices.Equal(inc.ss.headroom, in.Headroom) {
		inc.ss.SetHeadroom(in.Headroom)
	}
	if !sameImages(inc.ss.images, in.Images) {
		inc.ss.SetImages(in.Images)
	}
	plan := inc.ss.Schedule(queued, now)
	if inc.scratch == nil {
		return plan, nil
	}
	full := inc.scratch.Schedule(in, now)
	got, _ := json.Marshal(plan)
	want, _ := json.Marshal(full)
	if !bytes.Equal(got, want) {
		held := len(inc.held)
		inc.Drop()
		return Plan{}, fmt.Errorf("%w at %s (%d jobs held, %d queued):\nincremental %s\nscratch     %s",
			ErrIncremental, now.UTC().Format(time.RFC3339Nano), held, len(queued), got, want)
	}
	return plan, nil
}

// Recycle gives back p, the last Plan, once its caller is done with it
// (Session.Recycle); the caller must not read p after.
func (inc *Incremental) Recycle(p Plan) {
	if inc.ss != nil {
		inc.ss.Recycle(p)
	}
}

// sync tells the Session what changed in in since the last sync (a new
// Session when there is none) and returns in's queued jobs.
func (inc *Incremental) sync(in *Snapshot) ([]*model.Job, error) {
	switch {
	case inc.ss == nil || len(inc.health) != len(in.Fleet.Nodes) || !sameNodes(inc.fleet, in.Fleet):
		inc.ss = inc.core.NewSession(in.Fleet, in.Tenancy)
		inc.tenancy, inc.held = in.Tenancy, map[string]*told{}
		inc.recordHealth(in.Fleet)
	case inc.tenancy != in.Tenancy && !reflect.DeepEqual(inc.tenancy, in.Tenancy):
		inc.ss.Reset(in.Fleet, in.Tenancy) // keeps the work held
		inc.tenancy = in.Tenancy
		inc.resets++
		inc.recordHealth(in.Fleet)
	default:
		inc.tenancy = in.Tenancy // alike: the next sync compares with the newest
		// A driver may change health in place or hand a new copy of the
		// fleet: compare node by node.
		for i := range in.Fleet.Nodes {
			n := &in.Fleet.Nodes[i]
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
	queued := inc.queued[:0]
	defer func() { inc.queued = queued }()
	order, next := inc.order, inc.spare[:0]
	defer func() {
		clear(order)
		inc.order, inc.spare = next, order[:0]
	}()
	at := 0 // where in order the next holding job likely is
	for _, j := range in.Jobs {
		switch {
		case j.Status.State == model.StateQueued:
			queued = append(queued, j)
			continue
		case !j.Status.State.Holds():
			continue
		}
		var h *told
		if at < len(order) && order[at].job == j {
			h = order[at] // the copy the last sync found, in its place
			at++
		} else if h = inc.held[j.ID]; h != nil && h.seen != inc.mark {
			at = h.at + 1 // order goes on after it
		}
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
		case h.state == j.Status.State && h.checkpoint.Equal(j.Status.LastCheckpoint) && sameSlice(h.allocs, j.Status.Allocations):
			// The same job: the Session keeps the copy it has.
		default:
			err = inc.ss.Update(j)
		}
		if err != nil {
			return nil, err
		}
		*h = told{state: j.Status.State, checkpoint: j.Status.LastCheckpoint, allocs: j.Status.Allocations,
			priority: j.Spec.Priority, seen: inc.mark, job: j, at: len(next)}
		next = append(next, h)
	}
	seen := len(next)         // jobs of in that hold capacity
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

// recordHealth notes fleet's nodes' health as the Session's, after it was
// built or Reset from fleet.
func (inc *Incremental) recordHealth(fleet *model.Fleet) {
	inc.fleet, inc.health = fleet, inc.health[:0]
	for _, n := range fleet.Nodes {
		inc.health = append(inc.health, n.Health)
	}
}

// sameImages reports whether a and b say the same of the nodes' images:
// the same map (a driver hands the one it keeps while nothing changed),
// or maps alike.
func sameImages(a, b map[string][]string) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true
	}
	return maps.EqualFunc(a, b, slices.Equal)
}

// sameSlice reports whether a and b are the same allocations slice, not
// only alike.
func sameSlice(a, b []model.Allocation) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// sameNodes reports whether fleets a and b have the same nodes, health
// aside: a driver may hand the same fleet, or a copy of it with the nodes'
// recorded health, every cycle.
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
