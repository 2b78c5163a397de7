package engine

import (
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Config is what one run needs.
type Config struct {
	Fleet   *model.Fleet
	Tenancy *model.Tenancy
	Core    sched.Config
	Start   time.Time
	// Input, when not nil, turns the engine's Snapshot into the one the
	// core schedules (the strategy, then operator policies, as the
	// server's cycle does). It must not change what it is given.
	Input func(snap *sched.Snapshot, now time.Time) *sched.Snapshot
	// Recorder is told what happens; nil records nothing.
	Recorder Recorder
	// Rounds bounds the cycles at one moment (a cycle that preempts is
	// followed by another); 0 means 8.
	Rounds int
	// Select, when not nil, picks the jobs of a cycle's Snapshot (a driver
	// that offers the core only the part of its queue that can start, as
	// the trace replay does); it sets the LastCheckpoint of the running
	// jobs it picks. A selection without a queued job skips the cycle.
	// Nil means every live job, running ones with their LastCheckpoint
	// from their checkpoint interval.
	Select func(now time.Time) []*model.Job
	// RunFor, when not nil, says how long a job bound at now runs before
	// it completes (a driver that slows work by its placement), after
	// Recorder.Started; the driver then accounts for preempted work
	// itself. Nil means the job's remaining work, less what preemptions
	// lost since each attempt's last checkpoint.
	RunFor func(j *model.Job, now time.Time) time.Duration
	// Speed, when not nil, is how much work a job bound as j is does per
	// second of the clock (a driver whose GPU models differ in speed: the
	// work is at the reference speed 1); it is asked at every start and
	// resize, after the Recorder heard of it. Nil, or a result that is not
	// positive, is 1. Ignored with RunFor.
	Speed func(j *model.Job) float64
	// ScalingEfficiency is what an elastic job (model.Elastic) keeps of
	// each doubling of its instances: at n instances it runs
	// Scaling(ScalingEfficiency, n, base) times as fast as at its base
	// size (its MinInstances), times Speed. 0 means
	// DefaultScalingEfficiency. A job at its base size runs at Speed.
	ScalingEfficiency float64
	// Period, when positive, is the core's cycle period: what changes
	// between two boundaries of it (counted from Start) is scheduled
	// together at the next boundary, as a server whose cycles run on a
	// tick does. 0 runs a cycle at the moment of every change.
	Period time.Duration
	// Checkpoints is where a preempted job's checkpoint lies, which
	// decides whether its next attempt keeps the work saved; the zero
	// value is CheckpointsShared. Ignored with RunFor.
	Checkpoints Checkpoints
	// CheckIncremental also plans every cycle from scratch and makes Run
	// fail with ErrIncremental when that Plan differs from the one on
	// the engine's sched.Session (session.go). For tests.
	CheckIncremental bool
}

// Recorder watches a run. Its methods are called on the engine's
// goroutine; they must not change the jobs they are given.
type Recorder interface {
	// Advance: the clock moves from from to to; Engine.Holding tells
	// what held capacity meanwhile.
	Advance(from, to time.Time)
	// Started: j was bound at now (its Allocations are set).
	Started(j *model.Job, now time.Time)
	// Preempted: j was evicted at now and is queued again.
	Preempted(j *model.Job, p sched.Preemption, now time.Time)
	// Ended: j finished its work (Succeeded) or was stopped (Canceled).
	Ended(j *model.Job, now time.Time)
}

// Checkpoints says where the checkpoints of preempted jobs lie.
type Checkpoints int

const (
	// CheckpointsShared: on storage every node reaches; the next attempt
	// keeps the work saved wherever it runs.
	CheckpointsShared Checkpoints = iota
	// CheckpointsLocal: on the disk of the node of the lost attempt's
	// first instance, as allot's agents keep them, and the core is told
	// (JobStatus.CheckpointNode): the next attempt keeps the work saved
	// only when its first instance runs on that node.
	CheckpointsLocal
	// CheckpointsLocalUntold: as CheckpointsLocal, but the core is not told
	// where, so placement ignores it (allot before it recorded checkpoint
	// nodes).
	CheckpointsLocalUntold
)

var checkpointsNames = []string{"shared", "local", "local-untold"}

func (c Checkpoints) String() string {
	if int(c) < len(checkpointsNames) {
		return checkpointsNames[c]
	}
	return fmt.Sprintf("Checkpoints(%d)", int(c))
}

// ParseCheckpoints reads "shared", "local" or "local-untold".
func ParseCheckpoints(s string) (Checkpoints, error) {
	if i := slices.Index(checkpointsNames, s); i >= 0 {
		return Checkpoints(i), nil
	}
	return 0, fmt.Errorf("%q: want shared, local or local-untold", s)
}

// ResizeRecorder is a Recorder told of the resizes of elastic jobs
// (sched.Resize): j's attempt ended at now and the next started with its
// new Allocations, from its last checkpoint. A Recorder that keeps books
// of what each job holds must be one when the work may be elastic; the
// engine's own progress follows the resize either way.
type ResizeRecorder interface {
	Resized(j *model.Job, r sched.Resize, now time.Time)
}

// RestartRecorder is a Recorder told, with local checkpoints, where a job
// that had saved work restarts: on the node of its checkpoint (home), or
// away from it, redoing gpuSeconds (the work saved times the job's GPUs).
type RestartRecorder interface {
	Restarted(j *model.Job, home bool, gpuSeconds float64, now time.Time)
}

// Forever is the work of a job that runs until it is stopped (a replica).
const Forever time.Duration = -1

// Engine is one simulation run.
type Engine struct {
	cfg    Config
	now    time.Time
	events eventQueue
	seq    int
	live   []*entry // queued and holding jobs in submit order; nil where one ended
	dead   int      // nil entries in live
	byID   map[string]*entry
	n      int // jobs submitted
	dirty  bool
	wake   time.Time // a cycle is due then (protection ends); zero for none
	// elastic holds the live elastic jobs; grow is when the first of those
	// running below their maximum may grow (their resize interval ends),
	// zero for none (elastic.go).
	elastic map[*entry]bool
	grow    time.Time
	cycles  int
	idle    int
	abort   error
	inc     *sched.Incremental // the core's state carried between cycles (session.go)
	snap    []*model.Job       // scratch of snapshotJobs
	guards  guardQueue         // the running attempts' ends of protection (wakeForProtection)
}

// entry is one job with what the engine knows of its work.
type entry struct {
	job       *model.Job
	remaining time.Duration // work left at the reference speed; Forever runs until stopped
	speed     float64       // work per second of the attempt running (Config.Speed)
	gen       int           // bumps at every start and stop, to drop stale completions
	n         int           // submit order, to order completions of one moment
	pos       int           // index in live
	// With local checkpoints: work is the job's whole work, from the
	// work its attempt resumed from, and saved the work of its last
	// checkpoint, which lies on node savedOn.
	work, from, saved time.Duration
	savedOn           string
}

// New returns an engine at cfg.Start with nothing submitted.
func New(cfg Config) *Engine {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 8
	}
	if cfg.ScalingEfficiency <= 0 {
		cfg.ScalingEfficiency = DefaultScalingEfficiency
	}
	return &Engine{cfg: cfg, inc: sched.NewIncremental(sched.New(cfg.Core), cfg.CheckIncremental), now: cfg.Start, byID: map[string]*entry{},
		elastic: map[*entry]bool{}}
}

