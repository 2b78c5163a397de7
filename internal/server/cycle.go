package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/strategy"
)

// maxReplans bounds how often one cycle recomputes a plan that lost a race
// at commit before it leaves the work to the next cycle.
const maxReplans = 5

// Cycle runs one scheduling cycle now and waits for its commit. Cycles never
// overlap; Run calls Cycle on events and ticks, tests call it directly.
//
// A cycle reads as:
//
//  1. snapshot the cache: queued and holding jobs with their ModRevs, and
//     the world (fleet with node health, tenancy with reservations);
//  2. collect facts: jobs whose work ended (node layer) or whose node left
//     the fleet; they no longer hold capacity in this cycle; Blocked
//     jobs of pipelines move on from their predecessors' states
//     (pipeline.go): Queued, Canceled, or still Blocked with what they
//     wait for; the core never sees them;
//  3. policies: record the metrics the operator's policies read, evaluate
//     them, and adjust the core's copy of the snapshot (policies.go);
//  4. plan: the core turns the snapshot and the clock's now into a Plan,
//     on a sched.Session told only what changed since the last cycle
//     (session.go);
//  5. commit the facts and the Plan in one store transaction whose
//     conditions are the ModRev of every job it writes and the scheduling
//     fence; on a conflict, wait for the cache to catch up and go to 1;
//  6. publish: record the written jobs in the cache and log each decision.
func (s *Server) Cycle(ctx context.Context) error {
	s.cycleMu.Lock()
	defer s.cycleMu.Unlock()
	start := time.Now()
	s.cycles.Add(1)
	defer func() { s.m.cycle.Observe(time.Since(start).Seconds()) }()
	for attempt := 1; ; attempt++ {
		err := s.cycleContained(ctx)
		var ce *store.ConflictError
		if err != nil && !errors.As(err, &ce) {
			s.inc.Drop() // a cycle that failed may have left the Session half told
		}
		if errors.As(err, &ce) && attempt < maxReplans {
			s.m.conflicts.Inc()
			s.log.Info("plan was stale at commit; planning again", "key", ce.Key, "attempt", attempt)
			if err := s.catchUp(ctx, ce.Key); err != nil {
				return err
			}
			continue
		}
		if err == nil {
			s.ready.Store(true)
		}
		return err
	}
}

// cycleContained runs cycleOnce and turns a panic in it (a "cannot happen"
// of the core, say) into an error, so one bad cycle cannot take the control
// plane down. A panic before the commit leaves the store as it was; the next
// cycle plans afresh from the cache.
func (s *Server) cycleContained(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.m.panics.Inc()
			s.log.Error("scheduling cycle panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("server: scheduling cycle panicked: %v", r)
		}
	}()
	return s.cycleOnce(ctx)
}

