package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// DefaultNodeTimeout is how long a Ready node may go without a heartbeat
// before it becomes NotReady.
const DefaultNodeTimeout = 30 * time.Second

// Agents is the node layer of real hosts: one agent per node registers the
// node's GPUs, heartbeats, runs the attempts the server assigns and reports
// what happens to them (see lifecycle.go). A node is NotReady until its
// agent registers, and again when it misses heartbeats for Timeout; the
// jobs on it are then requeued (NodeLost). Endings are reported facts, so
// Ended never reports any.
type Agents struct {
	// Timeout is how long a Ready node may go without a heartbeat; 0 means
	// DefaultNodeTimeout.
	Timeout time.Duration
}

// InitialHealth implements Nodes: a node is NotReady until its agent
// registers.
func (Agents) InitialHealth(model.Node) model.Health { return model.NodeNotReady }

// Ended implements Nodes: agents report endings as events.
func (Agents) Ended([]*model.Job, time.Time) []Ending { return nil }

// GPU is one GPU as an agent reports it.
type GPU struct {
	Index     int
	UUID      string
	Model     string
	MemoryMiB int64
}

// AgentMode reports whether the server runs on agents' facts.
func (s *Server) AgentMode() bool { return s.agentMode }

func (s *Server) needAgents() error {
	if !s.agentMode {
		return refuse(CodeConflict, "", "the server simulates its nodes (--agents simulated); agents are not accepted")
	}
	return nil
}

// RegisterNode records that an agent runs node name with gpus, reachable
// at address, and marks the node Ready. The node must be in the fleet and
// the GPUs must match its SKU in count and model.
func (s *Server) RegisterNode(ctx context.Context, name string, gpus []GPU, address string) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	w := s.world()
	n, ok := w.nodes[name]
	if !ok {
		return refuse(CodeNotFound, "", "no node %q in the fleet", name)
	}
	sku := w.fleet.Catalog[n.SKU]
	if len(gpus) != sku.GPUs {
		return refuse(CodeInvalidSpec, "gpus", "node %s is a %s with %d GPUs; the agent reported %d", name, n.SKU, sku.GPUs, len(gpus))
	}
	rec := nodeRecord{Health: string(model.NodeReady), UpdatedAt: s.clock.Now(), Address: address}
	seen := map[int]bool{}
	for i, g := range gpus {
		if g.Model != sku.GPUModel {
			return refuse(CodeInvalidSpec, fmt.Sprintf("gpus[%d].model", i), "node %s is a %s with %s GPUs; GPU %d is a %q",
				name, n.SKU, sku.GPUModel, g.Index, g.Model)
		}
		if g.Index < 0 || g.Index >= sku.GPUs || seen[g.Index] {
			return refuse(CodeInvalidSpec, fmt.Sprintf("gpus[%d].index", i), "index %d is out of range or repeated (want 0..%d once each)", g.Index, sku.GPUs-1)
		}
		seen[g.Index] = true
		rec.GPUs = append(rec.GPUs, gpuRecord{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB})
	}
	_, err := s.updateNode(ctx, name, func(r *nodeRecord, _ *store.Txn) bool {
		drain := r.Drain // an agent's restart does not undo a drain
		*r = rec
		r.Drain = drain
		return true
	})
	if err != nil {
		return err
	}
	s.beat(name)
	s.log.Info("node registered", "node", name, "gpus", len(gpus), "address", address, "was", n.Health)
	s.Kick()
	return nil
}

// Heartbeat records that node name's agent is alive. A node that missed
// heartbeats becomes Ready again; a node never registered is refused
// (Conflict), and the agent registers.
func (s *Server) Heartbeat(ctx context.Context, name string) error {
	if err := s.needAgents(); err != nil {
		return err
	}
	if _, ok := s.world().nodes[name]; !ok {
		return refuse(CodeNotFound, "", "no node %q in the fleet", name)
	}
	rec, _, ok := s.cache.node(name)
	if !ok || len(rec.GPUs) == 0 {
		return refuse(CodeConflict, "", "node %s is not registered; POST /v1/nodes/%s/register first", name, name)
	}
	s.beat(name)
	if rec.Health != string(model.NodeReady) {
		now := s.clock.Now()
		if _, err := s.updateNode(ctx, name, setHealth(model.NodeReady, now)); err != nil {
			return err
		}
		s.log.Info("node ready again: heartbeat resumed", "node", name)
		s.Kick()
	}
	return nil
}