// Now is the virtual clock.
func (e *Engine) Now() time.Time { return e.now }

// Cycles is how many times the core ran; Idle how many of them neither
// bound nor preempted anything.
func (e *Engine) Cycles() int { return e.cycles }

// Idle is how many cycles changed nothing.
func (e *Engine) Idle() int { return e.idle }

// Abort makes Run return err at once, after the event being processed (a
// driver whose context ended).
func (e *Engine) Abort(err error) { e.abort = err }

// Job returns the live (queued or holding) job with id.
func (e *Engine) Job(id string) (*model.Job, bool) {
	x, ok := e.byID[id]
	if !ok {
		return nil, false
	}
	return x.job, true
}

// Jobs returns the live jobs in submit order; the caller must not change
// the slice.
func (e *Engine) Jobs() []*model.Job {
	return e.AppendJobs(make([]*model.Job, 0, len(e.live)-e.dead))
}

// AppendJobs appends the live jobs to dst in submit order, for a driver
// that lists them every minute into one buffer.
func (e *Engine) AppendJobs(dst []*model.Job) []*model.Job {
	for _, x := range e.live {
		if x != nil {
			dst = append(dst, x.job)
		}
	}
	return dst
}

// Progress is the work live job id has done and kept so far (at the
// reference speed; a running attempt's work since its start counts) and
// its whole work. ok is false for a job not live or one that runs until
// stopped.
func (e *Engine) Progress(id string) (done, work time.Duration, ok bool) {
	x, live := e.byID[id]
	if !live || x.work == Forever {
		return 0, 0, false
	}
	done = x.work - x.remaining
	if x.job.Status.State.Holds() && e.cfg.RunFor == nil {
		done += time.Duration(float64(e.now.Sub(x.job.Status.StartedAt)) * x.speed)
	}
	return min(done, x.work), x.work, true
}

// Holding returns the live jobs that hold capacity, in submit order.
func (e *Engine) Holding() []*model.Job { return e.AppendHolding(nil) }

// AppendHolding appends the live jobs that hold capacity to dst in submit
// order, for a driver that lists them every minute into one buffer.
func (e *Engine) AppendHolding(dst []*model.Job) []*model.Job {
	for _, x := range e.live {
		if x != nil && x.job.Status.State.Holds() {
			dst = append(dst, x.job)
		}
	}
	return dst
}

