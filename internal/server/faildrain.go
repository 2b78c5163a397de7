package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// A host with a bad GPU, driver or disk fails every job placed on it. A
// retry keeps off the node its attempt failed on (the core's avoid list),
// but each new job lands there again while the node stays Ready. So the
// server drains such a node itself, as Slurm drains a node its health check
// fails, once the failures point at the host rather than at the jobs:
//
//   - attempts of Config.DrainAfterFailures different jobs failed on the
//     node within failureDrainWindow and since it was last resumed (by an
//     administrator or its passing health check: forgetFailures); an
//     instance there exited non-zero or was killed, lost nodes and time
//     limits do not count; the replicas of one endpoint count as one job
//     (failureSource), so that a crash-looping endpoint, which makes a new
//     replica job for every failure, weighs as one program that fails;
//   - the jobs belong to two tenants or more, so that no tenant can drain
//     nodes by submitting jobs that fail;
//   - none of them failed on another node as well (a job, or an
//     endpoint's replicas, that fail wherever they run are at fault
//     themselves), and none named its nodes
//     (placement.nodes or exclude_nodes steer a job to a node: a failure
//     there says nothing of the host);
//   - at most a tenth of the fleet (at least one node) stands drained by
//     the server at once, and it drains at most one node per
//     failureDrainWindow: a fault shared by many jobs (a bad image used by
//     two tenants, a storage outage) fails jobs wherever they land and can
//     look like a bad host, one node after the other; the bounds give the
//     operator, paged by AllotNodeAutoDrained at the first drain, time to
//     see it before more of the fleet goes. AllotNodeFailingJobs still
//     fires for the nodes left in service.
//
// The drain is an ordinary one (drain.go): the work on the node runs on,
// nothing new lands there, 'allot node resume' ends it, and its reason lists
// the failed attempts. The evidence is the leader's memory of failures
// (Server.failures), noted as each attempt fails; a server that begins to
// lead (started, or elected) reads it back from what is stored beside its
// first cycles (rebuildFailures), so that a restart or a failover forgets
// nothing.

// DefaultDrainAfterFailures is Config.DrainAfterFailures' default.
const DefaultDrainAfterFailures = 3

// failureDrainWindow is how recent the failures must be; the same window as
// the alert AllotNodeFailingJobs.
const failureDrainWindow = 10 * time.Minute

// MaxDrainAfterFailures bounds Config.DrainAfterFailures: the server keeps
// at most nodeFailuresKept failures of a node.
const MaxDrainAfterFailures = nodeFailuresKept / 2

// autoDrainer is the name the server's own drains record as By, as its
// audit records name it.
const autoDrainer = "server"

// failureEvidence is the case against node: the latest failure of each job
// that counts, oldest first, and how many tenants they belong to.
type failureEvidence struct {
	failures []NodeFailure
	tenants  int
}

// hostFailures is the evidence fs, node's failures oldest first, hold
// against it at now: the latest failure of each job (or endpoint: its
// origin) that failed within
// failureDrainWindow and after since (the node's last resume: the host was
// seen to), named no nodes and failed on no other node, neither before
// (NodeFailure.elsewhere) nor since (elsewhere, asked of the jobs that
// count so far).
func hostFailures(fs []NodeFailure, since, now time.Time, elsewhere func(job string) bool) failureEvidence {
	var ev failureEvidence
	tenants := map[string]bool{}
	for i := len(fs) - 1; i >= 0; i-- {
		f := fs[i]
		if now.Sub(f.At) > failureDrainWindow || !f.At.After(since) || f.steered || f.elsewhere ||
			slices.ContainsFunc(ev.failures, func(g NodeFailure) bool { return g.origin() == f.origin() }) || elsewhere(f.origin()) {
			continue
		}
		ev.failures = append(ev.failures, f)
		tenants[f.Tenant] = true
	}
	slices.Reverse(ev.failures)
	ev.tenants = len(tenants)
	return ev
}

