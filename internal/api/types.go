package api

import (
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
)

// Job is a job as the API shows it (docs/api.md).
type Job struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Tenant      string       `json:"tenant"`
	State       string       `json:"state"`
	Reason      string       `json:"reason"`
	Detail      string       `json:"detail"`
	Priority    string       `json:"priority"`
	Spec        JobDocument  `json:"spec"`
	SubmittedAt *time.Time   `json:"submitted_at"`
	StartedAt   *time.Time   `json:"started_at"`
	EndedAt     *time.Time   `json:"ended_at"`
	Allocations []Allocation `json:"allocations"`
	Attempts    int          `json:"attempts"`
	Preemptions int          `json:"preemptions"`
	// Instances is how many instances the job holds now (its
	// allocations), or asks for to start while it holds none; an elastic
	// job's range is spec.elastic.
	Instances int `json:"instances"`
	// Resizes counts the attempts an elastic job ended to go on with
	// another number of instances (attempts ended "Resized").
	Resizes int `json:"resizes"`
	// AttemptHistory is every attempt with how it ended.
	AttemptHistory []Attempt `json:"attempt_history"`
	// CheckpointPath is the last checkpoint the job reported; the next
	// attempt resumes from it.
	CheckpointPath string `json:"checkpoint_path"`
	// CheckpointNode is the node whose disk holds it, when known; the
	// next attempt prefers that node.
	CheckpointNode string `json:"checkpoint_node,omitempty"`
	// CheckpointParts are the parts of the checkpoint when the job's ranks
	// save each their own (checkpoint_path is rank 0's); the next attempt
	// resumes every rank from its part, or none of them.
	CheckpointParts []CheckpointPart `json:"checkpoint_parts,omitempty"`
	// Preparing says, of a Preparing job, what each instance whose agent
	// pulls its image has fetched so far.
	Preparing []Pull `json:"preparing,omitempty"`
}

// Pull is the pull of an instance's image (wire.Pull).
type Pull = wire.Pull

// CheckpointPart is one rank's part of a job's checkpoint.
type CheckpointPart struct {
	Rank int    `json:"rank"`
	Step string `json:"step"`
	Path string `json:"path"`
	Node string `json:"node,omitempty"`
}

// Attempt is one run of a job: where, when, and how it ended (reason
// Completed, Failed, Preempted, NodeLost, TimedOut, Canceled…; exit_code
// -1 when a signal or the server ended it).
type Attempt struct {
	Number int      `json:"number"`
	Nodes  []string `json:"nodes"`
	// Placed is when the attempt was bound to its nodes; it is billed
	// from Started (when it began to run) to Ended (when its processes
	// were gone); StopOrdered is when they were told to stop.
	Placed      *time.Time `json:"placed,omitempty"`
	Started     *time.Time `json:"started"`
	Ended       *time.Time `json:"ended"`
	StopOrdered *time.Time `json:"stop_ordered,omitempty"`
	ExitCode    int        `json:"exit_code"`
	Reason      string     `json:"reason"`
	Detail      string     `json:"detail"`
	// FailedNode is the node whose instance failed (or was lost) and so
	// ended the attempt; a retry avoids it when another node fits.
	FailedNode string `json:"failed_node,omitempty"`
	// Pricing and Rates are how the attempt is billed and what each
	// instance accrues per hour (docs/cost.md).
	Pricing string    `json:"pricing,omitempty"`
	Rates   []float64 `json:"usd_per_hour,omitempty"`
}

// Allocation is what one instance of a job holds on one node.
type Allocation struct {
	Node     string `json:"node"`
	GPUs     []int  `json:"gpus"`
	GPUMilli int64  `json:"gpu_milli"`
}

// JobDocument is a job spec in job-file form (package spec), so a job read
// back can be submitted again as it is.
type JobDocument = spec.Document

// NewJobDocument returns s in job-file form.
func NewJobDocument(s model.JobSpec) JobDocument { return spec.DocumentOf(s) }

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// job is j as p may read it (server.Server.ForViewer), in the API's form.
func (h *handler) job(p server.Principal, j *model.Job) Job { return NewJob(h.srv.ForViewer(p, j)) }