// Submit queues j now with work to do (Forever: until stopped). j's ID must
// be new.
func (e *Engine) Submit(j *model.Job, work time.Duration) error {
	if _, dup := e.byID[j.ID]; dup {
		return fmt.Errorf("engine: job %s submitted twice", j.ID)
	}
	j.Status.State = model.StateQueued
	j.Status.SubmittedAt = e.now
	j.Status.Allocations = nil
	x := &entry{job: j, remaining: work, work: work, n: e.n, pos: len(e.live)}
	e.n++
	e.live = append(e.live, x)
	e.byID[j.ID] = x
	if j.Spec.Elastic != nil {
		e.elastic[x] = true
	}
	e.dirty = true
	return nil
}

// Stop ends job id now, queued or running, as Canceled.
func (e *Engine) Stop(id string) {
	x, ok := e.byID[id]
	if !ok {
		return
	}
	e.end(x, model.StateCanceled)
}

// At calls fn when the clock reaches t (now if t is in the past), after
// the completions of that moment and the callbacks scheduled before it.
func (e *Engine) At(t time.Time, fn func(now time.Time)) {
	if t.Before(e.now) {
		t = e.now
	}
	e.push(event{at: t, fn: fn})
}

// Kick asks for a cycle at the current moment (an input of Config.Input
// changed).
func (e *Engine) Kick() { e.dirty = true }

// Run processes events up to and including until, then moves the clock to
// until. It fails when the core's Plan cannot be committed, or with the
// error given to Abort.
func (e *Engine) Run(until time.Time) error {
	if err := e.run(until, true); err != nil {
		return err
	}
	e.advance(until)
	return nil
}

// Drain processes every event there is; the clock stays at the last one.
func (e *Engine) Drain() error { return e.run(time.Time{}, false) }

func (e *Engine) run(until time.Time, bounded bool) error {
	for e.abort == nil {
		t, ok := e.next()
		if !ok || bounded && t.After(until) {
			break
		}
		e.advance(t)
		for len(e.events) > 0 && !e.events[0].at.After(t) {
			ev := heap.Pop(&e.events).(event)
			switch {
			case ev.job != nil:
				if ev.gen == ev.job.gen && e.byID[ev.job.job.ID] == ev.job {
					e.end(ev.job, model.StateSucceeded)
				}
			case ev.fn != nil:
				ev.fn(t)
			}
		}
		if !e.wake.IsZero() && !e.wake.After(t) {
			e.wake, e.dirty = time.Time{}, true
		}
		if !e.grow.IsZero() && !e.grow.After(t) {
			e.grow, e.dirty = time.Time{}, true
		}
		if e.dirty && e.abort == nil && !e.now.Before(e.cycleDue()) {
			if err := e.cycle(); err != nil {
				return err
			}
		}
	}
	return e.abort
}

// next is the time of the next event or wake.
func (e *Engine) next() (time.Time, bool) {
	var t time.Time
	ok := false
	if len(e.events) > 0 {
		t, ok = e.events[0].at, true
	}
	if !e.wake.IsZero() && (!ok || e.wake.Before(t)) {
		if !e.anyQueued() {
			e.wake = time.Time{} // nothing waits for it any more
		} else {
			t, ok = e.wake, true
		}
	}
	if !e.grow.IsZero() && (!ok || e.grow.Before(t)) {
		t, ok = e.grow, true
	}
	if due := e.cycleDue(); e.dirty && (!ok || due.Before(t)) {
		t, ok = due, true
	}
	return t, ok
}

// cycleDue is when a pending cycle runs: now, or with Config.Period the
// next boundary of the period.
func (e *Engine) cycleDue() time.Time {
	p := e.cfg.Period
	if p <= 0 {
		return e.now
	}
	k := (e.now.Sub(e.cfg.Start) + p - 1) / p
	return e.cfg.Start.Add(k * p)
}

func (e *Engine) advance(t time.Time) {
	if !t.After(e.now) {
		return
	}
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Advance(e.now, t)
	}
	e.now = t
}

// end takes x out of the live jobs in state.
func (e *Engine) end(x *entry, state model.State) {
	j := x.job
	if j.Status.State.Holds() {
		e.dirty = true
	}
	j.Status.State = state
	j.Status.EndedAt = e.now
	j.Status.Allocations = nil
	x.gen++
	delete(e.byID, j.ID)
	delete(e.elastic, x)
	e.live[x.pos] = nil
	e.dead++
	if e.dead > 64 && e.dead > len(e.live)/2 {
		e.compact()
	}
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Ended(j, e.now)
	}
}

func (e *Engine) push(ev event) {
	ev.seq = e.seq
	e.seq++
	heap.Push(&e.events, ev)
}

// compact drops the ended jobs from live, keeping submit order.
func (e *Engine) compact() {
	k := 0
	for _, x := range e.live {
		if x != nil {
			x.pos = k
			e.live[k] = x
			k++
		}
	}
	clear(e.live[k:])
	e.live = e.live[:k]
	e.dead = 0
}

// anyQueued reports whether a live job is queued.
func (e *Engine) anyQueued() bool {
	for _, x := range e.live {
		if x != nil && x.job.Status.State == model.StateQueued {
			return true
		}
	}
	return false
}