func (s *Server) beat(name string) {
	s.beatsMu.Lock()
	s.beats[name] = s.clock.Now()
	s.beatsMu.Unlock()
	s.m.heartbeats.Inc()
}

// updateNode applies change to node name's record as the store has it and
// writes the result, conditional on the record read: a write meanwhile (an
// administrator's drain, a heartbeat) makes it read and apply change again,
// so neither undoes the other. change may add operations to the write (an
// audit record) and returns false to write nothing; updateNode reports
// whether it wrote.
func (s *Server) updateNode(ctx context.Context, name string, change func(*nodeRecord, *store.Txn) bool) (bool, error) {
	key := prefixNodes + name
	for range 5 {
		var rec nodeRecord
		cond := store.Absent(key)
		kv, err := s.st.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return false, fmt.Errorf("read node %s: %w", name, err)
		default:
			if err := json.Unmarshal(kv.Value, &rec); err != nil {
				return false, fmt.Errorf("read node %s: %w", name, err)
			}
			cond = store.ModRevIs(key, kv.ModRev)
		}
		var txn store.Txn
		if !change(&rec, &txn) {
			return false, nil
		}
		v, _ := json.Marshal(rec)
		txn.If = append(txn.If, cond)
		txn.Then = append(txn.Then, store.PutOp(key, v))
		rev, err := s.st.Txn(ctx, txn)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("record node %s: %w", name, err)
		}
		s.cache.putKV(key, v, rev)
		return true, nil
	}
	return false, refuse(CodeConflict, "name", "node %s changed five times while it was being written; try again", name)
}

// setHealth is the change of a node's health to h at now.
func setHealth(h model.Health, now time.Time) func(*nodeRecord, *store.Txn) bool {
	return func(r *nodeRecord, _ *store.Txn) bool {
		r.Health, r.UpdatedAt = string(h), now
		return true
	}
}

// CheckHeartbeats marks NotReady every Ready node whose agent has not
// heartbeated for the node timeout; the next cycle requeues its jobs. Nodes
// Ready when the server started get one timeout of grace. Run calls it
// periodically in agent mode; tests call it directly.
func (s *Server) CheckHeartbeats(ctx context.Context) error {
	if !s.agentMode {
		return nil
	}
	now := s.clock.Now()
	health, _ := s.cache.nodeHealth()
	changed := false
	for name, h := range health {
		if h != model.NodeReady && h != model.NodeDraining {
			continue
		}
		s.beatsMu.Lock()
		last, ok := s.beats[name]
		if !ok {
			s.beats[name] = now // known Ready from before a restart: grace
			last = now
		}
		s.beatsMu.Unlock()
		if now.Sub(last) < s.nodeTimeout {
			continue
		}
		if _, err := s.updateNode(ctx, name, setHealth(model.NodeNotReady, now)); err != nil {
			return err
		}
		s.log.Warn("node not ready: missed heartbeats", "node", name, "last_heartbeat", last, "timeout", s.nodeTimeout)
		changed = true
	}
	if changed {
		s.Kick()
	}
	return nil
}

// AssignedGPU is one GPU of an assignment.
type AssignedGPU struct {
	Index int
	UUID  string
}