// NewJob returns j as the API shows it.
func NewJob(j *model.Job) Job {
	st := j.Status
	out := Job{
		ID: j.ID, Name: j.Spec.Name, Tenant: j.Spec.Tenant, State: string(st.State), Reason: st.Reason, Detail: st.Detail,
		Priority: j.Spec.Priority.String(), Spec: NewJobDocument(j.Spec),
		SubmittedAt: timePtr(st.SubmittedAt), StartedAt: timePtr(st.StartedAt), EndedAt: timePtr(st.EndedAt),
		Allocations: make([]Allocation, len(st.Allocations)), Attempts: len(st.Attempts), Preemptions: st.Preemptions,
		Instances: j.Size(), Resizes: st.Resizes,
		AttemptHistory: make([]Attempt, len(st.Attempts)), CheckpointPath: st.CheckpointPath,
		CheckpointNode: st.CheckpointNode,
	}
	if st.State == model.StatePreparing && j.Spec.Container != nil {
		for r, in := range st.Instances {
			if !in.Pulling {
				continue
			}
			p := Pull{Rank: r, Image: j.Spec.Container.Image, Pulled: in.PulledBytes, Total: in.PullBytes}
			if r < len(st.Allocations) {
				p.Node = st.Allocations[r].Node
			}
			out.Preparing = append(out.Preparing, p)
		}
	}
	for _, p := range st.CheckpointParts {
		out.CheckpointParts = append(out.CheckpointParts, CheckpointPart{Rank: p.Rank, Step: p.Step, Path: p.Path, Node: p.Node})
	}
	for i, a := range st.Attempts {
		nodes := a.Nodes
		if nodes == nil {
			nodes = []string{}
		}
		out.AttemptHistory[i] = Attempt{Number: a.Number, Nodes: nodes, Placed: timePtr(a.Placed), Started: timePtr(a.Started),
			Ended: timePtr(a.Ended), StopOrdered: timePtr(a.StopOrdered),
			ExitCode: a.ExitCode, Reason: a.Reason, Detail: a.Detail, FailedNode: a.FailedNode, Pricing: a.Pricing, Rates: a.Rates}
	}
	for i, a := range st.Allocations {
		out.Allocations[i] = Allocation{Node: a.Node, GPUs: a.GPUs, GPUMilli: a.GPUMilli}
		if out.Allocations[i].GPUs == nil {
			out.Allocations[i].GPUs = []int{}
		}
	}
	return out
}

// Why is the answer of GET /v1/jobs/{id}/why.
type Why struct {
	ID             string     `json:"id"`
	State          string     `json:"state"`
	Reason         string     `json:"reason"`
	Detail         string     `json:"detail"`
	EstimatedStart *time.Time `json:"estimated_start"`
	// EstimateHow says how the estimate was made (the core run forward
	// and its assumptions); EstimateNone why there is none. Both are
	// empty for a job that is not queued.
	EstimateHow  string `json:"estimate_how"`
	EstimateNone string `json:"estimate_none"`
	// ExpectedRunSeconds is how long a job that has not ended is expected
	// to run from its start; ExpectedRunBasis says on what: its duration,
	// the runs of similar jobs, or its retry timeout. Zero and empty when
	// unknown.
	ExpectedRunSeconds float64 `json:"expected_run_seconds,omitempty"`
	ExpectedRunBasis   string  `json:"expected_run_basis,omitempty"`
	// Checkpoint says, for a queued job with a checkpoint, what it resumes
	// from and whether the nodes of its parts may take it now.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Placement says why an inference replica runs on an InfiniBand node;
	// empty otherwise.
	Placement string `json:"placement,omitempty"`
	// Elastic says, for an elastic job that holds capacity, its size in
	// its range, why it is not larger, its last resize and when the next
	// may come; empty otherwise.
	Elastic string `json:"elastic,omitempty"`
	// For a job that holds capacity: where it runs, since when, until
	// when it is protected from preemption, and what may preempt it.
	RunningOn      []string   `json:"running_on,omitempty"`
	RunningSince   *time.Time `json:"running_since,omitempty"`
	ProtectedUntil *time.Time `json:"protected_until,omitempty"`
	PreemptibleBy  []string   `json:"preemptible_by,omitempty"`
	// Region is the region the server chose for a job allowed in several
	// (the core places it there while it waits); empty when none.
	Region string `json:"region"`
	// Regions compares a queued job's allowed regions, best first; empty
	// when it may run in one region only.
	Regions []RegionEstimate `json:"regions"`
	// Policies say what operator policies did to the job's priority in
	// the last cycle; the job's spec keeps its own.
	Policies []string `json:"policies"`
	// AvoidNodes are, for a queued job, the nodes where its attempts
	// failed, which its next attempt keeps off while another node fits.
	AvoidNodes []string `json:"avoid_nodes,omitempty"`
	// Drains are, for an administrator, the drains of the nodes Detail
	// names; a tenant gets none (nodes are the administrator's).
	Drains []NodeDrainOf `json:"drains,omitempty"`
}

