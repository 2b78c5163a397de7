package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Key prefixes of the objects the server keeps in the store.
const (
	prefixJobs         = "/jobs/"
	prefixReservations = "/reservations/"
	prefixTokens       = "/tokens/"
	prefixNodes        = "/nodes/"
	// keyFence is written by every committed plan and is a condition of the
	// next one, so two schedulers (a future HA pair during a leader change)
	// can never both commit plans computed from the same state.
	keyFence = "/sched/fence"
)

// The record types below are the store's wire format: stable JSON names,
// independent of the Go field names of package model. Durations are
// nanoseconds, times RFC 3339 with nanoseconds.

type jobRecord struct {
	ID     string       `json:"id"`
	Spec   specRecord   `json:"spec"`
	Status statusRecord `json:"status"`
}

type specRecord struct {
	Name        string            `json:"name"`
	Tenant      string            `json:"tenant"`
	Command     []string          `json:"command,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Container   *model.Container  `json:"container,omitempty"`
	Instances   int               `json:"instance_count"`
	GPUs        int               `json:"gpus_per_instance"`
	GPUMilli    int64             `json:"gpu_milli,omitempty"`
	GPUModels   []string          `json:"gpu_models,omitempty"`
	CPUMilli    int64             `json:"cpu_milli,omitempty"`
	MemoryMiB   int64             `json:"memory_mib,omitempty"`
	Class       int               `json:"priority_class"`
	Value       int               `json:"priority_value,omitempty"`
	Regions     []string          `json:"regions,omitempty"`
	Residency   string            `json:"residency,omitempty"`
	Fabric      string            `json:"interconnect,omitempty"`
	DataRegion  string            `json:"data_region,omitempty"`
	Reservation string            `json:"reservation,omitempty"`
	SKU         string            `json:"sku,omitempty"`
	Nodes       []string          `json:"nodes,omitempty"`
	Exclude     []string          `json:"exclude_nodes,omitempty"`
	MaxRetries  int               `json:"max_retries,omitempty"`
	Timeout     time.Duration     `json:"timeout_ns,omitempty"`
	CkptEvery   time.Duration     `json:"checkpoint_interval_ns,omitempty"`
	CkptGrace   time.Duration     `json:"checkpoint_grace_ns,omitempty"`
	Duration    time.Duration     `json:"duration_ns,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	ArrayIndex  *int              `json:"array_index,omitempty"`
	After       []string          `json:"after,omitempty"` // job IDs
	AfterCond   string            `json:"after_condition,omitempty"`
	Begin       time.Time         `json:"begin,omitzero"`
	Elastic     *elasticRecord    `json:"elastic,omitempty"`
}

// elasticRecord is a model.Elastic; a record without it (every record
// written before elastic jobs were) is a job of a fixed size.
type elasticRecord struct {
	Min  int `json:"min_instances"`
	Max  int `json:"max_instances"`
	Step int `json:"step,omitempty"`
}

// partRecord is a model.CheckpointPart.
type partRecord struct {
	Rank    int       `json:"rank"`
	Attempt int       `json:"attempt"`
	Step    string    `json:"step"`
	Path    string    `json:"path"`
	Node    string    `json:"node,omitempty"`
	At      time.Time `json:"at"`
}

func partRecords(ps []model.CheckpointPart) []partRecord {
	var out []partRecord
	for _, p := range ps {
		out = append(out, partRecord(p))
	}
	return out
}

func modelParts(ps []partRecord) []model.CheckpointPart {
	var out []model.CheckpointPart
	for _, p := range ps {
		out = append(out, model.CheckpointPart(p))
	}
	return out
}

