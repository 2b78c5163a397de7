package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/strategy"
)

// Estimates that reach past a job's start: how long it runs (its
// duration, else the run book's estimate: runtimes.go), and, for a Blocked
// pipeline step, when the jobs it waits for are expected to end.

// maxStepDepth bounds how many Blocked steps an estimate follows back.
const maxStepDepth = 8

// explainRun sets why's expected run of its job, which has not ended.
func (s *Server) explainRun(why *Why) {
	d, basis := s.cache.runs.expectedRun(why.Job)
	if d > 0 {
		why.ExpectedRun, why.ExpectedRunBasis = d, basis
	}
}

// explainBlocked is the Why of Blocked step j: its estimated start is
// when the last job it waits for is expected to end (at the earliest:
// whether capacity is free then is not forecast).
func (s *Server) explainBlocked(j *model.Job, now time.Time) Why {
	why := Why{Job: j}
	at, how, ok := s.stepStart(j, now, 0)
	if !ok {
		why.Estimate = forecast.Estimate{Why: how}
		return why
	}
	t := at.UTC()
	why.EstimatedStart = &t
	why.Estimate = forecast.Estimate{Start: t, How: "not before the jobs it waits for are expected to end: " + how +
		"; whether capacity is free then is not forecast"}
	return why
}

// stepStart is when Blocked step j may start at the earliest — the latest
// expected end of its predecessors still to end, now for those that ended —
// and how each was estimated; ok is false, with the reason, when one has no
// estimate.
func (s *Server) stepStart(j *model.Job, now time.Time, depth int) (time.Time, string, bool) {
	start := now
	var parts []string
	for _, p := range j.Spec.Predecessors() {
		ref, _, found := s.cache.job(p.Ref)
		if !found || ref.job == nil {
			continue // gone or ended: it holds nothing up
		}
		end, how, ok := s.expectedEnd(ref.job, now, depth)
		if !ok {
			return time.Time{}, fmt.Sprintf("%s (%s) has no estimated end: %s", p.Ref, ref.job.Status.State, how), false
		}
		parts = append(parts, fmt.Sprintf("%s (%s) by %s: %s", p.Ref, ref.job.Status.State, end.UTC().Format(time.RFC3339), how))
		start = later(start, end)
	}
	if len(parts) == 0 {
		return now, "every job it waits for has ended (the next cycle moves it on)", true
	}
	return start, strings.Join(parts, "; "), true
}

// expectedEnd is when job j, not ended, is expected to end, and how that
// was estimated.
func (s *Server) expectedEnd(j *model.Job, now time.Time, depth int) (time.Time, string, bool) {
	if j.Status.State.Terminal() {
		return now, "ended", true
	}
	run, basis := s.cache.runs.expectedRun(j)
	if run <= 0 {
		return time.Time{}, "it states no duration, no similar job has run and it has no retry timeout", false
	}
	var start time.Time
	var how string
	switch st := j.Status.State; {
	case st.Holds():
		start, how = j.Status.StartedAt, "started "+j.Status.StartedAt.UTC().Format(time.RFC3339)
	case st == model.StateQueued:
		e := s.Estimate(j, now)
		if !e.Known() {
			return time.Time{}, "no estimated start: " + e.Why, false
		}
		start, how = e.Start, "estimated to start "+e.Start.UTC().Format(time.RFC3339)
	case st == model.StateBlocked && depth < maxStepDepth:
		at, _, ok := s.stepStart(j, now, depth+1)
		if !ok {
			return time.Time{}, "its own predecessors have no estimated end", false
		}
		start, how = at, "itself a step that may start "+at.UTC().Format(time.RFC3339)
	default:
		return time.Time{}, fmt.Sprintf("a %s job", st), false
	}
	return later(start.Add(run), now), fmt.Sprintf("%s, runs %s (%s)", how, run, basis), true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// exposure is what may preempt running job j, as the core would decide on
// the server's view now (the fleet's strategy applied, as the cycle does);
// nil when the cache does not have it holding capacity.
func (s *Server) exposure(j *model.Job) *sched.Exposure {
	now := s.clock.Now()
	snap := strategy.Apply(s.forecastSnapshot(s.world(), nil), now)
	cfg := s.cfg.Sched
	cfg.Observer = nil
	e, ok := sched.New(cfg).Exposure(snap, now, j.ID)
	if !ok {
		return nil
	}
	return &e
}