// Assignment is one instance of an attempt that a node should run.
type Assignment struct {
	Job        string
	Attempt    int
	Rank       int
	WorldSize  int
	Command    []string
	Env        map[string]string
	ArrayIndex *int // the job's index in its array; nil when in none
	GPUs       []AssignedGPU
	GPUMilli   int64
	MasterAddr string
	MasterPort int
	ResumeFrom string
	ResumeNode string // the node whose disk holds ResumeFrom; "" when unknown
	// NoResume says why the instance starts from the beginning though the
	// job has a checkpoint: not every rank reaches its part
	// (model.JobStatus.ResumeOf).
	NoResume string
	Timeout  time.Duration
	Grace    time.Duration
	// Started is set when the agent already reported the instance started:
	// an agent that does not run it has lost it.
	Started bool
	// Container is the job's image, nil for a job run on the host.
	Container *model.Container
	// CPUMilli and MemoryMiB are the instance's requests (0: not set).
	CPUMilli, MemoryMiB int64
	// Tenant is the job's tenant; RegistryAuth its credential for the
	// registry of Container's image, nil when it has none
	// (registry_auth.go).
	Tenant       string
	RegistryAuth *RegistryAuth
}

// StopOrder is an instance a node must stop.
type StopOrder struct {
	Job     string
	Attempt int
	Rank    int
	Grace   time.Duration
	Reason  string
}

// Assignments is what a node should run and stop as of Rev.
type Assignments struct {
	Rev  int64
	Run  []Assignment
	Stop []StopOrder
}

// NodeAssignments returns what node should run and stop. When no job
// changed after rev it waits up to wait for a change first.
func (s *Server) NodeAssignments(ctx context.Context, node string, after int64, wait time.Duration) (Assignments, error) {
	if err := s.needAgents(); err != nil {
		return Assignments{}, err
	}
	if _, ok := s.world().nodes[node]; !ok {
		return Assignments{}, refuse(CodeNotFound, "", "no node %q in the fleet", node)
	}
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	for {
		rev, changed := s.cache.jobsChanged()
		if rev > after || wait <= 0 {
			a := s.assignments(node, rev)
			s.withRegistryAuth(ctx, &a)
			return a, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			a := s.assignments(node, rev)
			s.withRegistryAuth(ctx, &a)
			return a, nil
		case <-ctx.Done():
			return Assignments{}, ctx.Err()
		}
	}
}

func (s *Server) assignments(node string, rev int64) Assignments {
	out := Assignments{Rev: rev}
	rec, _, _ := s.cache.node(node)
	uuids := map[int]string{}
	for _, g := range rec.GPUs {
		uuids[g.Index] = g.UUID
	}
	holding := s.cache.holding()
	stopping := stoppingNodes(holding)
	for _, j := range holding {
		st := j.Status
		n := len(st.Attempts)
		if n == 0 {
			continue
		}
		grace := s.stopGrace(j)
		if resizing(j) {
			// A resize: the old attempt's ranks here stop; no rank of the
			// new one starts anywhere before every old one is gone.
			nodes := st.Attempts[n-2].Nodes
			for r, in := range st.Resizing {
				if r < len(nodes) && nodes[r] == node && in.Live() {
					out.Stop = append(out.Stop, StopOrder{Job: j.ID, Attempt: n - 1, Rank: r, Grace: grace, Reason: ReasonResized})
				}
			}
			continue
		}
		if gangHeld(j, stopping) {
			continue // no rank starts before every node of the gang is free
		}
		switch st.State {
		case model.StatePreempted:
			nodes := st.Attempts[n-1].Nodes
			for r, in := range st.Instances {
				if r < len(nodes) && nodes[r] == node && in.Live() {
					out.Stop = append(out.Stop, StopOrder{Job: j.ID, Attempt: n, Rank: r, Grace: grace, Reason: st.Reason})
				}
			}
		case model.StatePreparing, model.StateRunning:
			var resume []model.Resume
			var noResume string
			for r, a := range st.Allocations {
				if a.Node != node || (r < len(st.Instances) && st.Instances[r].Exited) {
					continue
				}
				if resume == nil && noResume == "" {
					resume, noResume = st.ResumeOf(st.Attempts[n-1].Nodes)
				}
				as := Assignment{Job: j.ID, Attempt: n, Rank: r, WorldSize: len(st.Allocations), Command: j.Spec.Command,
					Env: j.Spec.Env, ArrayIndex: j.Spec.ArrayIndex, GPUMilli: a.GPUMilli, NoResume: noResume, Timeout: timeLeft(j),
					Grace: grace, MasterAddr: s.address(st.Allocations[0].Node), MasterPort: masterPort(j.ID, n),
					Container: j.Spec.Container, CPUMilli: j.Spec.Resources.CPUMilli, MemoryMiB: j.Spec.Resources.MemoryMiB,
					Tenant: j.Spec.Tenant}
				if r < len(resume) {
					as.ResumeFrom, as.ResumeNode = resume[r].Path, resume[r].Node
				}
				for _, g := range a.GPUs {
					as.GPUs = append(as.GPUs, AssignedGPU{Index: g, UUID: uuids[g]})
				}
				if r < len(st.Instances) {
					as.Started = st.Instances[r].Started
				}
				out.Run = append(out.Run, as)
			}
		}
	}
	return out
}

