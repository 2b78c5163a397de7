package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MilliPerGPU is the milli-GPU count of one whole GPU.
const MilliPerGPU = 1000

// JobSpec is what a person asks for, modelled on cloud ML job files.
type JobSpec struct {
	Name       string
	Tenant     string
	Command    []string
	Env        map[string]string
	Resources  Resources
	Priority   Priority
	Placement  Placement
	Retry      Retry
	Checkpoint Checkpoint
	// Duration is the submitter's estimate of the run time; zero if unknown.
	Duration time.Duration
	// Labels describe the work to operator policies (workload: batch);
	// they add to and override those of the tenant and its partition.
	Labels map[string]string
	// ArrayIndex is the job's index in a job array (array.go); nil for a
	// job that is not part of one. Its processes see it as
	// ALLOT_ARRAY_INDEX.
	ArrayIndex *int
	// After lists the jobs this one waits for (pipeline.go): names of
	// jobs submitted with it or IDs of jobs already submitted. The server
	// stores the IDs it resolved them to. The job stays Blocked until
	// every one of them Succeeded.
	After []string
	// AfterCondition is what After waits for of each job: that it
	// succeeded (AfterOK), ended (AfterAny) or ended otherwise
	// (AfterNotOK).
	AfterCondition AfterCondition
	// Begin, when set, is the earliest time the job may start, as Slurm's
	// sbatch --begin: it waits Queued until then (reason BeginTime).
	Begin time.Time
	// Elastic, when set, lets the gang run with more instances than
	// Resources.InstanceCount, which is then its minimum (elastic.go).
	Elastic *Elastic
	// Container, when set, runs the job's instances from an image
	// (container.go); nil runs Command on the host.
	Container *Container
}

// Resources is the shape of a job: InstanceCount instances (a gang when more
// than one), each needing GPUsPerInstance GPUs of one of GPUModels, or a
// GPUMilli fraction of one GPU, plus CPU and memory.
type Resources struct {
	InstanceCount   int
	GPUsPerInstance int
	GPUMilli        int64 // per GPU; 1000 (or 0) means whole GPUs
	GPUModels       []string
	CPUMilli        int64 // per instance
	MemoryMiB       int64 // per instance
}

// Fractional reports whether each instance takes a fraction of one GPU.
func (r Resources) Fractional() bool { return r.GPUMilli > 0 && r.GPUMilli < MilliPerGPU }

// MilliPerInstance is the GPU capacity one instance takes, in milli-GPU.
func (r Resources) MilliPerInstance() int64 {
	if r.Fractional() {
		return r.GPUMilli
	}
	return int64(r.GPUsPerInstance) * MilliPerGPU
}

// TotalMilli is the GPU capacity the whole job takes, in milli-GPU.
func (r Resources) TotalMilli() int64 { return int64(r.InstanceCount) * r.MilliPerInstance() }

// AcceptsModel reports whether a GPU of model satisfies the request.
func (r Resources) AcceptsModel(model string) bool {
	if len(r.GPUModels) == 0 {
		return true
	}
	for _, m := range r.GPUModels {
		if m == model {
			return true
		}
	}
	return false
}

// Placement constrains where a job may run.
type Placement struct {
	Regions      []string // allowed regions; empty means any
	Residency    string   // required residency zone of the region, e.g. "eu"
	Interconnect Fabric   // required fabric between a gang's nodes; empty means any
	DataRegion   string   // where the job's data lives; preferred when capacity allows
	Reservation  string   // run inside this capacity reservation
	SKU          string   // run only on nodes of this SKU (instances); empty means any
	// Nodes, when set, are the only nodes the job may run on, as a
	// Kubernetes pod's node affinity by name: a burn-in of one host, work
	// kept to hosts known good. ExcludeNodes names nodes it must not run
	// on, as Slurm's sbatch --exclude: a host its processes fail on, one
	// kept for something else. At most MaxPlacementNodes each.
	Nodes, ExcludeNodes []string
}

// MaxPlacementNodes is the most nodes one job may name in Nodes or in
// ExcludeNodes: enough to step around a bad rack, few enough to stay cheap
// for every filter.
const MaxPlacementNodes = 64

// AllowsNode reports whether the job may run on node: one of Nodes, when
// it names any, and none of ExcludeNodes.
func (p *Placement) AllowsNode(node string) bool {
	return (len(p.Nodes) == 0 || slices.Contains(p.Nodes, node)) && !slices.Contains(p.ExcludeNodes, node)
}

