package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/strategy"
)

// DefaultRegionMoveAfter is how long a queued job waits in the region the
// server chose before it may move to another allowed region.
const DefaultRegionMoveAfter = 15 * time.Minute

// maxMovesChecked bounds the queued jobs one MoveWaiting call weighs: each
// costs one forward run per allowed region.
const maxMovesChecked = 8

// regionBook remembers when MoveWaiting last weighed each job, so a job
// that stays is weighed again only after another threshold.
type regionBook struct {
	mu      sync.Mutex // guards checked
	checked map[string]time.Time
}

// forecaster returns a Forecaster that runs the server's core
// configuration (without its observer, which times the live cycles).
func (s *Server) forecaster() *forecast.Forecaster {
	cfg := s.cfg.Sched
	cfg.Observer = nil
	opts := s.cfg.Forecast
	opts.Prepare = strategy.Apply // as the cycle does (step 3)
	if opts.RunTime == nil {
		opts.RunTime = s.cache.runs.estimate // jobs without a duration run as similar ones did
	}
	return forecast.New(cfg, opts)
}

func (s *Server) regionWeights() forecast.Weights {
	if s.cfg.RegionWeights == (forecast.Weights{}) {
		return forecast.DefaultWeights
	}
	return s.cfg.RegionWeights
}

// coreView returns jobs as the core sees them: a queued job the server
// chose a region for allows only that region (forecast.Pin; a choice
// outside the job's allowed regions is ignored). jobs is not changed.
func coreView(jobs []*model.Job) []*model.Job {
	out, copied := jobs, false
	for i, j := range jobs {
		if j.Status.State != model.StateQueued || j.Status.Region == "" {
			continue
		}
		if p := forecast.Pin(j, j.Status.Region); p != j {
			if !copied {
				out, copied = append([]*model.Job(nil), jobs...), true
			}
			out[i] = p
		}
	}
	return out
}

// forecastSnapshot is what a forecast runs on: the cache's queued and
// holding jobs with their chosen regions, as the cycle takes them (the
// forecaster applies the fleet's strategy; operator policies are not
// applied), with extra (a job not in the cache) added.
func (s *Server) forecastSnapshot(w *world, extra *model.Job) *sched.Snapshot {
	jobs := s.cache.snapshot().jobs
	if extra != nil {
		jobs = append(jobs, extra)
	}
	return &sched.Snapshot{Fleet: w.fleet, Tenancy: w.tenancy, Jobs: coreView(jobs)}
}

// weighRegions estimates j's start in each of its candidate regions and
// ranks them; nil when j has fewer than two candidates, or names a
// reservation (whose nodes are in one region).
func (s *Server) weighRegions(w *world, j *model.Job, now time.Time) []forecast.RegionOption {
	if j.Spec.Placement.Reservation != "" || len(forecast.Candidates(w.fleet, &j.Spec)) < 2 {
		return nil
	}
	f := s.forecaster()
	est := f.PerRegion(s.forecastSnapshot(w, nil), now, j)
	return forecast.Rank(w.fleet, &j.Spec, est, now, f.Options().Horizon, s.regionWeights())
}

// chooseRegion picks the region a new job j goes to when its spec lists
// several: the best by forecast.Rank. It returns "" when the spec lists
// fewer than two (a job that names none keeps the core's own choice,
// which prefers its data region).
func (s *Server) chooseRegion(w *world, j *model.Job, now time.Time) string {
	if len(j.Spec.Placement.Regions) < 2 {
		return ""
	}
	opts := s.weighRegions(w, j, now)
	if len(opts) == 0 {
		return ""
	}
	s.log.Info("job region chosen", "job", j.ID, "tenant", j.Spec.Tenant, "region", opts[0].Region,
		"reason", optionsText(opts))
	return opts[0].Region
}

