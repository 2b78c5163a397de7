package model

import (
	"fmt"
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

// Validate checks the spec on its own (not against the fleet).
func (s *JobSpec) Validate() error {
	r := s.Resources
	switch {
	case s.Name == "":
		return fieldErr("name", "must not be empty")
	case len(s.Name) > 253:
		return fieldErr("name", "must be at most 253 characters")
	case s.Tenant == "":
		return fieldErr("tenant", "must not be empty")
	case r.InstanceCount < 1 || r.InstanceCount > 4096:
		return fieldErr("resources.instance_count", "must be between 1 and 4096, got %d", r.InstanceCount)
	case r.GPUsPerInstance < 0 || r.GPUsPerInstance > 64:
		return fieldErr("resources.gpus_per_instance", "must be between 0 and 64, got %d", r.GPUsPerInstance)
	case r.GPUMilli < 0 || r.GPUMilli > MilliPerGPU:
		return fieldErr("resources.gpu_milli", "must be between 1 and 1000 (a fraction of one GPU), got %d", r.GPUMilli)
	case r.Fractional() && r.GPUsPerInstance != 1:
		return fieldErr("resources.gpu_milli", "a fraction (gpu_milli < 1000) needs gpus_per_instance: 1, got %d", r.GPUsPerInstance)
	case r.CPUMilli < 0:
		return fieldErr("resources.cpu", "must not be negative")
	case r.MemoryMiB < 0:
		return fieldErr("resources.memory", "must not be negative")
	case r.GPUsPerInstance == 0 && r.CPUMilli == 0:
		return fieldErr("resources", "a job must ask for GPUs or CPU")
	case s.Priority.Class < ClassSpot || s.Priority.Class > ClassReserved:
		return fieldErr("priority", "unknown class %d", s.Priority.Class)
	case s.Placement.Interconnect != "" && !s.Placement.Interconnect.Valid():
		return fieldErr("placement.interconnect", "must be infiniband, roce or ethernet, got %q", s.Placement.Interconnect)
	case s.Retry.MaxRetries < 0 || s.Retry.MaxRetries > 1000:
		return fieldErr("retry.max_retries", "must be between 0 and 1000, got %d", s.Retry.MaxRetries)
	case s.Retry.Timeout < 0:
		return fieldErr("retry.timeout", "must not be negative")
	case s.Checkpoint.Interval < 0:
		return fieldErr("checkpoint.interval", "must not be negative")
	case s.Checkpoint.Grace < 0:
		return fieldErr("checkpoint.grace", "must not be negative")
	case s.Duration < 0:
		return fieldErr("duration", "must not be negative")
	}
	// No command at all is allowed (simulated nodes run nothing); a
	// command given must name a program.
	if s.Command != nil && len(s.Command) == 0 {
		return fieldErr("command", "must not be empty: give the program and its arguments, e.g. [python, train.py]")
	}
	if len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "" {
		return fieldErr("command[0]", "the program name must not be empty")
	}
	for _, f := range []struct{ field, value string }{{"name", s.Name}, {"tenant", s.Tenant},
		{"placement.residency", s.Placement.Residency}, {"placement.data_region", s.Placement.DataRegion},
		{"placement.reservation", s.Placement.Reservation}} {
		if err := Printable(f.field, f.value); err != nil {
			return err
		}
	}
	if err := ValidateLabels("labels", s.Labels); err != nil {
		return err
	}
	for i, m := range r.GPUModels {
		if m == "" {
			return fieldErr(fmt.Sprintf("resources.gpu_models[%d]", i), "must not be empty")
		}
		if err := Printable(fmt.Sprintf("resources.gpu_models[%d]", i), m); err != nil {
			return err
		}
	}
	for i, rg := range s.Placement.Regions {
		if rg == "" {
			return fieldErr(fmt.Sprintf("placement.regions[%d]", i), "must not be empty")
		}
		if err := Printable(fmt.Sprintf("placement.regions[%d]", i), rg); err != nil {
			return err
		}
	}
	return nil
}

// GraceOrDefault returns the checkpoint grace, or DefaultGrace when none is set.
func (c Checkpoint) GraceOrDefault() time.Duration {
	if c.Grace == 0 {
		return DefaultGrace
	}
	return c.Grace
}

// State is a job's place in its lifecycle:
// Queued → Preparing → Running → Succeeded | Failed | Canceled, with
// Running → Preempted → Queued and Running → TimedOut.
type State string

const (
	StateQueued    State = "Queued"
	StatePreparing State = "Preparing"
	StateRunning   State = "Running"
	StatePreempted State = "Preempted"
	StateSucceeded State = "Succeeded"
	StateFailed    State = "Failed"
	StateCanceled  State = "Canceled"
	StateTimedOut  State = "TimedOut"
)

// Terminal reports whether no further transition can happen.
func (s State) Terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCanceled || s == StateTimedOut
}

// Holds reports whether a job in this state holds GPUs.
func (s State) Holds() bool {
	return s == StatePreparing || s == StateRunning || s == StatePreempted
}

var transitions = map[State][]State{
	StateQueued:    {StatePreparing, StateRunning, StateCanceled, StateFailed},
	StatePreparing: {StateRunning, StateQueued, StatePreempted, StateFailed, StateCanceled},
	StateRunning:   {StateSucceeded, StateFailed, StateCanceled, StatePreempted, StateTimedOut, StateQueued},
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
	Number   int
	Nodes    []string
	Started  time.Time
	Ended    time.Time
	ExitCode int
	Reason   string // e.g. "Exited", "Preempted", "NodeLost", "TimedOut"
	Detail   string // what a person needs: who preempted it, which rank failed how
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
	Allocations    []Allocation
	Attempts       []Attempt
	Preemptions    int
	Retries        int // attempts that ended in failure and were retried
	// Lost counts attempts lost with their node (it stopped answering, or
	// its agent restarted); they do not count against max_retries but
	// against the server's own limit, with a back-off between them.
	Lost int
	// NotBefore holds a queued job back until then: a back-off after a
	// lost attempt, or the time the old attempt's processes are surely
	// stopped (fencing). Zero means no hold.
	NotBefore time.Time
	// Instances is what the agents reported of each instance (by rank) of
	// the current attempt; empty when no agent runs the job.
	Instances []Instance
}

// Instance is what an agent reported of one instance of an attempt.
type Instance struct {
	Started  bool
	Exited   bool
	ExitCode int
	Outcome  string // Exited, Stopped, TimedOut or NodeLost
}

// Live reports whether the instance's process may still be running.
func (i Instance) Live() bool { return i.Started && !i.Exited }

// Job is a submitted job.
type Job struct {
	ID     string
	Spec   JobSpec
	Status JobStatus
}