// AllowsRegion reports whether work placed so may run in region: any
// region when Regions is empty.
func (p *Placement) AllowsRegion(region string) bool {
	return len(p.Regions) == 0 || slices.Contains(p.Regions, region)
}

// Retry bounds how often and how long a job is tried.
type Retry struct {
	MaxRetries int
	Timeout    time.Duration // per attempt; zero means none
}

// Checkpoint says how often the job saves its state and how long it needs to
// save when told to stop.
type Checkpoint struct {
	Interval time.Duration
	Grace    time.Duration
}

// DefaultGrace is the time between SIGTERM and SIGKILL when a job sets none.
const DefaultGrace = 30 * time.Second

// Validate checks the spec on its own (not against the fleet). It reports
// every field at fault: the error is a *FieldError, or several joined
// (errors.Join), first to last in the order of the job file.
func (s *JobSpec) Validate() error {
	r := s.Resources
	var errs []error
	add := func(field, format string, args ...any) { errs = append(errs, fieldErr(field, format, args...)) }
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case s.Name == "":
		add("name", "must not be empty")
	case len(s.Name) > 253:
		add("name", "must be at most 253 characters")
	default:
		check(Printable("name", s.Name))
	}
	if s.Tenant == "" {
		add("tenant", "must not be empty")
	} else {
		check(Printable("tenant", s.Tenant))
	}
	// No command at all is allowed (simulated nodes run nothing; a server
	// whose agents run jobs refuses it unless the job names an image, whose
	// entrypoint runs); a command given must name a program.
	if s.Command != nil && len(s.Command) == 0 {
		add("command", "must not be empty: give the program and its arguments, e.g. [python, train.py]")
	}
	if len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "" {
		add("command[0]", "the program name must not be empty")
	}
	if r.InstanceCount < 1 || r.InstanceCount > 4096 {
		add("resources.instance_count", "must be between 1 and 4096, got %d", r.InstanceCount)
	}
	gpus := r.GPUsPerInstance >= 0 && r.GPUsPerInstance <= 64
	if !gpus {
		add("resources.gpus_per_instance", "must be between 0 and 64, got %d", r.GPUsPerInstance)
	}
	switch {
	case r.GPUMilli < 0 || r.GPUMilli > MilliPerGPU:
		add("resources.gpu_milli", "must be between 1 and 1000 (a fraction of one GPU), got %d", r.GPUMilli)
	case r.Fractional() && r.GPUsPerInstance != 1:
		add("resources.gpu_milli", "a fraction (gpu_milli < 1000) needs gpus_per_instance: 1, got %d", r.GPUsPerInstance)
	}
	names := func(field string, list []string) {
		for i, name := range list {
			f := fmt.Sprintf("%s[%d]", field, i)
			if name == "" {
				add(f, "must not be empty")
			} else {
				check(Printable(f, name))
			}
		}
	}
	names("resources.gpu_models", r.GPUModels)
	if r.CPUMilli < 0 {
		add("resources.cpu", "must not be negative")
	}
	if r.MemoryMiB < 0 {
		add("resources.memory", "must not be negative")
	}
	if gpus && r.GPUsPerInstance == 0 && r.CPUMilli == 0 {
		add("resources", "a job must ask for GPUs or CPU")
	}
	if s.Priority.Class < ClassSpot || s.Priority.Class > ClassReserved {
		add("priority", "unknown class %d", s.Priority.Class)
	}
	names("placement.regions", s.Placement.Regions)
	check(Printable("placement.residency", s.Placement.Residency))
	if ic := s.Placement.Interconnect; ic != "" && !ic.Valid() {
		add("placement.interconnect", "must be infiniband, roce or ethernet, got %q%s", ic, DidYouMean(string(ic), fabricNames))
	}
	check(Printable("placement.data_region", s.Placement.DataRegion))
	check(Printable("placement.reservation", s.Placement.Reservation))
	check(Printable("placement.sku", s.Placement.SKU))
	for _, l := range []struct {
		field string
		nodes []string
	}{{"placement.nodes", s.Placement.Nodes}, {"placement.exclude_nodes", s.Placement.ExcludeNodes}} {
		if n := len(l.nodes); n > MaxPlacementNodes {
			add(l.field, "lists %d nodes, over the limit of %d", n, MaxPlacementNodes)
		} else {
			names(l.field, l.nodes)
		}
	}
	if s.Retry.MaxRetries < 0 || s.Retry.MaxRetries > 1000 {
		add("retry.max_retries", "must be between 0 and 1000, got %d", s.Retry.MaxRetries)
	}
	if s.Retry.Timeout < 0 {
		add("retry.timeout", "must not be negative")
	}
	if s.Checkpoint.Interval < 0 {
		add("checkpoint.interval", "must not be negative")
	}
	if s.Checkpoint.Grace < 0 {
		add("checkpoint.grace", "must not be negative")
	}
	if s.Duration < 0 {
		add("duration", "must not be negative")
	}
	check(ValidateLabels("labels", s.Labels))
	if i := s.ArrayIndex; i != nil && (*i < 0 || *i > MaxArrayIndex) {
		add("array_index", "must be between 0 and %d, got %d", MaxArrayIndex, *i)
	}
	errs = append(errs, s.validateAfter()...)
	errs = append(errs, s.validateElastic()...)
	if s.Container != nil {
		errs = append(errs, s.Container.Validate()...)
	}
	return errors.Join(errs...)
}

