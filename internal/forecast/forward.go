package forecast

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Options bound a forward run. Zero fields take the defaults below.
type Options struct {
	// Horizon is how far past now the run looks.
	Horizon time.Duration
	// MaxEvents is how many core cycles one run may take; zero means as
	// many as DefaultWork allows on the snapshot (see Events).
	MaxEvents int
	// MaxQueue is how many queued jobs one run carries.
	MaxQueue int
	// UnknownRunTime is how long running work without a duration is
	// assumed to run from its start; zero means it never ends.
	UnknownRunTime time.Duration
	// RunTime, when not nil, estimates how long job j, which states no
	// duration, runs from its start, and names the basis of the estimate
	// ("the median of 3 runs of research/train"); zero when it cannot
	// say, and UnknownRunTime applies. The server estimates from the runs
	// of similar jobs and bounds by the job's retry timeout. It must be
	// pure for the length of a run.
	RunTime func(j *model.Job) (d time.Duration, basis string)
	// Prepare, when not nil, is what the driver does to a Snapshot
	// before its core sees it at a time (the server applies the fleet's
	// sharing strategy). Each run applies it to the jobs once, at the time
	// it starts, what-if copies included, and to the tenancy at every
	// cycle's time, which it may read (static fences borrowing by the
	// reservations active then). It must be pure.
	Prepare func(*sched.Snapshot, time.Time) *sched.Snapshot
}

// Defaults of Options. A core cycle costs about in proportion to the nodes
// and jobs it looks at, so when MaxEvents is zero a run may take
// DefaultWork / (nodes + jobs carried) cycles, between MinEvents and
// MaxEventsCap: every event of a long queue on the example fleet (about a
// millisecond in all), MinEvents on a 10,000-GPU fleet 90 % full (some 5 ms
// a cycle: about 120 ms for an estimate and, with PerRegion's half budget,
// 180 ms for three regions; see BenchmarkForecast).
const (
	DefaultHorizon  = 7 * 24 * time.Hour
	DefaultWork     = 50_000
	MinEvents       = 24
	MaxEventsCap    = 400
	DefaultMaxQueue = 256
)

