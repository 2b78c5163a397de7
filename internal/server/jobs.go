package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/store"
)

// MaxJobRecord is the largest stored form of a job that Submit accepts:
// the store's limit on a value less 512 KiB, which the job's status
// (attempts, reasons) may grow into.
const MaxJobRecord = store.MaxValueLen - 512<<10

// Submit stores a new job for p and returns it once the store has made it
// durable. It refuses (with an *Error) a job of another tenant, of an
// unknown tenant, and one that can never run as written (admissible). No lock is held while the store
// commits, so concurrent submits share one group commit.
func (s *Server) Submit(ctx context.Context, p Principal, spec model.JobSpec) (*model.Job, error) {
	j, _, err := s.SubmitKeyed(ctx, p, "", spec)
	return j, err
}

// SubmitKeyed is Submit with a client's idempotency key (none when key is
// ""): a submit that repeats a key p used within IdempotencyTTL for the
// same spec stores nothing and returns the job the first one made, with
// replayed set; one that repeats it for another spec is refused
// (Conflict, field Idempotency-Key). See idempotency.go.
func (s *Server) SubmitKeyed(ctx context.Context, p Principal, key string, spec model.JobSpec) (j *model.Job, replayed bool, err error) {
	now := s.clock.Now()
	claim, prior, err := s.claimKey(ctx, p, key, []model.JobSpec{spec}, now)
	if err != nil || prior != nil {
		return first(prior), prior != nil, err
	}
	if err := s.checkJobLimit(p, 1); err != nil {
		return nil, false, err
	}
	j, rec, err := s.newJob(s.world(), p, spec, now, nil)
	if err != nil {
		return nil, false, err
	}
	links, refused := s.pipelineOf(p, []model.JobSpec{spec})
	if len(refused) > 0 {
		return nil, false, refused[0].Err
	}
	for try := 0; ; try++ {
		if try > 0 {
			j.ID = newJobID(spec.Name, now)
			rec = encodeJob(j)
		}
		if links != nil && s.block([]*model.Job{j}, links) {
			rec = encodeJob(j)
		}
		jobKey := prefixJobs + j.ID
		txn := store.Txn{If: []store.Cond{store.Absent(jobKey)}, Then: []store.Op{store.PutOp(jobKey, rec)}}
		claim.bind(&txn, []*model.Job{j})
		forget := s.cache.writing([]*model.Job{j}, [][]byte{rec})
		rev, err := s.st.Txn(ctx, txn)
		if err == nil {
			s.cache.putJobs([]*model.Job{j}, rev)
		}
		forget()
		if claim.lost(err) {
			prior, err := s.replay(ctx, p, key, []model.JobSpec{spec}, now)
			return first(prior), err == nil, err
		}
		if errors.Is(err, store.ErrConflict) && try < 3 {
			continue // the random suffix collided
		}
		if err != nil {
			return nil, false, fmt.Errorf("store job: %w", err)
		}
		break
	}
	s.m.submits.Inc()
	s.log.Debug("job submitted", "job", j.ID, "tenant", spec.Tenant)
	s.Kick()
	return j, false, nil
}

// first returns jobs' first job, nil when there is none.
func first(jobs []*model.Job) *model.Job {
	if len(jobs) == 0 {
		return nil
	}
	return jobs[0]
}