// NodeDrainOf is one node's drain in Why.Drains.
type NodeDrainOf struct {
	Node   string    `json:"node"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// RegionEstimate is one allowed region of a queued job in Why.Regions.
type RegionEstimate struct {
	Region         string     `json:"region"`
	EstimatedStart *time.Time `json:"estimated_start"`
	// NoEstimate says why there is no estimated start in the region.
	NoEstimate      string  `json:"no_estimate"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour"`
	Distance        int     `json:"distance"`
	Score           float64 `json:"score"`
	Chosen          bool    `json:"chosen"`
}

// newWhy writes the server's explanation as the API shows it.
func newWhy(why server.Why) Why {
	j := why.Job
	out := Why{ID: j.ID, State: string(j.Status.State), Reason: j.Status.Reason, Detail: j.Status.Detail,
		EstimatedStart: why.EstimatedStart, EstimateHow: why.Estimate.How, Region: j.Status.Region,
		Regions: []RegionEstimate{}, Policies: why.Policies}
	if why.EstimatedStart == nil {
		out.EstimateNone = why.Estimate.Why
	}
	if why.ExpectedRun > 0 {
		out.ExpectedRunSeconds, out.ExpectedRunBasis = why.ExpectedRun.Seconds(), why.ExpectedRunBasis
	}
	out.Checkpoint = why.Checkpoint
	out.Placement = why.Placement
	out.Elastic = why.Elastic
	if e := why.Exposure; e != nil {
		for _, a := range j.Status.Allocations {
			out.RunningOn = append(out.RunningOn, a.Node)
		}
		if !j.Status.StartedAt.IsZero() {
			t := j.Status.StartedAt.UTC()
			out.RunningSince = &t
		}
		if !e.ProtectedUntil.IsZero() {
			t := e.ProtectedUntil.UTC()
			out.ProtectedUntil = &t
		}
		out.PreemptibleBy = e.By
		if out.PreemptibleBy == nil {
			out.PreemptibleBy = []string{"nothing: no work of the fleet may preempt it"}
		}
	}
	if j.Status.State != model.StateQueued {
		out.Region = ""
	} else {
		out.AvoidNodes = sched.AvoidedNodes(j)
	}
	if out.Policies == nil {
		out.Policies = []string{}
	}
	for _, d := range why.Drains {
		out.Drains = append(out.Drains, NodeDrainOf{Node: d.Node, Reason: d.Reason, By: d.By, At: d.At.UTC()})
	}
	for _, o := range why.Regions {
		r := RegionEstimate{Region: o.Region, NoEstimate: o.Estimate.Why, PricePerGPUHour: o.PricePerGPUHour,
			Distance: o.Distance, Score: o.Score, Chosen: o.Chosen}
		if o.Estimate.Known() {
			t := o.Estimate.Start.UTC()
			r.EstimatedStart = &t
		}
		out.Regions = append(out.Regions, r)
	}
	return out
}