// stoppingNodes are the nodes where a stopping job (Preempted: told to
// stop, within its grace; or the old ranks of a resized one) still has
// live processes.
func stoppingNodes(holding []*model.Job) map[string]string {
	out := map[string]string{}
	for _, j := range holding {
		st := j.Status
		n := len(st.Attempts)
		if resizing(j) {
			nodes := st.Attempts[n-2].Nodes
			for r, in := range st.Resizing {
				if r < len(nodes) && in.Live() {
					out[nodes[r]] = j.ID
				}
			}
			continue
		}
		if st.State != model.StatePreempted || n == 0 {
			continue
		}
		nodes := st.Attempts[n-1].Nodes
		for r, in := range st.Instances {
			if r < len(nodes) && in.Live() {
				out[nodes[r]] = j.ID
			}
		}
	}
	return out
}

// gangHeld reports whether gang j, bound and with no rank started yet,
// waits for a node of its placement that a stopping job still occupies
// (stopping: node → that job). Its ranks are handed to the
// agents together once every node is free, so that they start within a
// poll of each other instead of one rank running alone while a previous
// occupant uses its grace elsewhere.
func gangHeld(j *model.Job, stopping map[string]string) bool {
	st := j.Status
	if st.State != model.StatePreparing || len(st.Allocations) < 2 || len(stopping) == 0 {
		return false
	}
	for _, in := range st.Instances {
		if in.Started || in.Exited {
			return false // handed out already: never take a rank back
		}
	}
	for _, a := range st.Allocations {
		if by, ok := stopping[a.Node]; ok && by != j.ID {
			return true
		}
	}
	return false
}

// address is where a node's agent said it is reachable, else its name.
func (s *Server) address(node string) string {
	if rec, _, ok := s.cache.node(node); ok && rec.Address != "" {
		return rec.Address
	}
	return node
}

// masterPort is the rendezvous port of an attempt: 29500 to 30499, fixed
// per job and attempt.
func masterPort(job string, attempt int) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", job, attempt)
	return 29500 + int(h.Sum32()%1000)
}

// ReportEvent applies an agent's event about instance e.Rank of attempt n
// of job id (lifecycle.go) and returns the job as it is afterwards.
// A node token may report only as its own node.
func (s *Server) ReportEvent(ctx context.Context, p Principal, id string, n int, e Event) (*model.Job, error) {
	if err := s.needAgents(); err != nil {
		return nil, err
	}
	if !p.Admin && !p.Runs(e.Node) {
		return nil, refuse(CodeForbidden, "node", "a token of node %s may not report for node %q", p.Node, e.Node)
	}
	return s.updateJob(ctx, p, id, func(old *model.Job) (*model.Job, string, error) {
		if err := rankRunsOn(old, n, e.Rank, e.Node); err != nil {
			return nil, "", err
		}
		return applyEvent(old, n, e, s.clock.Now(), limits{maxLost: s.cfg.MaxLost, retryBackoff: s.cfg.RetryBackoff, maxGrace: s.cfg.MaxGrace})
	}, "attempt", n, "rank", e.Rank, "node", e.Node, "event", e.Type, "exit_code", e.ExitCode, "outcome", e.Outcome)
}

