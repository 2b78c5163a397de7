package sched_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// sessionDriver keeps a Session in step with a world the way a server's
// cache would: it reports each change it sees as a delta.
type sessionDriver struct {
	ss   *sched.Session
	rng  *rand.Rand
	held map[string]heldJob // what the Session was told holds, by job ID
	// health is what the Session was told of each node.
	health map[string]model.Health
}

type heldJob struct {
	job        *model.Job
	allocs     string // the allocations as the Session got them
	checkpoint time.Time
	state      model.State
}

func allocSig(j *model.Job) string {
	b, _ := json.Marshal(j.Status.Allocations)
	return string(b)
}

func newSessionDriver(s *sched.Scheduler, fleet *model.Fleet, tenancy *model.Tenancy, rng *rand.Rand) *sessionDriver {
	d := &sessionDriver{ss: s.NewSession(fleet, tenancy), rng: rng, held: map[string]heldJob{}, health: map[string]model.Health{}}
	d.syncHealth(fleet)
	return d
}

// copyJob is what a cache that decodes jobs from a store would hand the
// Session: changes the world makes in place later do not reach it unless
// reported.
func copyJob(j *model.Job) *model.Job {
	c := *j
	c.Status.Allocations = slices.Clone(j.Status.Allocations)
	for i := range c.Status.Allocations {
		c.Status.Allocations[i].GPUs = slices.Clone(c.Status.Allocations[i].GPUs)
	}
	return &c
}

func (d *sessionDriver) hold(j *model.Job) {
	if err := d.ss.Hold(copyJob(j)); err != nil {
		panic(err) // the world's allocations are the core's own
	}
	d.held[j.ID] = heldJob{job: j, allocs: allocSig(j), checkpoint: j.Status.LastCheckpoint, state: j.Status.State}
}

func (d *sessionDriver) release(id string) {
	d.ss.Release(id)
	delete(d.held, id)
}

// commit reports a committed Plan: preempted jobs stop holding, bound ones
// start.
func (d *sessionDriver) commit(p sched.Plan, jobs []*model.Job) {
	for _, pr := range p.Preemptions {
		d.release(pr.Job)
	}
	for _, b := range p.Binds {
		d.hold(jobByID(jobs, b.Job))
	}
	for _, r := range p.Resizes {
		d.hold(jobByID(jobs, r.Job)) // held anew with its new allocations
	}
}