// catchUp brings the cache up to the store after a conflict: it reads the
// key that conflicted straight from the store, then, while the watch runs,
// waits (briefly, so a stuck watch cannot stall the loop) until the cache
// has applied everything the store had committed.
func (s *Server) catchUp(ctx context.Context, key string) error {
	kv, err := s.st.Get(ctx, key)
	switch {
	case err == nil:
		s.cache.putKV(kv.Key, kv.Value, kv.ModRev)
	case errors.Is(err, store.ErrNotFound):
	default:
		return fmt.Errorf("read %s: %w", key, err)
	}
	if !s.watching.Load() {
		return nil
	}
	rev, err := s.st.Rev(ctx)
	if err != nil {
		return fmt.Errorf("store revision: %w", err)
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		s.cache.mu.RLock()
		have := s.cache.rev
		s.cache.mu.RUnlock()
		if have >= rev {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// decision is one change a committed cycle makes, kept for the log.
type decision struct {
	kind string // bind, preempt, pending, ended, lost
	job  *model.Job
	msg  string
	args []any
}

// beforeCommit, when set by a test, runs between planning and committing.
var beforeCommit func()

func (s *Server) cycleOnce(ctx context.Context) error {
	timer := s.m.phaseClock()
	// 1. Snapshot.
	snap := s.cache.snapshot()
	w := s.world()
	now := s.clock.Now()
	byID := make(map[string]*model.Job, len(snap.jobs))
	var holding []*model.Job
	for _, j := range snap.jobs {
		byID[j.ID] = j
		if j.Status.State.Holds() {
			holding = append(holding, j)
		}
	}

	timer.done(phaseSnapshot)

	// 2. Facts.
	var out []*model.Job // new versions of the jobs this cycle writes
	var log []decision
	gone := map[string]bool{}
	fixed := map[string]int{} // jobs the facts changed but left in the core's view, by index in out
	for _, e := range s.nodes.Ended(holding, now) {
		old, ok := byID[e.Job]
		if !ok || gone[e.Job] || !old.Status.State.Holds() || !model.CanTransition(old.Status.State, e.State) {
			continue
		}
		j := endJob(old, e.State, e.Reason, e.Detail, e.ExitCode, now)
		gone[j.ID] = true
		out = append(out, j)
		log = append(log, decision{kind: "ended", job: j, msg: "job ended",
			args: []any{"state", j.Status.State, "reason", e.Reason, "detail", e.Detail}})
	}
	for _, old := range holding {
		if gone[old.ID] {
			continue
		}
		if s.agentMode {
			if node := lostNode(old, w); node != "" {
				j := nodeLost(old, node, fmt.Sprintf("node %s stopped answering", node), now, false, s.cfg.MaxLost)
				gone[j.ID] = true
				out = append(out, j)
				msg := "job requeued: node not ready"
				if j.Status.State == model.StateFailed {
					msg = "job failed: too many attempts lost"
				}
				log = append(log, decision{kind: "lost", job: j, msg: msg, args: []any{"node", node, "not_before", j.Status.NotBefore}})
				continue
			}
			if j := stopOverdue(old, now, s.nodeTimeout, s.stopGrace(old)); j != nil {
				gone[j.ID] = true
				out = append(out, j)
				log = append(log, decision{kind: "lost", job: j, msg: "preempted job requeued: its exit was not reported within grace and node timeout"})
				continue
			}
			if j := resizeOverdue(old, now, s.nodeTimeout, s.stopGrace(old)); j != nil {
				// It keeps its capacity, so the core still sees it: a
				// decision of the Plan about it starts from this version.
				fixed[j.ID] = len(out)
				out = append(out, j)
				log = append(log, decision{kind: "lost", job: j, msg: "resized job: the old ranks' exits were not reported within grace and node timeout; the new ranks start"})
			}
		}
		for _, a := range old.Status.Allocations {
			if _, ok := w.nodes[a.Node]; !ok {
				j := requeue(old, "NodeLost", fmt.Sprintf("node %s left the fleet", a.Node), now, "NodeLost")
				gone[j.ID] = true
				out = append(out, j)
				log = append(log, decision{kind: "lost", job: j, msg: "job requeued: node left the fleet", args: []any{"node", a.Node}})
				break
			}
		}
	}
	// Jobs held back (a lost attempt's back-off or fencing) wait with
	// the reason nodeLost gave them; the tick's cycles pick them up. Jobs
	// a person held ('job hold') wait until released.
	input := make([]*model.Job, 0, len(snap.jobs))
	for _, j := range snap.jobs {
		if !gone[j.ID] && !(j.Status.State == model.StateQueued && (now.Before(j.HeldUntil()) || j.Status.Held)) {
			input = append(input, j)
		}
	}
	moved, movedLog, unblocked := advancePipelines(snap, out, now)
	out, log = append(out, moved...), append(log, movedLog...)

	// 3. Policies.
	// The fleet's sharing strategy first (package strategy), as the simulator does.
	in := s.applyPolicies(strategy.Apply(&sched.Snapshot{Fleet: w.fleet, Tenancy: w.tenancy, Jobs: coreView(input), Images: s.imagesHeld()}, now), now)
	timer.done(phasePrepare)

	// 4. Plan, on the Session the server carries between cycles.
	plan, err := s.plan(in, now)
	if err != nil {
		return err
	}
	reserved := s.inc.Reserved()
	s.reserved.Store(&reserved)
	timer.done(phasePlan)

	// 5. Commit.
	// latest is the version of a job the Plan changes; put writes the new one.
	latest := func(id string) *model.Job {
		if i, ok := fixed[id]; ok {
			return out[i]
		}
		return byID[id]
	}
	put := func(j *model.Job) {
		if i, ok := fixed[j.ID]; ok {
			out[i] = j
			return
		}
		out = append(out, j)
	}
	for _, p := range plan.Preemptions {
		old := latest(p.Job)
		j := preemptJob(old, p, now, s.agentMode, s.stopGrace(old))
		put(j)
		log = append(log, decision{kind: "preempt", job: j, msg: "preempted job",
			args: []any{"for", p.For, "reason", p.Reason, "detail", p.Detail, "lost_gpu_seconds", p.LostGPUSeconds}})
	}
	priceAttempt := attemptPricer(w, holding, gone)
	for _, b := range plan.Binds {
		j := bindJob(byID[b.Job], b, now)
		if s.agentMode {
			j = bindAgentJob(byID[b.Job], b, now)
		}
		priceAttempt(j)
		out = append(out, j)
		log = append(log, decision{kind: "bind", job: j, msg: "bound job", args: []any{"placement", placementText(b.Nodes)}})
	}
	for _, r := range plan.Resizes {
		old := latest(r.Job)
		if old == nil || !old.Status.State.Holds() {
			return fmt.Errorf("plan resizes %s, which holds no capacity", r.Job)
		}
		j := resizeJob(old, r, now, s.agentMode)
		priceAttempt(j)
		put(j)
		log = append(log, decision{kind: "resize", job: j, msg: "resized job", args: []any{"from", r.From, "to", r.To,
			"reason", r.Reason, "for", r.For, "detail", r.Detail, "lost_gpu_seconds", r.LostGPUSeconds, "placement", placementText(r.Nodes)}})
	}
	more := false
	written := 0
	for _, p := range plan.Pending {
		old := byID[p.Job]
		if old == nil || old.Status.State != model.StateQueued {
			continue
		}
		reason := p.Reason.String()
		if old.Status.Reason == reason && old.Status.Detail == p.Detail {
			continue // unchanged: no write
		}
		if written == s.cfg.MaxPendingWrites {
			more = true
			continue
		}
		written++
		j := cloneJob(old)
		j.Status.Reason, j.Status.Detail = reason, p.Detail
		out = append(out, j)
		log = append(log, decision{kind: "pending", job: j, msg: "job pending",
			args: []any{"reason", reason, "detail", p.Detail}})
	}
	if len(out) == 0 {
		return nil
	}
	txn := store.Txn{If: make([]store.Cond, 0, len(out)+1), Then: make([]store.Op, 0, len(out)+1)}
	txn.If = append(txn.If, store.ModRevIs(keyFence, snap.fence))
	fence, _ := json.Marshal(s.fenceRecord(now))
	txn.Then = append(txn.Then, store.PutOp(keyFence, fence))
	recs := make([][]byte, len(out))
	for i, j := range out {
		key := prefixJobs + j.ID
		recs[i] = encodeJob(j)
		txn.If = append(txn.If, store.ModRevIs(key, snap.modRev[j.ID]))
		txn.Then = append(txn.Then, store.PutOp(key, recs[i]))
	}
	if beforeCommit != nil {
		beforeCommit()
	}
	st, err := s.planStore()
	if err != nil {
		return err
	}
	timer.done(phaseEncode)
	forget := s.cache.writing(out, recs)
	defer forget() // after publish: the watch may apply the commit before it
	rev, err := st.Txn(ctx, txn)
	if err != nil {
		return fmt.Errorf("commit plan: %w", err)
	}
	timer.done(phaseCommit)

	// 6. Publish.
	s.cache.putJobs(out, rev)
	s.cache.putKV(keyFence, fence, rev)
	s.m.published(&plan, byID, now)
	for _, d := range log {
		args := append([]any{"job", d.job.ID, "tenant", d.job.Spec.Tenant, "rev", rev}, d.args...)
		s.log.Info(d.msg, args...)
	}
	if more || unblocked {
		s.Kick()
	}
	timer.done(phasePublish)
	return nil
}

// cloneJob returns a copy of j that can be changed without touching j: the
// status slices are copied, the spec is shared (it never changes).
func cloneJob(j *model.Job) *model.Job {
	c := *j
	c.Status.Allocations = slices.Clone(j.Status.Allocations)
	c.Status.Attempts = slices.Clone(j.Status.Attempts)
	c.Status.Instances = slices.Clone(j.Status.Instances)
	c.Status.Resizing = slices.Clone(j.Status.Resizing)
	c.Status.CheckpointParts = slices.Clone(j.Status.CheckpointParts)
	c.Status.PartsPending = slices.Clone(j.Status.PartsPending)
	return &c
}

// closeAttempt ends j's current attempt at now.
func closeAttempt(j *model.Job, now time.Time, reason, detail string, exit int) {
	if n := len(j.Status.Attempts); n > 0 && j.Status.Attempts[n-1].Ended.IsZero() {
		a := &j.Status.Attempts[n-1]
		a.Ended, a.Reason, a.Detail, a.ExitCode = now, reason, detail, exit
	}
}

func bindJob(old *model.Job, b sched.Bind, now time.Time) *model.Job {
	j := cloneJob(old)
	j.Status.State = model.StateRunning
	j.Status.StartedAt = now
	j.Status.NotBefore = time.Time{}
	j.Status.Reason, j.Status.Detail = "", ""
	var nodes []string
	j.Status.Allocations, nodes = allocationsOf(b.Nodes)
	j.Status.Attempts = append(j.Status.Attempts, model.Attempt{Number: len(j.Status.Attempts) + 1, Nodes: nodes, Placed: now, Started: now})
	return j
}

func requeue(old *model.Job, reason, detail string, now time.Time, attemptReason string) *model.Job {
	j := cloneJob(old)
	closeAttempt(j, now, attemptReason, detail, -1)
	j.Status.State = model.StateQueued
	j.Status.Allocations = nil
	j.Status.Instances = nil
	j.Status.Reason, j.Status.Detail = reason, detail
	return j
}

func endJob(old *model.Job, state model.State, reason, detail string, exit int, now time.Time) *model.Job {
	j := cloneJob(old)
	closeAttempt(j, now, reason, detail, exit)
	j.Status.State = state
	j.Status.EndedAt = now
	j.Status.Allocations = nil
	j.Status.Reason, j.Status.Detail = reason, detail
	return j
}

// stopOverdue returns j requeued (or Canceled, when a cancel stopped it)
// when it is Preempted and its agents have not reported the exit of its
// processes within grace (its stop order's) and one node timeout (an agent
// that heartbeats but hangs), else nil. Its attempt is billed until then.
func stopOverdue(j *model.Job, now time.Time, timeout, grace time.Duration) *model.Job {
	at := stopOrderedAt(j)
	if j.Status.State != model.StatePreempted || at.IsZero() {
		return nil
	}
	if now.Sub(at) <= grace+timeout {
		return nil
	}
	q, _ := stopped(cloneJob(j), now)
	return q
}

// lostNode returns a node of job j's current attempt that is known and not
// Ready, or "".
func lostNode(j *model.Job, w *world) string {
	var nodes []string
	if n := len(j.Status.Attempts); n > 0 {
		nodes = j.Status.Attempts[n-1].Nodes
	}
	for _, a := range j.Status.Allocations {
		nodes = append(nodes, a.Node)
	}
	for _, name := range nodes {
		if n, ok := w.nodes[name]; ok && n.Health == model.NodeNotReady {
			return name
		}
	}
	return ""
}

func placementText(placed []sched.Placement) string {
	s := ""
	for i, n := range placed {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s%v", n.Node, n.GPUs)
		if n.GPUMilli > 0 && n.GPUMilli < model.MilliPerGPU {
			s += fmt.Sprintf("@%dm", n.GPUMilli)
		}
	}
	return s
}