// rankRunsOn refuses an event about rank of attempt n of j from a node the
// rank is not bound to: a node speaks only for the instances it runs, so
// one node cannot end another node's rank of a gang. Events about another
// attempt than the current one are left to applyEvent (late news).
func rankRunsOn(j *model.Job, n, rank int, node string) error {
	if n == 0 || (n != len(j.Status.Attempts) && !(n == len(j.Status.Attempts)-1 && resizing(j))) {
		return nil
	}
	nodes := j.Status.Attempts[n-1].Nodes
	if rank < 0 || rank >= len(nodes) {
		return nil // applyEvent names the rank out of range
	}
	if nodes[rank] != node {
		return refuse(CodeForbidden, "rank", "rank %d of attempt %d of job %s runs on node %s, not on %s", rank, n, j.ID, nodes[rank], node)
	}
	return nil
}

// CheckpointReport is a checkpoint a job saved.
type CheckpointReport struct {
	// Path is where: a URL, or a path in the job's checkpoint directory.
	Path string
	// Node is the node whose disk holds Path: a node token's own node (or
	// empty for it), or one of the nodes of the job's current attempt.
	Node string
	// Shared says every node reaches Path (a checkpoint root all hosts
	// mount): it is recorded without a node, as a URL always is.
	Shared bool
	// Rank, when set, makes Path that rank's part of a save the job's ranks
	// each make (model.CheckpointPart); nil makes Path the checkpoint of
	// every rank.
	Rank *int
	// Step names a rank's save, the same for every rank; empty means
	// Path's last element.
	Step string
}

// ReportCheckpoint records that job id saved a checkpoint; its next
// attempt resumes from it (ALLOT_RESUME_FROM). A report of one rank's part
// (c.Rank) counts once every rank of the current attempt has reported its
// part of the same save (model.JobStatus.AddPart). A node token reports
// only what lies on its own node and only for the ranks it runs; the job's
// tenant and the administrator (whose token the agents of 'allot up'
// share) may name any node of the job's current attempt. A queued job
// prefers the nodes of its checkpoint.
func (s *Server) ReportCheckpoint(ctx context.Context, p Principal, id string, c CheckpointReport) (*model.Job, error) {
	if c.Path == "" {
		return nil, refuse(CodeInvalidSpec, "path", "must not be empty")
	}
	if p.Node != "" {
		if c.Node != "" && c.Node != p.Node {
			return nil, refuse(CodeForbidden, "node", "a token of node %s may report only checkpoints on its own node, not on %s", p.Node, c.Node)
		}
		c.Node = p.Node
	}
	if c.Shared || model.IsCheckpointURL(c.Path) {
		c.Node = "" // no node holds it; who may report for the job is updateJob's to check
	}
	if c.Step == "" {
		c.Step = model.StepOf(c.Path)
	}
	return s.updateJob(ctx, p, id, func(old *model.Job) (*model.Job, string, error) {
		if old.Status.State.Terminal() {
			return nil, "", refuse(CodeConflict, "", "job %s already ended: %s", id, old.Status.State)
		}
		if c.Node != "" && !ranOn(old, c.Node) {
			return nil, "", refuse(CodeInvalidSpec, "node", "job %s's current attempt does not run on node %s", id, c.Node)
		}
		if c.Rank == nil {
			j := checkpointJob(old, c.Path, c.Node, s.clock.Now())
			if old.Status.CheckpointPath == c.Path && old.Status.CheckpointNode == c.Node && !old.Status.LastCheckpoint.IsZero() && len(old.Status.CheckpointParts) == 0 {
				return j, "", nil
			}
			return j, "checkpoint recorded", nil
		}
		n := len(old.Status.Attempts)
		if n == 0 {
			return nil, "", refuse(CodeConflict, "rank", "job %s has not run: no rank has a part to report", id)
		}
		nodes := old.Status.Attempts[n-1].Nodes
		r := *c.Rank
		if r < 0 || r >= len(nodes) {
			return nil, "", refuse(CodeInvalidSpec, "rank", "is %d; attempt %d of job %s has ranks 0 to %d", r, n, id, len(nodes)-1)
		}
		if p.Node != "" && nodes[r] != p.Node {
			return nil, "", refuse(CodeForbidden, "rank", "rank %d of attempt %d of job %s runs on node %s, not on %s", r, n, id, nodes[r], p.Node)
		}
		if resizing(old) {
			// The old ranks of a resize save in their grace (the new
			// ones have not started): a part of their world completes
			// no save of the new one (resize.go).
			return nil, "", nil
		}
		j := cloneJob(old)
		part := model.CheckpointPart{Rank: r, Attempt: n, Step: c.Step, Path: c.Path, Node: c.Node, At: s.clock.Now()}
		if !j.Status.AddPart(part, len(nodes)) {
			return j, "", nil
		}
		return j, "checkpoint recorded: every rank's part of " + c.Step, nil
	}, "path", c.Path, "node", c.Node, "step", c.Step)
}