// newJobID returns the job's name reduced to [a-z0-9-] (at most 24
// characters), a dash, the submit time in milliseconds as 9 characters of
// sortable base 32, and 4 random ones, e.g. "train-llama-1k2m3n4p5q7x3z".
// IDs of one name sort by submit time, so a burst of submits writes
// neighbouring keys: the store's B+tree dirties few pages per commit.
func newJobID(name string, now time.Time) string {
	var b strings.Builder
	dash := true
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 24 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	base := strings.TrimRight(b.String(), "-")
	if base == "" {
		base = "job"
	}
	const alphabet = "0123456789abcdefghijklmnopqrstuv" // sorts like the numbers it encodes
	var id [13]byte
	ms := uint64(max(now.UnixMilli(), 0))
	for i := 8; i >= 0; i-- {
		id[i] = alphabet[ms&31]
		ms >>= 5
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	for i, r := range rnd {
		id[9+i] = alphabet[r&31]
	}
	return base + "-" + string(id[:])
}

// Job returns the job with id as p may see it. A job that ended is read
// from the store.
func (s *Server) Job(ctx context.Context, p Principal, id string) (*model.Job, error) {
	ref, _, ok := s.cache.job(id)
	if !ok {
		return nil, refuse(CodeNotFound, "", "no job %q", id)
	}
	j, ok, err := s.jobFrom(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, refuse(CodeNotFound, "", "no job %q", id)
	}
	if !p.Sees(j.Spec.Tenant) {
		return nil, refuse(CodeForbidden, "", "job %q belongs to another tenant", id)
	}
	return j, nil
}

// JobFilter narrows Jobs; empty fields match everything.
type JobFilter struct {
	State  model.State
	Tenant string
}

// Jobs returns the jobs p may see that match f, newest first. Jobs that
// ended are read from the store, one Get each.
func (s *Server) Jobs(ctx context.Context, p Principal, f JobFilter) ([]*model.Job, error) {
	match := func(tenant string, st model.State) bool {
		return p.Sees(tenant) && (f.State == "" || st == f.State) && (f.Tenant == "" || tenant == f.Tenant)
	}
	refs := s.cache.jobList(match)
	out := make([]*model.Job, 0, len(refs))
	for _, ref := range refs {
		j, ok, err := s.jobFrom(ctx, ref)
		if err != nil {
			return nil, err
		}
		// The store may be ahead of the cache: match what it holds.
		if ok && match(j.Spec.Tenant, j.Status.State) {
			out = append(out, j)
		}
	}
	return out, nil
}

// readJob reads the stored job id with the revision it was read at; an ID
// that names no job (or cannot be a key: bad UTF-8, too long) is NotFound.
func (s *Server) readJob(ctx context.Context, id string) (store.KV, *model.Job, error) {
	kv, err := s.st.Get(ctx, prefixJobs+id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return store.KV{}, nil, refuse(CodeNotFound, "", "no job %q", id)
	}
	if err != nil {
		return store.KV{}, nil, fmt.Errorf("read job %s: %w", id, err)
	}
	j, err := decodeJob(kv.Value)
	if err != nil {
		return store.KV{}, nil, fmt.Errorf("read job %s: %w", id, err)
	}
	return kv, j, nil
}

// rewriteJob stores the job next makes of stored job id, on condition that
// the job did not change since it was read: when a cycle or an agent wrote
// it first, next decides again on the new state (up to 10 times). next
// refuses with an error, or returns nil to leave the job as it is. It
// returns the job read, the job stored (nil when none was) and the store's
// revision; what names the action in a store error.
func (s *Server) rewriteJob(ctx context.Context, id, what string, next func(old *model.Job) (*model.Job, error)) (old, j *model.Job, rev int64, err error) {
	key := prefixJobs + id
	for try := 0; ; try++ {
		kv, old, err := s.readJob(ctx, id)
		if err != nil {
			return nil, nil, 0, err
		}
		j, err := next(old)
		if err != nil || j == nil {
			return old, nil, 0, err
		}
		rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, kv.ModRev)},
			Then: []store.Op{store.PutOp(key, encodeJob(j))}})
		if errors.Is(err, store.ErrConflict) && try < 10 {
			continue // written meanwhile: decide again on the new state
		}
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%s job %s: %w", what, id, err)
		}
		s.cache.putJobs([]*model.Job{j}, rev)
		return old, j, rev, nil
	}
}

// Cancel ends a job that has not ended yet. Capacity it held is free for
// the next cycle, which it triggers. With agents, processes that run are
// told to stop first (cancelJob): the job is Canceled once they are gone,
// and a second Cancel kills them at once.
func (s *Server) Cancel(ctx context.Context, p Principal, id string) (*model.Job, error) {
	return s.cancel(ctx, p, id, false)
}