// fabricNames are the valid interconnects, for suggestions.
var fabricNames = []string{string(FabricInfiniBand), string(FabricRoCE), string(FabricEthernet)}

// GraceOrDefault returns the checkpoint grace, or DefaultGrace when none is set.
func (c Checkpoint) GraceOrDefault() time.Duration {
	if c.Grace == 0 {
		return DefaultGrace
	}
	return c.Grace
}

// State is a job's place in its lifecycle:
// Queued → Preparing → Running → Succeeded | Failed | Canceled, with
// Running → Preempted → Queued, Running → TimedOut, and Running →
// Preparing → Running when an elastic job is resized. A job with After
// starts Blocked: Blocked → Queued once its predecessors succeeded,
// Blocked → Canceled when one of them ended otherwise.
type State string

const (
	StateQueued    State = "Queued"
	StateBlocked   State = "Blocked" // waits for the jobs of its After
	StatePreparing State = "Preparing"
	StateRunning   State = "Running"
	StatePreempted State = "Preempted"
	StateSucceeded State = "Succeeded"
	StateFailed    State = "Failed"
	StateCanceled  State = "Canceled"
	StateTimedOut  State = "TimedOut"
)

// States are every state a job can be in, in the order of its life.
var States = []State{StateBlocked, StateQueued, StatePreparing, StateRunning, StatePreempted,
	StateSucceeded, StateFailed, StateCanceled, StateTimedOut}

// Terminal reports whether no further transition can happen.
func (s State) Terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCanceled || s == StateTimedOut
}

// Holds reports whether a job in this state holds GPUs (a Blocked job
// does not: it is not offered to the core until it is Queued).
func (s State) Holds() bool {
	return s == StatePreparing || s == StateRunning || s == StatePreempted
}

var transitions = map[State][]State{
	StateQueued:    {StatePreparing, StateRunning, StateCanceled, StateFailed},
	StateBlocked:   {StateQueued, StateCanceled},
	StatePreparing: {StateRunning, StateQueued, StatePreempted, StateFailed, StateCanceled},
	// Running -> Preparing: a resize of an elastic job starts its next
	// attempt's ranks while it keeps its capacity.
	StateRunning:   {StateSucceeded, StateFailed, StateCanceled, StatePreempted, StateTimedOut, StateQueued, StatePreparing},
	StatePreempted: {StateQueued, StateCanceled, StateFailed},
}

// CanTransition reports whether a job may move from one state to another.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Allocation is what one instance of a job holds on one node.
type Allocation struct {
	Node     string
	GPUs     []int // GPU indices on the node
	GPUMilli int64 // per GPU: 1000 for whole GPUs, less for a fraction
}

// Attempt records one run of a job.
type Attempt struct {
	Number int
	Nodes  []string
	// Placed is when the core bound the attempt to its nodes. Started is
	// when it began to run (with agents: when every instance reported
	// started; zero while it prepares) and Ended when its processes were
	// gone (with agents: when every instance's exit was reported, or the
	// server gave up waiting): the attempt is billed from Started to
	// Ended, so a newcomer waiting for a victim's GPUs pays nothing and
	// the victim pays through its grace.
	Placed  time.Time
	Started time.Time
	Ended   time.Time
	// StopOrdered is when the server told a running attempt's processes to
	// stop (a preemption, a requeue, a cancel); zero when it never did, or
	// when nothing of the attempt ran.
	StopOrdered time.Time
	ExitCode    int
	Reason      string // e.g. "Exited", "Preempted", "NodeLost", "TimedOut"
	Detail      string // what a person needs: who preempted it, which rank failed how
	// FailedNode is the node whose instance ended the attempt by failing
	// (a non-zero exit, a kill) or by being lost with it; empty when the
	// attempt ended otherwise. A retry avoids such nodes when it can.
	FailedNode string
	// Pricing is how the attempt is billed (on-demand, reserved-1y,
	// reserved-3y or spot) and Rates what each instance (Nodes[i])
	// accrues in USD per hour, both fixed when it starts (package price);
	// empty for attempts recorded before prices were.
	Pricing string
	Rates   []float64
}