type statusRecord struct {
	State          string          `json:"state"`
	Reason         string          `json:"reason,omitempty"`
	Detail         string          `json:"detail,omitempty"`
	SubmittedAt    time.Time       `json:"submitted_at"`
	StartedAt      time.Time       `json:"started_at,omitzero"`
	EndedAt        time.Time       `json:"ended_at,omitzero"`
	LastCheckpoint time.Time       `json:"last_checkpoint,omitzero"`
	CheckpointPath string          `json:"checkpoint_path,omitempty"`
	CheckpointNode string          `json:"checkpoint_node,omitempty"`
	Parts          []partRecord    `json:"checkpoint_parts,omitempty"`
	PartsPending   []partRecord    `json:"parts_pending,omitempty"`
	Allocations    []allocRecord   `json:"allocations,omitempty"`
	Attempts       []attemptRecord `json:"attempts,omitempty"`
	Preemptions    int             `json:"preemptions,omitempty"`
	Resizes        int             `json:"resizes,omitempty"`
	Retries        int             `json:"retries,omitempty"`
	Lost           int             `json:"lost,omitempty"`
	NotBefore      time.Time       `json:"not_before,omitzero"`
	Held           bool            `json:"held,omitempty"`
	Canceling      bool            `json:"canceling,omitempty"`
	Kill           bool            `json:"kill,omitempty"`
	Instances      []instRecord    `json:"instances,omitempty"`
	Resizing       []instRecord    `json:"resizing,omitempty"`
	Region         string          `json:"region,omitempty"`
	RegionAt       time.Time       `json:"region_at,omitzero"`
}