func newNodeDetail(d server.NodeDetail) NodeDetail {
	out := NodeDetail{Node: newNode(d.NodeStatus), Address: d.Address, HealthSince: timePtr(d.HealthSince),
		LastHeartbeat: timePtr(d.LastHeartbeat), GPUList: make([]NodeGPU, len(d.GPUs)), FailedAttempts: []NodeFailure{},
		Reservation: d.Reservation, ReservationAhead: d.Ahead, Images: d.Images}
	for _, f := range d.Failures {
		out.FailedAttempts = append(out.FailedAttempts, NodeFailure{Job: f.Job, Tenant: f.Tenant, Attempt: f.Attempt,
			ExitCode: f.ExitCode, At: f.At.UTC(), Detail: f.Detail})
	}
	for i, g := range d.GPUs {
		jobs := g.Jobs
		if jobs == nil {
			jobs = []string{}
		}
		out.GPUList[i] = NodeGPU{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB, UsedMilli: g.UsedMilli, Jobs: jobs}
	}
	return out
}

func newNode(n server.NodeStatus) Node {
	jobs := n.Jobs
	if jobs == nil {
		jobs = []string{}
	}
	out := Node{Name: n.Node.Name, SKU: n.Node.SKU, Region: n.Node.Region, Cluster: n.Node.Cluster, Leaf: n.Node.Leaf,
		Rack: n.Node.Rack, Health: string(n.Node.Health), GPUs: n.SKU.GPUs, GPUModel: n.SKU.GPUModel,
		FreeGPUMilli: n.FreeMilli, Jobs: jobs}
	if d := n.Drain; d != nil {
		out.Drain = &NodeDrain{Reason: d.Reason, By: d.By, At: d.At}
	}
	return out
}

// Tenant is a tenant of the tenants file.
type Tenant struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Partition string  `json:"partition"`
	Weight    float64 `json:"weight"`
}

// Partition is a slice of the fleet promised to a group of tenants.
type Partition struct {
	Name       string      `json:"name"`
	Tier       string      `json:"tier"`
	Guarantees []Guarantee `json:"guarantees"`
}

// Guarantee promises a partition GPUs of one model in one region.
type Guarantee struct {
	Region      string `json:"region"`
	GPUModel    string `json:"gpu_model"`
	GPUs        int    `json:"gpus"`
	BorrowLimit *int   `json:"borrow_limit"`
	LendLimit   *int   `json:"lend_limit"`
}

// Quota is a tenant's hard ceiling of GPUs of one series in one region.
type Quota struct {
	Tenant string `json:"tenant"`
	Region string `json:"region"`
	Series string `json:"series"`
	GPUs   int    `json:"gpus"`
}

// Usage is a tenant's GPUs in use against its quota.
type Usage struct {
	Tenant    string  `json:"tenant"`
	Region    string  `json:"region"`
	Series    string  `json:"series"`
	UsedGPUs  float64 `json:"used_gpus"`
	QuotaGPUs *int    `json:"quota_gpus"`
}

// Reservation is capacity held for its owner between start and end (null:
// open-ended).
type Reservation struct {
	Name   string     `json:"name"`
	Owner  string     `json:"owner"`
	SKU    string     `json:"sku"`
	Region string     `json:"region"`
	Count  int        `json:"count"`
	Start  *time.Time `json:"start"`
	End    *time.Time `json:"end"`
}

func newReservation(r model.Reservation) Reservation {
	return Reservation{Name: r.Name, Owner: r.Owner, SKU: r.SKU, Region: r.Region, Count: r.Count,
		Start: timePtr(r.Start), End: timePtr(r.End)}
}

// Bodies shared with the client live in package wire.
type (
	Node         = wire.Node
	NodeDetail   = wire.NodeDetail
	NodeFailure  = wire.NodeFailure
	NodeGPU      = wire.NodeGPU
	NodeDrain    = wire.NodeDrain
	DrainRequest = wire.DrainRequest
	SKU          = wire.SKU
	Token        = wire.Token
	Alert        = wire.Alert
)