// JobFilesToKeep says which of jobs node must keep the files of (its
// checkpoints among them) when they have been unused there for its keep:
// those that have not ended and ran there, or whose checkpoint lies there.
// Their next attempt may come back (a requeued job prefers the node of its
// checkpoint); the files of an ended job, or of one the server no longer
// knows, may go.
func (s *Server) JobFilesToKeep(node string, jobs []string) ([]string, error) {
	if err := s.needAgents(); err != nil {
		return nil, err
	}
	if _, ok := s.world().nodes[node]; !ok {
		return nil, refuse(CodeNotFound, "", "no node %q in the fleet", node)
	}
	keep := []string{}
	for _, id := range jobs {
		ref, _, ok := s.cache.job(id)
		if !ok || ref.job == nil || ref.job.Status.State.Terminal() {
			continue
		}
		if st := ref.job.Status; slices.Contains(st.CheckpointNodes(), node) || slices.ContainsFunc(st.Attempts, func(a model.Attempt) bool {
			return slices.Contains(a.Nodes, node)
		}) {
			keep = append(keep, id)
		}
	}
	return keep, nil
}

// ranOn reports whether node runs an instance of j's current attempt (or
// of the attempt before it, while a resize stops its ranks).
func ranOn(j *model.Job, node string) bool {
	n := len(j.Status.Attempts)
	return n > 0 && slices.Contains(j.Status.Attempts[n-1].Nodes, node) ||
		resizing(j) && slices.Contains(j.Status.Attempts[n-2].Nodes, node)
}

// timeLeft is the time limit (retry.timeout) of j's current attempt: what
// is left of it after the attempts a resize ended, which count as one run;
// zero when the job has none.
func timeLeft(j *model.Job) time.Duration {
	t := j.Spec.Retry.Timeout
	if t <= 0 {
		return 0
	}
	return max(t-resizedRun(j), time.Second)
}

// updateJob changes job id by f, conditioned on the version f saw, and
// retries when a cycle or another report wrote the job meanwhile. f returns
// nil for no change; a non-empty message is logged with args.
func (s *Server) updateJob(ctx context.Context, p Principal, id string, f func(*model.Job) (*model.Job, string, error), args ...any) (*model.Job, error) {
	var msg string
	old, j, rev, err := s.rewriteJob(ctx, id, "update", func(old *model.Job) (*model.Job, error) {
		if !p.mayReport(old) {
			return nil, refuse(CodeForbidden, "", "job %q belongs to another tenant and does not run on this node", id)
		}
		var j *model.Job
		var err error
		j, msg, err = f(old)
		return j, err
	})
	if err != nil {
		return nil, err
	}
	if j == nil {
		return old, nil // nothing to change: the agent's late news
	}
	if msg != "" {
		s.log.Info(msg, append([]any{"job", id, "tenant", j.Spec.Tenant, "state", j.Status.State,
			"reason", j.Status.Reason, "detail", j.Status.Detail, "rev", rev}, args...)...)
	}
	if j.Status.State != old.Status.State {
		s.Kick()
	}
	if node := failedBy(old, j); node != "" {
		s.m.nodeFailed.WithLabelValues(node).Inc()
		s.noteFailure(node, failureOf(j, len(j.Status.Attempts)-1))
		s.drainIfFailing(ctx, node)
	}
	return j, nil
}