type instRecord struct {
	Started  bool   `json:"started,omitempty"`
	Exited   bool   `json:"exited,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	// The pull of its image while it prepares (model.Instance).
	Pulling     bool  `json:"pulling,omitempty"`
	PulledBytes int64 `json:"pulled,omitempty"`
	PullBytes   int64 `json:"pull_total,omitempty"`
}

type allocRecord struct {
	Node     string `json:"node"`
	GPUs     []int  `json:"gpus"`
	GPUMilli int64  `json:"gpu_milli"`
}

type attemptRecord struct {
	Number   int       `json:"number"`
	Nodes    []string  `json:"nodes,omitempty"`
	Placed   time.Time `json:"placed,omitzero"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitzero"`
	StopAt   time.Time `json:"stop_ordered,omitzero"`
	ExitCode int       `json:"exit_code,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	Failed   string    `json:"failed_node,omitempty"`
	Pricing  string    `json:"pricing,omitempty"`
	Rates    []float64 `json:"usd_per_hour,omitempty"` // one value: every instance's (packRates)
}

// JobRecord returns the store key and value under which the server keeps j.
// It is for tools that write jobs straight into a store before a server
// opens it (allot bench e2e --history); the server reads such records like
// its own.
func JobRecord(j *model.Job) (key string, value []byte) { return prefixJobs + j.ID, encodeJob(j) }

func encodeJob(j *model.Job) []byte {
	s, st := &j.Spec, &j.Status
	r := jobRecord{
		ID: j.ID,
		Spec: specRecord{
			Name: s.Name, Tenant: s.Tenant, Command: s.Command, Env: s.Env, Container: s.Container,
			Instances: s.Resources.InstanceCount, GPUs: s.Resources.GPUsPerInstance, GPUMilli: s.Resources.GPUMilli,
			GPUModels: s.Resources.GPUModels, CPUMilli: s.Resources.CPUMilli, MemoryMiB: s.Resources.MemoryMiB,
			Class: int(s.Priority.Class), Value: s.Priority.Value,
			Regions: s.Placement.Regions, Residency: s.Placement.Residency, Fabric: string(s.Placement.Interconnect),
			DataRegion: s.Placement.DataRegion, Reservation: s.Placement.Reservation, SKU: s.Placement.SKU,
			Nodes: s.Placement.Nodes, Exclude: s.Placement.ExcludeNodes,
			MaxRetries: s.Retry.MaxRetries, Timeout: s.Retry.Timeout,
			CkptEvery: s.Checkpoint.Interval, CkptGrace: s.Checkpoint.Grace, Duration: s.Duration,
			Labels: s.Labels, ArrayIndex: s.ArrayIndex, After: s.After, AfterCond: string(s.AfterCondition), Begin: s.Begin,
		},
		Status: statusRecord{
			State: string(st.State), Reason: st.Reason, Detail: st.Detail,
			SubmittedAt: st.SubmittedAt, StartedAt: st.StartedAt, EndedAt: st.EndedAt,
			LastCheckpoint: st.LastCheckpoint, CheckpointPath: st.CheckpointPath, CheckpointNode: st.CheckpointNode,
			Parts: partRecords(st.CheckpointParts), PartsPending: partRecords(st.PartsPending),
			Preemptions: st.Preemptions, Resizes: st.Resizes, Retries: st.Retries, Lost: st.Lost, NotBefore: st.NotBefore, Held: st.Held,
			Canceling: st.Canceling, Kill: st.Kill,
			Region: st.Region, RegionAt: st.RegionAt,
		},
	}
	for _, a := range st.Allocations {
		r.Status.Allocations = append(r.Status.Allocations, allocRecord{Node: a.Node, GPUs: a.GPUs, GPUMilli: a.GPUMilli})
	}
	for _, a := range st.Attempts {
		r.Status.Attempts = append(r.Status.Attempts, attemptRecord{Number: a.Number, Nodes: a.Nodes,
			Placed: a.Placed, Started: a.Started, Ended: a.Ended, StopAt: a.StopOrdered, ExitCode: a.ExitCode, Reason: a.Reason, Detail: a.Detail,
			Failed: a.FailedNode, Pricing: a.Pricing, Rates: packRates(a.Rates)})
	}
	for _, in := range st.Instances {
		r.Status.Instances = append(r.Status.Instances, instRecord(in))
	}
	for _, in := range st.Resizing {
		r.Status.Resizing = append(r.Status.Resizing, instRecord(in))
	}
	if e := s.Elastic; e != nil {
		r.Spec.Elastic = &elasticRecord{Min: e.MinInstances, Max: e.MaxInstances, Step: e.Step}
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("server: encode job %s: %v", j.ID, err)) // only plain data: cannot happen
	}
	return b
}

func decodeJob(b []byte) (*model.Job, error) {
	var r jobRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	s := r.Spec
	j := &model.Job{
		ID: r.ID,
		Spec: model.JobSpec{
			Name: s.Name, Tenant: s.Tenant, Command: s.Command, Env: s.Env, Container: s.Container,
			Resources: model.Resources{InstanceCount: s.Instances, GPUsPerInstance: s.GPUs, GPUMilli: s.GPUMilli,
				GPUModels: s.GPUModels, CPUMilli: s.CPUMilli, MemoryMiB: s.MemoryMiB},
			Priority: model.Priority{Class: model.Class(s.Class), Value: s.Value},
			Placement: model.Placement{Regions: s.Regions, Residency: s.Residency, Interconnect: model.Fabric(s.Fabric),
				DataRegion: s.DataRegion, Reservation: s.Reservation, SKU: s.SKU, Nodes: s.Nodes, ExcludeNodes: s.Exclude},
			Retry:          model.Retry{MaxRetries: s.MaxRetries, Timeout: s.Timeout},
			Checkpoint:     model.Checkpoint{Interval: s.CkptEvery, Grace: s.CkptGrace},
			Duration:       s.Duration,
			Labels:         s.Labels,
			ArrayIndex:     s.ArrayIndex,
			After:          s.After,
			AfterCondition: model.AfterCondition(s.AfterCond),
			Begin:          s.Begin,
		},
		Status: model.JobStatus{
			State: model.State(r.Status.State), Reason: r.Status.Reason, Detail: r.Status.Detail,
			SubmittedAt: r.Status.SubmittedAt, StartedAt: r.Status.StartedAt, EndedAt: r.Status.EndedAt,
			LastCheckpoint: r.Status.LastCheckpoint, CheckpointPath: r.Status.CheckpointPath, CheckpointNode: r.Status.CheckpointNode,
			CheckpointParts: modelParts(r.Status.Parts), PartsPending: modelParts(r.Status.PartsPending),
			Preemptions: r.Status.Preemptions, Resizes: r.Status.Resizes, Retries: r.Status.Retries, Lost: r.Status.Lost, NotBefore: r.Status.NotBefore,
			Held: r.Status.Held, Canceling: r.Status.Canceling, Kill: r.Status.Kill,
			Region: r.Status.Region, RegionAt: r.Status.RegionAt,
		},
	}
	if j.ID == "" {
		return nil, fmt.Errorf("job record without id")
	}
	for _, a := range r.Status.Allocations {
		j.Status.Allocations = append(j.Status.Allocations, model.Allocation{Node: a.Node, GPUs: a.GPUs, GPUMilli: a.GPUMilli})
	}
	for _, a := range r.Status.Attempts {
		j.Status.Attempts = append(j.Status.Attempts, model.Attempt{Number: a.Number, Nodes: a.Nodes,
			Placed: placedOr(a.Placed, a.Started), Started: a.Started, Ended: a.Ended, StopOrdered: a.StopAt, ExitCode: a.ExitCode, Reason: a.Reason, Detail: a.Detail,
			FailedNode: a.Failed, Pricing: a.Pricing, Rates: unpackRates(a.Rates, len(a.Nodes))})
	}
	for _, in := range r.Status.Instances {
		j.Status.Instances = append(j.Status.Instances, model.Instance(in))
	}
	for _, in := range r.Status.Resizing {
		j.Status.Resizing = append(j.Status.Resizing, model.Instance(in))
	}
	if e := s.Elastic; e != nil {
		j.Spec.Elastic = &model.Elastic{MinInstances: e.Min, MaxInstances: e.Max, Step: e.Step}
	}
	return j, nil
}

type reservationRecord struct {
	Name   string    `json:"name"`
	Owner  string    `json:"owner"`
	SKU    string    `json:"sku"`
	Region string    `json:"region"`
	Count  int       `json:"count"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`
}

func encodeReservation(r model.Reservation) []byte {
	b, _ := json.Marshal(reservationRecord{Name: r.Name, Owner: r.Owner, SKU: r.SKU, Region: r.Region,
		Count: r.Count, Start: r.Start, End: r.End})
	return b
}

func decodeReservation(b []byte) (model.Reservation, error) {
	var r reservationRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return model.Reservation{}, err
	}
	return model.Reservation{Name: r.Name, Owner: r.Owner, SKU: r.SKU, Region: r.Region, Count: r.Count,
		Start: r.Start, End: r.End}, nil
}

// tokenRecord is what a token's hash maps to: a tenant, admin, a node's
// agent, or an endpoint's replicas.
type tokenRecord struct {
	Tenant    string    `json:"tenant,omitempty"`
	Admin     bool      `json:"admin,omitempty"`
	Node      string    `json:"node,omitempty"`
	Endpoint  string    `json:"endpoint,omitempty"`
	Scope     string    `json:"scope,omitempty"` // ScopeMetrics, or "" for the kinds above
	CreatedAt time.Time `json:"created_at,omitzero"`
	// Name is what the admin called the token; ExpiresAt, when set, is
	// when it stops being accepted.
	Name      string    `json:"name,omitempty"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// nodeRecord is a node's last known health. The simulated node layer writes
// the fleet file's health once; in agent mode a registration writes Ready
// with the GPUs and address the agent reported, and a missed heartbeat
// NotReady. Heartbeats themselves stay in memory.
type nodeRecord struct {
	Health    string      `json:"health"`
	UpdatedAt time.Time   `json:"updated_at,omitzero"`
	Address   string      `json:"address,omitempty"`
	GPUs      []gpuRecord `json:"gpus,omitempty"`
	// Drain, when set, is the node's drain (drain.go, faildrain.go): a Ready
	// node is Draining while it stands.
	Drain *NodeDrain `json:"drain,omitempty"`
	// ResumedAt is when the node's last drain ended (an administrator's
	// resume, or its passing health check): the host was seen to, and
	// failures before it no longer count against it (faildrain.go).
	ResumedAt time.Time `json:"resumed_at,omitzero"`
}

type gpuRecord struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Model     string `json:"model"`
	MemoryMiB int64  `json:"memory_mib,omitempty"`
}

// placedOr is when an attempt was placed: as recorded, or for a record
// written before placement was, its start.
func placedOr(placed, started time.Time) time.Time {
	if placed.IsZero() {
		return started
	}
	return placed
}