// forgetFailures records that node was resumed at now (by an administrator,
// or by its passing health check): the host was seen to, so the failures
// before now no longer count against it.
func (s *Server) forgetFailures(node string, now time.Time) {
	s.beatsMu.Lock()
	defer s.beatsMu.Unlock()
	s.resumed[node] = now
}

// failedAt is where and when an attempt of a job failed (Server.failedJobs).
type failedAt struct {
	node string
	at   time.Time
}

// noteFailedJob remembers that an attempt of f's job (or a replica of its
// endpoint: f's origin) failed on node, for failedElsewhere, forgetting
// those whose failures all left the window once the memory doubled since
// it last did. beatsMu is held.
func (s *Server) noteFailedJob(node string, f NodeFailure) {
	s.failedJobs[f.origin()] = append(s.failedJobs[f.origin()], failedAt{node, f.At})
	if len(s.failedJobs) < max(1024, 2*s.failedJobsPruned) {
		return
	}
	for job, fs := range s.failedJobs {
		if f.At.Sub(fs[len(fs)-1].at) > failureDrainWindow {
			delete(s.failedJobs, job)
		}
	}
	s.failedJobsPruned = len(s.failedJobs)
}

// failedElsewhere returns whether an attempt of job (an origin: a job's
// ID, or an endpoint's failureSource) failed on another node
// than node within the window, as far as this server saw. beatsMu is held.
func (s *Server) failedElsewhere(node string) func(job string) bool {
	return func(job string) bool {
		return slices.ContainsFunc(s.failedJobs[job], func(x failedAt) bool { return x.node != node })
	}
}

// enough reports whether ev makes the case for a drain needing jobs jobs.
func (ev failureEvidence) enough(jobs int) bool {
	return jobs > 0 && len(ev.failures) >= jobs && ev.tenants >= 2
}

// reason is the drain's reason: what failed, and how to undo it.
func (ev failureEvidence) reason(node string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempts of %d jobs of %d tenants failed here within %s, on no other node:", len(ev.failures), ev.tenants, failureDrainWindow)
	for i, f := range ev.failures {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s) exit %d", f.Job, f.Tenant, f.ExitCode)
	}
	fmt.Fprintf(&b, "; check the host, then allot node resume %s", node)
	return b.String()
}

// drainIfFailing drains node when the failures this server saw there make
// the case (see the top of this file). It is called after each failure is
// noted; an error writing the drain is logged, not returned: the failure
// itself is recorded.
func (s *Server) drainIfFailing(ctx context.Context, node string) {
	need := s.cfg.DrainAfterFailures
	if need <= 0 {
		return
	}
	s.autoDrainMu.Lock() // one decision at a time: the bound counts the others' drains
	defer s.autoDrainMu.Unlock()
	now := s.clock.Now().UTC()
	s.beatsMu.Lock()
	ev := hostFailures(s.failures[node], s.resumed[node], now, s.failedElsewhere(node))
	s.beatsMu.Unlock()
	if !ev.enough(need) {
		return
	}
	w := s.world()
	if n, ok := w.nodes[node]; !ok || n.Health != model.NodeReady {
		return // drained, NotReady or gone: nothing new lands there anyway
	}
	drained := 0
	for _, n := range w.fleet.Nodes {
		if rec, _, _ := s.cache.node(n.Name); rec.Drain != nil && rec.Drain.By == autoDrainer {
			drained++
		}
	}
	if bound := max(1, len(w.fleet.Nodes)/10); drained >= bound {
		s.log.Warn("node fails jobs, but the server drained as many nodes as it may and leaves it Ready",
			"node", node, "jobs", len(ev.failures), "tenants", ev.tenants, "drained_by_server", drained, "bound", bound)
		return
	}
	if !s.lastAutoDrain.IsZero() && now.Sub(s.lastAutoDrain) < failureDrainWindow {
		s.log.Warn("node fails jobs, but the server drained another node less than 10 minutes ago and leaves it Ready",
			"node", node, "jobs", len(ev.failures), "tenants", ev.tenants, "last_drain", s.lastAutoDrain)
		return
	}
	d := &NodeDrain{Reason: clipReason(ev.reason(node)), By: autoDrainer, At: now}
	wrote, err := s.updateNode(context.WithoutCancel(ctx), node, func(r *nodeRecord, txn *store.Txn) bool {
		if r.Drain != nil || model.Health(r.Health) != model.NodeReady {
			return false // an administrator drained it meanwhile, or its agent went away
		}
		r.Drain = d
		s.auditTxn(txn, Principal{Admin: true, System: autoDrainer}, ActionNodeDrain, "node/"+node, "reason: "+d.Reason)
		return true
	})
	if err != nil {
		s.log.Error("draining a node that fails jobs", "node", node, "err", err)
		return
	}
	if wrote {
		s.lastAutoDrain = now
		s.log.Warn("node drained: jobs of several tenants failed there", "node", node, "reason", d.Reason)
		s.Kick()
	}
}