// JobStatus is what allot knows of a job now.
type JobStatus struct {
	State       State
	Reason      string // a reason code for pending or ended jobs
	Detail      string // what a person needs to act on Reason
	SubmittedAt time.Time
	StartedAt   time.Time // of the current attempt
	EndedAt     time.Time
	// LastCheckpoint is when the job last reported a checkpoint; work since
	// then is lost on preemption.
	LastCheckpoint time.Time
	CheckpointPath string
	// CheckpointNode is the node whose disk holds CheckpointPath, when the
	// agent of a node the job ran on reported it; empty when unknown (a
	// URL, which no node holds). A requeued job prefers it,
	// so that its next attempt finds the checkpoint.
	CheckpointNode string
	// CheckpointParts is the job's checkpoint when its ranks save each
	// their own part: one part per rank, in rank order, all of one save
	// (the same Step); CheckpointPath and CheckpointNode are then rank 0's
	// part. Empty when one path serves every rank (checkpoint.go).
	CheckpointParts []CheckpointPart
	// PartsPending are parts of saves that not every rank has reported
	// yet, a few per rank; a save becomes the job's checkpoint once every
	// rank's part of it is in.
	PartsPending []CheckpointPart
	Allocations  []Allocation
	Attempts     []Attempt
	Preemptions  int
	// Resizes counts the attempts an elastic job ended to run on with
	// another number of instances (elastic.go).
	Resizes int
	Retries int // attempts that ended in failure and were retried
	// Lost counts attempts lost with their node (it stopped answering, or
	// its agent restarted); they do not count against max_retries but
	// against the server's own limit, with a back-off between them.
	Lost int
	// NotBefore holds a queued job back until then: a back-off after a
	// lost or failed attempt, or the time the old attempt's processes are
	// surely stopped (fencing). Zero means no hold. The spec's Begin holds
	// it too: Job.HeldUntil is the later of the two.
	NotBefore time.Time
	// Held keeps a queued job out of scheduling until it is released
	// ('allot job hold'); its reason is Held meanwhile.
	Held bool
	// Canceling marks a Preempted job whose processes were told to stop
	// by a cancel: once they are gone it is Canceled, not queued. Kill
	// asks its processes be killed at once (a second cancel, or one with
	// force) instead of after their grace.
	Canceling, Kill bool
	// Instances is what the agents reported of each instance (by rank) of
	// the current attempt; empty when no agent runs the job.
	Instances []Instance
	// Resizing is what the agents reported of each instance (by rank) of
	// the attempt before the current one when a resize of an elastic job
	// ended it (elastic.go) while its processes may still run: they are
	// told to stop, with their grace, and the current attempt's ranks
	// start once every one is gone. Empty otherwise.
	Resizing []Instance
	// Region is the region the server chose for a job allowed in several;
	// while the job is queued the core sees its allowed regions narrowed
	// to this one. Empty: no choice, the spec's regions hold.
	Region string
	// RegionAt is when Region was chosen; a job that waited past the
	// server's threshold since then may move to another allowed region.
	RegionAt time.Time
}

// Instance is what an agent reported of one instance of an attempt.
type Instance struct {
	Started  bool
	Exited   bool
	ExitCode int
	Outcome  string // Exited, Stopped, TimedOut or NodeLost
	// Pulling is set while the instance's agent pulls its image, before
	// it starts; PulledBytes and PullBytes are how far the pull has come,
	// as the agent last said (each 0 where its runtime cannot tell).
	Pulling                bool
	PulledBytes, PullBytes int64
}

// Live reports whether the instance's process may still be running.
func (i Instance) Live() bool { return i.Started && !i.Exited }

// Job is a submitted job.
type Job struct {
	ID     string
	Spec   JobSpec
	Status JobStatus
}

// HeldUntil is when queued job j may first be scheduled: the later of its
// status's NotBefore (a back-off, fencing) and its spec's Begin; zero when
// neither holds it.
func (j *Job) HeldUntil() time.Time {
	if j.Spec.Begin.After(j.Status.NotBefore) {
		return j.Spec.Begin
	}
	return j.Status.NotBefore
}