// NodeFailure is one attempt that failed on a node: what 'allot node show'
// lists under "Failures" (the leader's memory, rebuilt from the stored jobs
// when it begins to lead: rebuildFailures).
type NodeFailure struct {
	Job, Tenant string
	Attempt     int
	ExitCode    int
	At          time.Time
	Detail      string // the attempt's: which rank, how it ended

	// What faildrain.go weighs: the job named its nodes; an earlier
	// attempt of it failed on another node (a lost node is no failure);
	// the program whose failures count as one (failureSource).
	steered, elsewhere bool
	source             string
}

// origin is what f counts as for faildrain.go: its source, else its job.
func (f NodeFailure) origin() string {
	if f.source != "" {
		return f.source
	}
	return f.Job
}

// failureSource is what j's failures count as in a drain decision: all
// replicas of one endpoint (jobs labelled as its replicas) are one
// program, however many of them fail, so that one tenant's crashing
// endpoint weighs as one job; any other job is itself.
func failureSource(j *model.Job) string {
	if name := endpoint.ReplicaOf(j.Spec.Labels); name != "" {
		return "endpoint " + j.Spec.Tenant + "/" + name
	}
	return j.ID
}

// nodeFailuresKept is how many failed attempts per node the server keeps
// (the evidence of faildrain.go); nodeFailuresShown of them, the latest,
// are what 'allot node show' lists.
const (
	nodeFailuresKept  = 20
	nodeFailuresShown = 5
)

// failureOf is attempt i of j, which failed on its FailedNode, as the
// failure noted there.
func failureOf(j *model.Job, i int) NodeFailure {
	a := j.Status.Attempts[i]
	return NodeFailure{Job: j.ID, Tenant: j.Spec.Tenant, Attempt: a.Number, ExitCode: a.ExitCode, At: a.Ended, Detail: a.Detail,
		steered: len(j.Spec.Placement.Nodes)+len(j.Spec.Placement.ExcludeNodes) > 0, source: failureSource(j),
		elsewhere: slices.ContainsFunc(j.Status.Attempts[:i+1], func(b model.Attempt) bool {
			return b.Reason == "Failed" && b.FailedNode != a.FailedNode
		})}
}

// noteFailure keeps f among node's latest failures.
func (s *Server) noteFailure(node string, f NodeFailure) {
	s.beatsMu.Lock()
	defer s.beatsMu.Unlock()
	s.keepFailure(node, f)
}

// keepFailure is noteFailure with beatsMu held.
func (s *Server) keepFailure(node string, f NodeFailure) {
	fs := append(s.failures[node], f)
	if len(fs) > nodeFailuresKept {
		fs = slices.Delete(fs, 0, len(fs)-nodeFailuresKept)
	}
	s.failures[node] = fs
	s.noteFailedJob(node, f)
}

// failedBy is the node whose instance's failure ended j's current attempt
// in the write from old to j, "" when that write ended none so.
func failedBy(old, j *model.Job) string {
	n := len(j.Status.Attempts)
	if n == 0 || n != len(old.Status.Attempts) || !old.Status.Attempts[n-1].Ended.IsZero() {
		return ""
	}
	if a := j.Status.Attempts[n-1]; a.Reason == "Failed" {
		return a.FailedNode
	}
	return ""
}