// ForceCancel is Cancel that kills the job's processes at once, without
// their grace ('job cancel --force').
func (s *Server) ForceCancel(ctx context.Context, p Principal, id string) (*model.Job, error) {
	return s.cancel(ctx, p, id, true)
}

func (s *Server) cancel(ctx context.Context, p Principal, id string, force bool) (*model.Job, error) {
	old, j, rev, err := s.rewriteJob(ctx, id, "cancel", func(old *model.Job) (*model.Job, error) {
		if !p.Sees(old.Spec.Tenant) {
			return nil, refuse(CodeForbidden, "", "job %q belongs to another tenant", id)
		}
		if old.Status.State.Terminal() {
			return nil, refuse(CodeConflict, "", "job %s already ended: %s", id, old.Status.State)
		}
		return cancelJob(old, p.Name(), force, s.agentMode, s.stopGrace(old), s.clock.Now()), nil
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("job canceled", "job", id, "tenant", j.Spec.Tenant, "by", p.Name(), "was", old.Status.State, "now", j.Status.State,
		"kill", j.Status.Kill, "rev", rev)
	if p.Tenant != j.Spec.Tenant && p.Endpoint == "" { // someone other than the owner (an endpoint stops its own replicas)
		s.audit(ctx, p, ActionJobCancel, "job/"+id, fmt.Sprintf("job %q of tenant %s, was %s", j.Spec.Name, j.Spec.Tenant, old.Status.State))
	}
	s.Kick()
	return j, nil
}

// Why is the scheduler's explanation of a job.
type Why struct {
	Job *model.Job
	// EstimatedStart is when a queued job is expected to start (see
	// Estimate); nil when there is no estimate.
	EstimatedStart *time.Time
	// Estimate is the forecast behind EstimatedStart: how it was made, or
	// why there is none. Zero for a job that is not queued.
	Estimate forecast.Estimate
	// ExpectedRun is how long the job, not ended, is expected to run from
	// its start: its duration, else an estimate from the runs of similar
	// jobs or its retry timeout (runtimes.go); ExpectedRunBasis says
	// which. Zero when none is known.
	ExpectedRun      time.Duration
	ExpectedRunBasis string
	// Checkpoint says, for a queued job with a checkpoint, what it resumes
	// from and whether the nodes of its parts may take it
	// (explainCheckpoint); empty otherwise.
	Checkpoint string
	// Exposure is, for a job that holds capacity, what may preempt it
	// (sched.Scheduler.Exposure); nil otherwise.
	Exposure *sched.Exposure
	// Regions compares, for a queued job allowed in several regions, its
	// estimated start, price and distance in each, best first; the
	// region the server chose (Job.Status.Region) is the one the core
	// now places it in.
	Regions []forecast.RegionOption
	// Policies say what operator policies did to the job's priority in
	// the last cycle (policies.go); the job's spec keeps its own.
	Policies []string
	// Drains are, for an administrator, the drains of the nodes the
	// job's detail names (a NoReadyNodes detail names the first drained
	// capable nodes): why they are out of service, by whom, since when.
	// Nodes are the administrator's: a tenant gets none.
	Drains []NamedDrain
	// Placement says why an inference replica runs on an InfiniBand node,
	// which replicas keep off while other nodes fit (sched, placeAmong);
	// empty otherwise.
	Placement string
	// Elastic says, for an elastic job that holds capacity, its size in
	// its range, its last resize and when the next may come
	// (explainElastic); empty otherwise.
	Elastic string
}

// NamedDrain is the drain of one node.
type NamedDrain struct {
	Node string
	NodeDrain
}

// drainsIn returns the drains of the nodes text names, in the order it
// names them, each once.
func (s *Server) drainsIn(text string) []NamedDrain {
	w := s.world()
	var out []NamedDrain
	for i, j := range words(text) {
		name := strings.TrimRight(text[i:j], ".")
		if _, ok := w.nodes[name]; !ok || slices.ContainsFunc(out, func(d NamedDrain) bool { return d.Node == name }) {
			continue
		}
		if rec, _, _ := s.cache.node(name); rec.Drain != nil {
			out = append(out, NamedDrain{Node: name, NodeDrain: *rec.Drain})
		}
	}
	return out
}

// Explain returns the job's reason and detail from the last cycle and, for
// a queued job, its estimated start and the comparison of its regions.
func (s *Server) Explain(ctx context.Context, p Principal, id string) (Why, error) {
	j, err := s.Job(ctx, p, id)
	if err != nil {
		return Why{}, err
	}
	w := Why{Job: j}
	switch j.Status.State {
	case model.StateQueued:
		w = s.explainQueued(s.world(), j, s.clock.Now())
	case model.StateBlocked:
		w = s.explainBlocked(j, s.clock.Now())
	}
	if !j.Status.State.Terminal() {
		s.explainRun(&w)
	}
	if j.Status.State.Holds() {
		w.Exposure = s.exposure(j)
	}
	w.Policies = s.jobPolicies(j.ID)
	w.Placement = explainInferencePlacement(s.world(), j)
	w.Elastic = explainElastic(j, s.clock.Now(), s.resizeInterval())
	if p.Admin && w.Job.Status.State == model.StateQueued {
		w.Drains = s.drainsIn(w.Job.Status.Detail)
	}
	return w, nil
}

// explainInferencePlacement says why inference replica j holds a node of
// an InfiniBand cluster: none of another fabric had room when the core
// placed it. "" for any other job or node.
func explainInferencePlacement(w *world, j *model.Job) string {
	if j.Spec.Labels[model.LabelWorkload] != model.WorkloadInference || !j.Status.State.Holds() {
		return ""
	}
	for _, a := range j.Status.Allocations {
		n, ok := w.nodes[a.Node]
		if !ok {
			continue
		}
		reg, _ := w.fleet.Region(n.Region)
		for _, c := range reg.Clusters {
			if c.Name == n.Cluster && c.Fabric == model.FabricInfiniBand {
				return fmt.Sprintf("on %s, a node of InfiniBand cluster %s: inference replicas keep off InfiniBand training nodes "+
					"while a node of another fabric fits them, and none did when this one was placed", n.Name, c.Name)
			}
		}
	}
	return ""
}

// explainQueued is the Why of queued job j: its estimated start and the
// comparison of its regions.
func (s *Server) explainQueued(w *world, j *model.Job, now time.Time) Why {
	why := Why{Job: j, Estimate: s.Estimate(j, now)}
	if why.Estimate.Known() {
		t := why.Estimate.Start.UTC()
		why.EstimatedStart = &t
	}
	// A job held back (a back-off, fencing, its begin time) starts no earlier.
	if hold := j.HeldUntil(); now.Before(hold) && (why.EstimatedStart == nil || why.EstimatedStart.Before(hold)) {
		why.EstimatedStart = &hold
	}
	why.Checkpoint = explainCheckpoint(w, s.cache.holding(), j)
	why.Regions = s.weighRegions(w, j, now)
	for i := range why.Regions {
		// Chosen marks the region the core places the job in now.
		why.Regions[i].Chosen = j.Status.Region != "" && why.Regions[i].Region == j.Status.Region
	}
	return why
}

// Estimate is when queued job j is expected to start: the core run forward
// from now on the server's own view (package forecast): running work ends
// at started_at + its spec's duration (work without one is taken to run
// on, unless Config.Forecast says otherwise), reservation windows open and
// close when they say, the queue ahead is served as the core serves it, and
// nothing new is submitted. Operator policies are not applied.
func (s *Server) Estimate(j *model.Job, now time.Time) forecast.Estimate {
	w := s.world()
	snap := s.forecastSnapshot(w, nil)
	found := false
	for _, x := range snap.Jobs {
		found = found || x.ID == j.ID
	}
	if !found {
		// Not in the cache's live set (a job read from the store only):
		// weigh it as it is.
		snap = s.forecastSnapshot(w, j)
	}
	return s.forecaster().Starts(snap, now, j.ID)[j.ID]
}