// sync reports, in a random order, every change to jobs since the Session
// was last told: jobs that stopped holding or left, jobs that started
// holding or moved, checkpoints and states; and the health of each node.
func (d *sessionDriver) sync(fleet *model.Fleet, jobs []*model.Job) {
	byID := make(map[string]*model.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	var ids []string
	for id := range d.held {
		ids = append(ids, id)
	}
	for _, j := range jobs {
		if _, ok := d.held[j.ID]; !ok && j.Status.State.Holds() {
			ids = append(ids, j.ID)
		}
	}
	sort.Strings(ids)
	d.rng.Shuffle(len(ids), func(x, y int) { ids[x], ids[y] = ids[y], ids[x] })
	for _, id := range ids {
		j, h := byID[id], d.held[id]
		switch {
		case j == nil || !j.Status.State.Holds():
			d.release(id)
		case h.job == nil || allocSig(j) != h.allocs:
			d.hold(j)
		case !j.Status.LastCheckpoint.Equal(h.checkpoint) || j.Status.State != h.state:
			if err := d.ss.Update(copyJob(j)); err != nil {
				panic(err)
			}
			d.held[id] = heldJob{job: j, allocs: h.allocs, checkpoint: j.Status.LastCheckpoint, state: j.Status.State}
		}
	}
	d.syncHealth(fleet)
}

func (d *sessionDriver) syncHealth(fleet *model.Fleet) {
	for _, n := range fleet.Nodes {
		if d.health[n.Name] != n.Health {
			if err := d.ss.SetHealth(n.Name, n.Health); err != nil {
				panic(err)
			}
			d.health[n.Name] = n.Health
		}
	}
}

// reset gives the Session a new fleet or tenancy; it learns node health
// from the fleet itself.
func (d *sessionDriver) reset(fleet *model.Fleet, tenancy *model.Tenancy) {
	d.ss.Reset(fleet, tenancy)
	clear(d.health)
	for _, n := range fleet.Nodes {
		d.health[n.Name] = n.Health
	}
}

func queuedJobs(jobs []*model.Job) []*model.Job {
	var q []*model.Job
	for _, j := range jobs {
		if j.Status.State == model.StateQueued {
			q = append(q, j)
		}
	}
	return q
}

func planJSON(t *testing.T, p sched.Plan) []byte {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSessionMatchesSchedule drives thousands of random cycles (arrivals,
// completions, cancellations, preemptions, nodes failing and coming back,
// checkpoints, reservation windows opening and closing, tenants and nodes
// leaving and coming back, the clock jumping) through a Session fed by
// deltas and through Scheduler.Schedule on the whole Snapshot, and
// requires the same Plan from both, byte for byte: with the core's
// defaults, and with preemption for a better priority value on (jobs then
// get values of 0 to 5, drawn apart from the rest of the world, and the gap
// is 2).
func TestSessionMatchesSchedule(t *testing.T) {
	for _, gap := range []int{0, 2} {
		t.Run(fmt.Sprintf("gap=%d", gap), func(t *testing.T) { sessionMatchesSchedule(t, gap, 0) })
	}
	// A job that waited 30 minutes holds nodes (hold.go).
	t.Run("hold=30m", func(t *testing.T) { sessionMatchesSchedule(t, 0, 30*time.Minute) })
}

func sessionMatchesSchedule(t *testing.T, gap int, holdAfter time.Duration) {
	cycles := 20_000
	if testing.Short() {
		cycles = 2_000
	}
	w := randomWorld()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	values := rand.New(rand.NewPCG(7, 8))
	s := sched.New(sched.Config{MinRunTime: 5 * time.Minute, PriorityGap: gap, HoldAfter: holdAfter})
	fullTenancy := w.Tenancy
	fleet, tenancy := &w.Fleet, &w.Tenancy
	d := newSessionDriver(s, fleet, tenancy, rand.New(rand.NewPCG(5, 6)))
	clock := Epoch
	next, failures := 0, 0
	tenants := []string{"t1", "t2", "t3", "t4", "t5"}
	var stats struct{ binds, preemptions, better, yielded, resets, guests, orphans, holds, grew, shrank int }
	for c := 0; c < cycles; c++ {
		clock = clock.Add(time.Minute)
		if rng.IntN(200) == 0 {
			clock = clock.Add(time.Duration(rng.IntN(600)) * time.Minute)
		}
		w.Jobs = churn(w, rng, clock, &failures)
		before := slices.Clone(w.Tenancy.Reservations)
		churnReservations(w, rng, clock)
		changed := !slices.Equal(before, w.Tenancy.Reservations)
		// Now and then a tenant leaves the tenancy (its running work stays,
		// as after an edit) or comes back, and the last node leaves the
		// fleet with the work on it, or comes back.
		if rng.IntN(400) == 0 {
			if len(tenancy.Tenants) == len(fullTenancy.Tenants) {
				cut := *tenancy
				cut.Tenants = slices.DeleteFunc(slices.Clone(cut.Tenants), func(x model.Tenant) bool { return x.Name == "t5" })
				tenancy = &cut
			} else {
				tenancy = &w.Tenancy
			}
			changed = true
		}
		if rng.IntN(400) == 0 {
			if len(fleet.Nodes) == len(w.Fleet.Nodes) {
				cut := w.Fleet
				cut.Nodes = cut.Nodes[:len(cut.Nodes)-1]
				fleet = &cut
			} else {
				fleet = &w.Fleet
			}
			changed = true
		}
		if tenancy != &w.Tenancy {
			cut := *tenancy
			cut.Reservations = w.Tenancy.Reservations
			tenancy = &cut
		}
		for queued(w.Jobs) < 24 && rng.IntN(3) > 0 {
			next++
			randomJob(w, rng, fmt.Sprintf("j%d", next), tenants[rng.IntN(len(tenants))], clock)
			if gap > 0 {
				w.Jobs[len(w.Jobs)-1].Spec.Priority.Value = values.IntN(6)
			}
		}
		if changed {
			d.reset(fleet, tenancy)
			stats.resets++
		}
		d.sync(fleet, w.Jobs)
		if got, want := d.ss.Holding(), holding(w.Jobs); got != want {
			t.Fatalf("cycle %d: the Session holds %d jobs, the world %d", c, got, want)
		}
		if tenancy != &w.Tenancy && holdingOf(w.Jobs, "t5") > 0 {
			stats.guests++
		}
		if fleet != &w.Fleet && len(d.ss.Running()) < holding(w.Jobs) {
			stats.orphans++
		}
		want := s.Schedule(&sched.Snapshot{Fleet: fleet, Tenancy: tenancy, Jobs: w.Jobs}, clock)
		got := d.ss.Schedule(queuedJobs(w.Jobs), clock)
		if g, x := planJSON(t, got), planJSON(t, want); !bytes.Equal(g, x) {
			t.Fatalf("cycle %d at %s: the Session's Plan differs from Schedule's\nsession:  %s\nschedule: %s", c, clock, g, x)
		}
		stats.binds += len(want.Binds)
		stats.preemptions += len(want.Preemptions)
		for _, r := range want.Resizes {
			if r.Grows() {
				stats.grew++
			} else {
				stats.shrank++
			}
		}
		for _, p := range want.Preemptions {
			switch p.Reason {
			case sched.BetterPriority:
				stats.better++
			case sched.HeldNodes:
				stats.yielded++
			}
		}
		for _, p := range want.Pending {
			if strings.Contains(p.Detail, "are kept for it") {
				stats.holds++
			}
		}
		if err := want.Apply(w.Jobs, clock); err != nil {
			t.Fatalf("cycle %d: %v", c, err)
		}
		d.commit(want, w.Jobs)
	}
	t.Logf("%d cycles: %d binds, %d preemptions (%d for a better value, %d off held nodes), %d node failures, %d resets, %d cycles with guest work, %d with work off the fleet, %d with a job holding nodes, %d growths and %d shrinks of elastic jobs",
		cycles, stats.binds, stats.preemptions, stats.better, stats.yielded, failures, stats.resets, stats.guests, stats.orphans, stats.holds, stats.grew, stats.shrank)
	if stats.binds == 0 || stats.preemptions == 0 || stats.grew == 0 || stats.shrank == 0 || failures == 0 || stats.resets == 0 || stats.guests == 0 || stats.orphans == 0 ||
		(gap > 0) != (stats.better > 0) || (holdAfter > 0) != (stats.holds > 0) || (holdAfter > 0) != (stats.yielded > 0) {
		t.Fatalf("the random world did not exercise the Session: %+v, %d failures", stats, failures)
	}
}

// TestSessionMatchesScheduleBusy compares the Session and Schedule on the
// busy world of `allot bench sched`, small, whose full victim lists,
// reservations and gangs the tiny random world does not reach.
func TestSessionMatchesScheduleBusy(t *testing.T) {
	cycles := 40
	if testing.Short() {
		cycles = 8
	}
	b, err := NewBusy(BusyConfig{Nodes: 400, Pending: 600, Fill: 0.9, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	w := b.World
	d := newSessionDriver(s, &w.Fleet, &w.Tenancy, rand.New(rand.NewPCG(7, 8)))
	preemptions := 0
	for c := 0; c <= cycles; c++ {
		if c > 0 {
			b.Step()
		}
		d.sync(&w.Fleet, w.Jobs)
		want := s.Schedule(w.Snapshot(), b.Now)
		got := d.ss.Schedule(queuedJobs(w.Jobs), b.Now)
		if g, x := planJSON(t, got), planJSON(t, want); !bytes.Equal(g, x) {
			t.Fatalf("cycle %d: the Session's Plan differs from Schedule's\nsession:  %s\nschedule: %s", c, g, x)
		}
		preemptions += len(want.Preemptions)
		if err := b.Apply(want); err != nil {
			t.Fatal(err)
		}
		d.commit(want, w.Jobs)
	}
	if preemptions == 0 {
		t.Fatal("no preemption: the busy world did not exercise the victim lists")
	}
}

func holding(jobs []*model.Job) int {
	n := 0
	for _, j := range jobs {
		if j.Status.State.Holds() && len(j.Status.Allocations) > 0 {
			n++
		}
	}
	return n
}

func holdingOf(jobs []*model.Job, tenant string) int {
	n := 0
	for _, j := range jobs {
		if j.Status.State.Holds() && j.Spec.Tenant == tenant {
			n++
		}
	}
	return n
}

// panicky is BinPack that panics once when armed, as a core bug would in
// the middle of a cycle.
type panicky struct {
	sched.BinPack
	armed bool
}

func (p *panicky) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	if p.armed {
		p.armed = false
		panic("scorer bug")
	}
	return p.BinPack.Score(n, r)
}

// A cycle that panics half way leaves the Session to rebuild from the
// work it was told of: the next Plan is Schedule's again.
func TestSessionAfterPanic(t *testing.T) {
	w := randomWorld()
	rng := rand.New(rand.NewPCG(9, 10))
	bug := &panicky{}
	s := sched.New(sched.Config{MinRunTime: 5 * time.Minute})
	// The Session gets a fleet of its own: the world's nodes change health
	// in place, and a rebuild after a panic must learn it from SetHealth.
	fleet := w.Fleet
	fleet.Nodes = slices.Clone(w.Fleet.Nodes)
	d := newSessionDriver(sched.New(sched.Config{MinRunTime: 5 * time.Minute, Scorer: bug}), &fleet, &w.Tenancy, rng)
	clock, next, failures, panics := Epoch, 0, 0, 0
	for c := 0; c < 300; c++ {
		clock = clock.Add(time.Minute)
		w.Jobs = churn(w, rng, clock, &failures)
		for queued(w.Jobs) < 24 {
			next++
			randomJob(w, rng, fmt.Sprintf("j%d", next), []string{"t1", "t2", "t3", "t4"}[rng.IntN(4)], clock)
		}
		d.sync(&w.Fleet, w.Jobs)
		if c%7 == 3 {
			bug.armed = true
			func() {
				defer func() {
					if recover() != nil {
						panics++
					}
				}()
				d.ss.Schedule(queuedJobs(w.Jobs), clock)
			}()
			bug.armed = false
		}
		want := s.Schedule(w.Snapshot(), clock)
		got := d.ss.Schedule(queuedJobs(w.Jobs), clock)
		if g, x := planJSON(t, got), planJSON(t, want); !bytes.Equal(g, x) {
			t.Fatalf("cycle %d: the Session's Plan differs from Schedule's\nsession:  %s\nschedule: %s", c, g, x)
		}
		if err := want.Apply(w.Jobs, clock); err != nil {
			t.Fatal(err)
		}
		d.commit(want, w.Jobs)
	}
	if panics == 0 {
		t.Fatal("the scorer never panicked")
	}
}