func (o Options) withDefaults() Options {
	if o.Horizon <= 0 {
		o.Horizon = DefaultHorizon
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	return o
}

// Estimate is when one queued job is expected to start.
type Estimate struct {
	// Start is the estimated start; zero when there is none.
	Start time.Time
	// Why says, when Start is zero, why there is no estimate.
	Why string
	// How says how the estimate was made: the run and its assumptions.
	How string
}

// Known reports whether the estimate has a start.
func (e Estimate) Known() bool { return !e.Start.IsZero() }

// Forecaster runs one core configuration forward.
type Forecaster struct {
	core *sched.Scheduler
	cfg  sched.Config
	opts Options
}

// New returns a Forecaster that runs the core with cfg (as the driver
// runs it) within opts.
func New(cfg sched.Config, opts Options) *Forecaster {
	return &Forecaster{core: sched.New(cfg), cfg: cfg, opts: opts.withDefaults()}
}

// Options returns the bounds the Forecaster runs within.
func (f *Forecaster) Options() Options { return f.opts }

// Events is how many cycles a run on snap may take: Options.MaxEvents, or
// when that is zero DefaultWork over the nodes and jobs of snap (queued
// jobs counted up to MaxQueue), between MinEvents and MaxEventsCap.
func (f *Forecaster) Events(snap *sched.Snapshot) int {
	if f.opts.MaxEvents > 0 {
		return f.opts.MaxEvents
	}
	queued, size := 0, len(snap.Fleet.Nodes)
	for _, j := range snap.Jobs {
		switch {
		case j.Status.State == model.StateQueued:
			queued++
		case j.Status.State.Holds():
			size++
		}
	}
	size += min(queued, f.opts.MaxQueue)
	return min(max(DefaultWork/max(size, 1), MinEvents), MaxEventsCap)
}

// Starts runs the core forward from now on snap and returns the estimate
// of each queued job named in ids (every queued job carried when ids is
// empty). The run stops early once each of them has started.
func (f *Forecaster) Starts(snap *sched.Snapshot, now time.Time, ids ...string) map[string]Estimate {
	r := f.newRun(snap, now, ids)
	r.forward()
	return r.estimates()
}

// run is the state of one forward run: copies of the jobs whose status the
// run changes, and what it learned.
type run struct {
	f         *Forecaster
	snap      *sched.Snapshot
	raw       *model.Tenancy // the tenancy before Prepare
	ten       *model.Tenancy // Prepare's tenancy at tenAt
	tenAt     time.Time
	now, t    time.Time
	jobs      []*model.Job
	ends      map[string]time.Time // holding job -> when it frees its capacity; absent: never
	targets   map[string]bool
	started   map[string]time.Time
	last      map[string]sched.Pending // the latest pending reason of each target
	held      map[string]bool          // targets held back until released
	events    int
	maxEvents int
	window    time.Duration // events this close after the next are taken with it (coalesce)
	// awaiting is set when the last cycle left a job waiting for
	// protected work: the ends of protection are events then.
	awaiting bool
	stop     string         // why the run stopped before every target started
	cut      int            // queued jobs left out by MaxQueue
	bases    map[string]int // jobs without a duration that end by RunTime's estimate, by its basis
}

func (f *Forecaster) newRun(snap *sched.Snapshot, now time.Time, ids []string) *run {
	raw := snap.Tenancy
	if f.opts.Prepare != nil {
		snap = f.opts.Prepare(snap, now)
	}
	r := &run{f: f, snap: snap, raw: raw, ten: snap.Tenancy, tenAt: now, now: now, t: now, maxEvents: f.Events(snap), ends: map[string]time.Time{}, targets: map[string]bool{},
		started: map[string]time.Time{}, last: map[string]sched.Pending{}, held: map[string]bool{}}
	for _, id := range ids {
		r.targets[id] = true
	}
	var queued []*model.Job
	for _, j := range snap.Jobs {
		st := j.Status.State
		if st != model.StateQueued && !st.Holds() {
			continue
		}
		c := *j // the run changes only Status fields that Apply replaces whole
		switch {
		case st == model.StateQueued && j.Status.Held:
			// Held back until released: the core never sees it.
			if r.targets[j.ID] {
				r.held[j.ID] = true
			}
			continue
		case st == model.StateQueued:
			queued = append(queued, &c)
			continue
		case st == model.StatePreempted:
			r.ends[c.ID] = later(preemptedFree(&c), now)
		default:
			if end, ok := r.endOf(&c); ok {
				r.ends[c.ID] = later(end, now)
			}
		}
		r.jobs = append(r.jobs, &c)
	}
	if len(queued) > f.opts.MaxQueue {
		sort.SliceStable(queued, func(a, b int) bool { return ahead(queued[a], queued[b]) })
		room := f.opts.MaxQueue
		for _, j := range queued {
			if r.targets[j.ID] {
				room--
			}
		}
		kept := queued[:0]
		for _, j := range queued {
			switch {
			case r.targets[j.ID]:
				kept = append(kept, j)
			case room > 0:
				kept = append(kept, j)
				room--
			default:
				r.cut++
			}
		}
		queued = kept
	}
	if len(ids) == 0 {
		for _, j := range queued {
			r.targets[j.ID] = true
		}
	}
	r.jobs = append(r.jobs, queued...)
	return r
}

// ahead orders queued jobs for MaxQueue: higher class, then higher
// priority, then earlier submit, then ID.
func ahead(a, b *model.Job) bool {
	if a.Spec.Priority != b.Spec.Priority {
		return b.Spec.Priority.Less(a.Spec.Priority)
	}
	if !a.Status.SubmittedAt.Equal(b.Status.SubmittedAt) {
		return a.Status.SubmittedAt.Before(b.Status.SubmittedAt)
	}
	return a.ID < b.ID
}

// endOf is when running job j is assumed to end, and whether it ends.
// An estimate of Options.RunTime is counted by its basis, for How.
func (r *run) endOf(j *model.Job) (time.Time, bool) {
	if j.Spec.Duration > 0 {
		return j.Status.StartedAt.Add(j.Spec.Duration), true
	}
	if r.f.opts.RunTime != nil {
		if d, basis := r.f.opts.RunTime(j); d > 0 {
			if r.bases == nil {
				r.bases = map[string]int{}
			}
			r.bases[basisKind(basis)]++
			return j.Status.StartedAt.Add(d), true
		}
	}
	if r.f.opts.UnknownRunTime > 0 {
		return j.Status.StartedAt.Add(r.f.opts.UnknownRunTime), true
	}
	return time.Time{}, false
}

// basisKind is a basis without what follows its first colon: "the
// median of 3 runs: research/train" counts as "the median of 3 runs".
func basisKind(basis string) string {
	if i := strings.IndexByte(basis, ':'); i >= 0 {
		return basis[:i]
	}
	return basis
}

// preemptedFree is when a preempted job's processes are surely gone: its
// attempt's end plus its checkpoint grace.
func preemptedFree(j *model.Job) time.Time {
	end := j.Status.StartedAt
	if n := len(j.Status.Attempts); n > 0 && !j.Status.Attempts[n-1].Ended.IsZero() {
		end = j.Status.Attempts[n-1].Ended
	}
	return end.Add(j.Spec.Checkpoint.GraceOrDefault())
}

func later(t, floor time.Time) time.Time {
	if t.Before(floor) {
		return floor
	}
	return t
}

// forward steps from event to event until every target started or a bound
// is reached.
func (r *run) forward() {
	horizon := r.now.Add(r.f.opts.Horizon)
	for {
		r.release()
		plan := r.cycle()
		if r.allStarted() {
			return
		}
		next, ok := r.next(plan)
		if open, waits := r.windowOpens(); waits && (!ok || open.After(next)) {
			// Nothing before the window opens can start the jobs asked
			// about: go there at once, however far.
			next, ok = open, true
			horizon = later(horizon, open.Add(r.f.opts.Horizon))
		}
		switch {
		case !ok:
			r.stop = "nothing left to happen: no running work is expected to end and no reservation window changes"
			return
		case next.After(horizon):
			r.stop = fmt.Sprintf("no start within the horizon of %s", span(r.f.opts.Horizon))
			return
		case r.events >= r.maxEvents:
			r.stop = fmt.Sprintf("no start within %d events (to %s)", r.events, stamp(r.t))
			return
		}
		r.t = r.coalesce(next, horizon)
	}
}

// coalesce returns the moment of the next cycle, given the next event.
// Through the first half of the run's cycles every event gets its own cycle;
// after that the events within a window after next are taken together, at
// the latest of them, the window half the time the run has covered (at
// least a minute), so that each cycle reaches half again as far and a
// long queue on a busy fleet is still reached within the bound. An
// estimate is then late by at most the window: a third of its distance
// from now.
func (r *run) coalesce(next, horizon time.Time) time.Time {
	if r.events < r.maxEvents/2 {
		return next
	}
	r.window = max(time.Minute, r.t.Sub(r.now)/2)
	until := next.Add(r.window)
	if until.After(horizon) {
		until = horizon
	}
	last := next
	for {
		n, ok := r.after(last)
		if !ok || n.After(until) {
			return last
		}
		last = n
	}
}

// tenancy is the tenancy the core is given at r.t: Prepare's at r.t, which
// may differ from the one the run started with once a reservation's window
// opens or closes.
func (r *run) tenancy() *model.Tenancy {
	if r.f.opts.Prepare != nil && !r.tenAt.Equal(r.t) {
		r.ten = r.f.opts.Prepare(&sched.Snapshot{Fleet: r.snap.Fleet, Tenancy: r.raw}, r.t).Tenancy
		r.tenAt = r.t
	}
	return r.ten
}

// windowOpens returns the earliest opening of the reservation windows that
// the jobs asked about and not started yet wait for, when each of them
// waits for one (the core said ReservationNotActive and its reservation's
// window starts after r.t).
func (r *run) windowOpens() (time.Time, bool) {
	var open time.Time
	for id := range r.targets {
		if _, ok := r.started[id]; ok || r.held[id] {
			continue
		}
		p, ok := r.last[id]
		if !ok || p.Reason != sched.ReservationNotActive {
			return time.Time{}, false
		}
		start, ok := r.windowStart(id)
		if !ok {
			return time.Time{}, false
		}
		if open.IsZero() || start.Before(open) {
			open = start
		}
	}
	return open, !open.IsZero()
}

// windowStart is when the window of the reservation job id names opens,
// if that is after r.t.
func (r *run) windowStart(id string) (time.Time, bool) {
	for _, j := range r.jobs {
		if j.ID != id || j.Spec.Placement.Reservation == "" {
			continue
		}
		for _, res := range r.snap.Tenancy.Reservations {
			if res.Name == j.Spec.Placement.Reservation && res.Start.After(r.t) {
				return res.Start, true
			}
		}
	}
	return time.Time{}, false
}

// release ends the work due by r.t: finished jobs leave, preempted ones go
// back to the queue.
func (r *run) release() {
	kept := r.jobs[:0]
	for _, j := range r.jobs {
		end, ok := r.ends[j.ID]
		if !ok || end.After(r.t) {
			kept = append(kept, j)
			continue
		}
		delete(r.ends, j.ID)
		if j.Status.State == model.StatePreempted {
			j.Status.State = model.StateQueued
			j.Status.Allocations = nil
			kept = append(kept, j)
		}
	}
	r.jobs = kept
}

// cycle runs the core once at r.t and commits its Plan to the run's jobs.
func (r *run) cycle() sched.Plan {
	r.events++
	input := make([]*model.Job, 0, len(r.jobs))
	for _, j := range r.jobs {
		if j.Status.State == model.StateQueued && r.t.Before(j.HeldUntil()) {
			continue
		}
		input = append(input, j)
	}
	plan := r.f.core.Schedule(&sched.Snapshot{Fleet: r.snap.Fleet, Tenancy: r.tenancy(), Jobs: input}, r.t)
	if err := plan.Apply(input, r.t); err != nil {
		// The core planned on exactly these jobs: it cannot name others.
		panic(fmt.Sprintf("forecast: apply plan: %v", err))
	}
	for _, p := range plan.Preemptions {
		delete(r.ends, p.Job)
	}
	byID := make(map[string]*model.Job, len(plan.Binds))
	for _, b := range plan.Binds {
		byID[b.Job] = nil
	}
	for _, j := range input {
		if _, ok := byID[j.ID]; ok {
			if end, ends := r.endOf(j); ends {
				r.ends[j.ID] = end
			}
			if _, seen := r.started[j.ID]; !seen && r.targets[j.ID] {
				r.started[j.ID] = r.t
			}
		}
	}
	for _, p := range plan.Pending {
		if r.targets[p.Job] {
			r.last[p.Job] = p
		}
	}
	return plan
}

func (r *run) allStarted() bool { return len(r.started)+len(r.held) == len(r.targets) }

// next returns the first event after r.t, if any, noting whether the
// core said a job waits for protected work.
func (r *run) next(plan sched.Plan) (time.Time, bool) {
	r.awaiting = false
	for _, p := range plan.Pending {
		r.awaiting = r.awaiting || p.Reason == sched.AwaitingPreemption
	}
	return r.after(r.t)
}

// after returns the first event after from, if any.
func (r *run) after(from time.Time) (time.Time, bool) {
	var best time.Time
	consider := func(t time.Time) {
		if t.After(from) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	for _, end := range r.ends {
		consider(end)
	}
	for _, res := range r.snap.Tenancy.Reservations {
		consider(res.Start)
		consider(res.End)
	}
	for _, j := range r.jobs {
		if j.Status.State == model.StateQueued {
			consider(j.HeldUntil())
		}
	}
	if r.awaiting && !r.f.cfg.DisablePreemption {
		for _, j := range r.jobs {
			if j.Status.State == model.StateRunning {
				consider(j.Status.StartedAt.Add(r.f.cfg.MinRunTime))
			}
		}
	}
	return best, !best.IsZero()
}

// estimates turns what the run learned into one Estimate per target.
func (r *run) estimates() map[string]Estimate {
	out := make(map[string]Estimate, len(r.targets))
	how := r.how()
	for id := range r.targets {
		e := Estimate{How: how}
		if t, ok := r.started[id]; ok {
			e.Start = t
		} else if r.held[id] {
			e.Why = "the job is held: it starts only once released"
		} else {
			e.Why = r.stop
			if p, ok := r.last[id]; ok {
				e.Why = fmt.Sprintf("%s; the core says %s: %s", r.stop, p.Reason, p.Detail)
			}
		}
		out[id] = e
	}
	return out
}

func (r *run) how() string {
	s := fmt.Sprintf("core run forward over %d events from %s to %s", r.events, stamp(r.now), stamp(r.t))
	s += "; assumes running jobs end at their duration"
	if len(r.bases) > 0 {
		kinds := make([]string, 0, len(r.bases))
		for k, n := range r.bases {
			kinds = append(kinds, fmt.Sprintf("%d by %s", n, k))
		}
		sort.Strings(kinds)
		s += ", those without one when estimated (" + strings.Join(kinds, ", ") + ")"
		if r.f.opts.UnknownRunTime > 0 {
			s += fmt.Sprintf(", else after %s", span(r.f.opts.UnknownRunTime))
		} else {
			s += ", else never"
		}
	} else if r.f.opts.UnknownRunTime > 0 {
		s += fmt.Sprintf(", those without one after %s", span(r.f.opts.UnknownRunTime))
	} else {
		s += ", those without one never"
	}
	s += ", and no new submits"
	if r.window > 0 {
		s += fmt.Sprintf("; events after the first %d taken together in windows of up to %s", r.maxEvents/2, span(r.window))
	}
	if r.cut > 0 {
		s += fmt.Sprintf("; %d queued jobs beyond the first %d left out", r.cut, r.f.opts.MaxQueue)
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04Z") }

// span writes d in the largest whole unit that fits: 7d, 36h, 15m, 40s.
func span(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