// clipReason keeps r within a drain reason's limit, cutting at a
// character's boundary.
func clipReason(r string) string {
	if len(r) <= MaxQuotaReason {
		return r
	}
	return strings.ToValidUTF8(r[:MaxQuotaReason-len("…")], "") + "…"
}

// rebuildFailures reads this server's memory of failures back from the
// store's records, as it would stand had this server noted every failure
// itself: the failed attempts of the jobs that have not ended, and of those
// that ended within failureDrainWindow before now (older ones no longer
// count against a node; 'allot node show' lists them until then), the time
// of each node's last resume, and the time of the server's latest drain
// that stands. lead runs it beside its loops, so that reading the ended jobs
// does not hold the first cycle back: what this server noted meanwhile is
// kept. A job that cannot be read is left out and logged.
func (s *Server) rebuildFailures(ctx context.Context, now time.Time) {
	defer s.failuresRebuilt.Store(true)
	jobs := s.cache.wholeJobs(func(j *model.Job) bool { return !j.Status.State.Terminal() })
	for _, id := range s.cache.endedSince(now.Add(-failureDrainWindow)) {
		_, j, err := s.readJob(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("rebuilding the failures of nodes: a job cannot be read", "job", id, "err", err)
			continue
		}
		jobs = append(jobs, j)
	}
	type noted struct {
		node string
		f    NodeFailure
	}
	var all []noted
	for _, j := range jobs {
		for i, a := range j.Status.Attempts {
			if a.Reason == "Failed" && a.FailedNode != "" {
				all = append(all, noted{a.FailedNode, failureOf(j, i)})
			}
		}
	}
	resumed := map[string]time.Time{}
	var lastDrain time.Time
	for _, n := range s.world().fleet.Nodes {
		rec, _, _ := s.cache.node(n.Name)
		if !rec.ResumedAt.IsZero() {
			resumed[n.Name] = rec.ResumedAt
		}
		if d := rec.Drain; d != nil && d.By == autoDrainer && d.At.After(lastDrain) {
			lastDrain = d.At
		}
	}
	s.autoDrainMu.Lock()
	defer s.autoDrainMu.Unlock()
	s.beatsMu.Lock()
	defer s.beatsMu.Unlock()
	type attemptKey struct {
		job     string
		attempt int
	}
	seen := map[attemptKey]bool{}
	for _, x := range all {
		seen[attemptKey{x.f.Job, x.f.Attempt}] = true
	}
	for node, fs := range s.failures { // noted by this server: meanwhile, or in an earlier term
		for _, f := range fs {
			if !seen[attemptKey{f.Job, f.Attempt}] {
				all = append(all, noted{node, f})
			}
		}
	}
	slices.SortStableFunc(all, func(x, y noted) int { return x.f.At.Compare(y.f.At) })
	for node, t := range s.resumed {
		if t.After(resumed[node]) {
			resumed[node] = t
		}
	}
	s.failures, s.failedJobs, s.failedJobsPruned, s.resumed = map[string][]NodeFailure{}, map[string][]failedAt{}, 0, resumed
	for _, x := range all {
		s.keepFailure(x.node, x.f)
	}
	if lastDrain.After(s.lastAutoDrain) {
		s.lastAutoDrain = lastDrain
	}
}