func (s *Server) moveWaitingEvery(ctx context.Context) {
	after := s.cfg.RegionMoveAfter
	if after < 0 {
		return
	}
	t := time.NewTicker(max(min(after/4, time.Minute), 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.MoveWaiting(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("move waiting jobs", "err", err)
		}
	}
}

// MoveWaiting weighs again the queued jobs that have waited past
// Config.RegionMoveAfter in the region the server chose, oldest choice
// first and at most maxMovesChecked of them, and moves each to another
// allowed region when it would start sooner there (forecast.Move). A move
// is a write of the job's record (its region and when it was chosen) on
// the condition that nothing else wrote it meanwhile, then a cycle; it is
// logged with the estimates that caused it. It returns how many jobs moved.
func (s *Server) MoveWaiting(ctx context.Context) (int, error) {
	after := s.cfg.RegionMoveAfter
	if after < 0 {
		return 0, nil
	}
	now := s.clock.Now()
	var due []*model.Job
	s.regions.mu.Lock()
	if s.regions.checked == nil {
		s.regions.checked = map[string]time.Time{}
	}
	seen := map[string]bool{}
	for _, j := range s.cache.snapshot().jobs {
		seen[j.ID] = true
		if j.Status.State != model.StateQueued || j.Status.Region == "" || now.Sub(j.Status.RegionAt) < after {
			continue
		}
		if last, ok := s.regions.checked[j.ID]; ok && now.Sub(last) < after {
			continue
		}
		due = append(due, j)
	}
	for id := range s.regions.checked {
		if !seen[id] {
			delete(s.regions.checked, id)
		}
	}
	sort.Slice(due, func(a, b int) bool { return due[a].Status.RegionAt.Before(due[b].Status.RegionAt) })
	if len(due) > maxMovesChecked {
		due = due[:maxMovesChecked]
	}
	for _, j := range due {
		s.regions.checked[j.ID] = now
	}
	s.regions.mu.Unlock()

	w := s.world()
	moved := 0
	for _, j := range due {
		opts := s.weighRegions(w, j, now)
		to := forecast.Move(opts, j.Status.Region)
		if to == "" {
			continue
		}
		ok, err := s.moveJob(ctx, j.ID, j.Status.Region, to, now)
		if err != nil {
			return moved, err
		}
		if ok {
			moved++
			s.log.Info("job moved region", "job", j.ID, "tenant", j.Spec.Tenant, "from", j.Status.Region, "to", to,
				"waited", now.Sub(j.Status.RegionAt).Round(time.Second), "reason", optionsText(opts))
		}
	}
	if moved > 0 {
		s.Kick()
	}
	return moved, nil
}

// moveJob records region to as job id's choice if it is still queued in
// region from; false when it no longer is.
func (s *Server) moveJob(ctx context.Context, id, from, to string, now time.Time) (bool, error) {
	key := prefixJobs + id
	for try := 0; ; try++ {
		kv, err := s.st.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read job %s: %w", id, err)
		}
		old, err := decodeJob(kv.Value)
		if err != nil {
			return false, fmt.Errorf("read job %s: %w", id, err)
		}
		if old.Status.State != model.StateQueued || old.Status.Region != from {
			return false, nil
		}
		j := cloneJob(old)
		j.Status.Region, j.Status.RegionAt = to, now
		rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, kv.ModRev)},
			Then: []store.Op{store.PutOp(key, encodeJob(j))}})
		if errors.Is(err, store.ErrConflict) && try < 3 {
			continue // a cycle wrote the job meanwhile: look again
		}
		if err != nil {
			return false, fmt.Errorf("move job %s: %w", id, err)
		}
		s.cache.putJobs([]*model.Job{j}, rev)
		return true, nil
	}
}

// optionsText writes ranked options for a log line:
// "eastus start 2026-12-01T05:00Z score 1.25; westus no estimate score 168.5".
func optionsText(opts []forecast.RegionOption) string {
	parts := make([]string, len(opts))
	for i, o := range opts {
		start := "no estimate"
		if o.Estimate.Known() {
			start = "start " + o.Estimate.Start.UTC().Format("2006-01-02T15:04Z")
		}
		parts[i] = fmt.Sprintf("%s %s score %.3g", o.Region, start, o.Score)
	}
	return strings.Join(parts, "; ")
}
