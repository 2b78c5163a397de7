package endpoint

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
)

// endpointRecord is an endpoint in the store, in the wire format of
// the server's record.go: stable JSON names, durations in nanoseconds.
type endpointRecord struct {
	Spec endpointSpecRecord `json:"spec"`
	// Token is the endpoint's metrics token, which every replica gets in
	// its env (and so every replica job's record holds); the server keeps
	// its hash as a token of the endpoint (Records.Create), as for every
	// token.
	Token     string               `json:"token"`
	Status    endpointStatusRecord `json:"status"`
	CreatedAt time.Time            `json:"created_at"`
}

type endpointSpecRecord struct {
	Name        string             `json:"name"`
	Tenant      string             `json:"tenant"`
	Model       string             `json:"model"`
	Command     []string           `json:"command,omitempty"`
	Env         map[string]string  `json:"env,omitempty"`
	Container   *model.Container   `json:"container,omitempty"`
	GPUs        int                `json:"gpus_per_instance"`
	GPUMilli    int64              `json:"gpu_milli,omitempty"`
	GPUModels   []string           `json:"gpu_models,omitempty"`
	CPUMilli    int64              `json:"cpu_milli,omitempty"`
	MemoryMiB   int64              `json:"memory_mib,omitempty"`
	Class       int                `json:"priority_class"`
	Value       int                `json:"priority_value,omitempty"`
	MinReplicas int                `json:"min_replicas"`
	MaxReplicas int                `json:"max_replicas"`
	SLOP95      time.Duration      `json:"slo_p95_ns"`
	Regions     []string           `json:"regions,omitempty"`
	Residency   string             `json:"residency,omitempty"`
	DataRegion  string             `json:"data_region,omitempty"`
	Reservation string             `json:"reservation,omitempty"`
	Nodes       []string           `json:"nodes,omitempty"`
	Exclude     []string           `json:"exclude_nodes,omitempty"`
	Throughput  map[string]float64 `json:"throughput"`
	ScaleInAft  time.Duration      `json:"scale_in_after_ns,omitempty"`
	ScaleInInt  time.Duration      `json:"scale_in_interval_ns,omitempty"`
	LeadTime    time.Duration      `json:"lead_time_ns,omitempty"`
	PeakWindow  time.Duration      `json:"peak_window_ns,omitempty"`
	MaxSurge    int                `json:"max_surge,omitempty"`
	MaxUnavail  int                `json:"max_unavailable,omitempty"`
	ServiceTime time.Duration      `json:"service_time_ns,omitempty"`
	ReadyPath   string             `json:"readiness_path,omitempty"`
	ReadyTime   time.Duration      `json:"readiness_timeout_ns,omitempty"`
	Access      string             `json:"access,omitempty"`
}

type endpointStatusRecord struct {
	Desired    int                  `json:"desired"`
	Autoscaler autoscaleStateRecord `json:"autoscaler"`
	Reason     string               `json:"reason,omitempty"`
	Events     []eventRecord        `json:"events,omitempty"`
	// RolloutSince and Unlabelled are Endpoint's.
	RolloutSince time.Time `json:"rollout_since,omitzero"`
	Unlabelled   string    `json:"unlabelled_template,omitempty"`
	Restarted    time.Time `json:"restarted_at,omitzero"`
	// Previous holds the template fields of Endpoint.Previous.
	Previous          *endpointSpecRecord `json:"previous_template,omitempty"`
	PreviousRestarted time.Time           `json:"previous_restarted_at,omitzero"`
	// CrashLoop is Endpoint's.
	CrashLoop crashLoopRecord `json:"crash_loop,omitzero"`
}

// crashLoopRecord is CrashLoop.
type crashLoopRecord struct {
	Failures int       `json:"failures,omitempty"`
	Last     time.Time `json:"last_failure,omitzero"`
	Until    time.Time `json:"until,omitzero"`
}

// autoscaleStateRecord is autoscale.State.
type autoscaleStateRecord struct {
	LowSince    time.Time `json:"low_since,omitzero"`
	LowMax      int       `json:"low_max,omitempty"`
	LastScaleIn time.Time `json:"last_scale_in,omitzero"`
	Boost       float64   `json:"boost,omitempty"`
	LastMiss    time.Time `json:"last_miss,omitzero"`
	Unsettled   time.Time `json:"unsettled,omitzero"`
}

type eventRecord struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	From   int       `json:"from"`
	To     int       `json:"to"`
	Reason string    `json:"reason"`
}

// templateRecord is the part of s's record that shapes a replica (its
// template, rollout.go): what the store keeps of it, so that an
// empty list or map and a missing one are the same template.
func templateRecord(s *model.EndpointSpec) endpointSpecRecord {
	return endpointSpecRecord{Command: s.Command, Env: s.Env, Container: s.Container,
		GPUs: s.Resources.GPUsPerInstance, GPUMilli: s.Resources.GPUMilli, GPUModels: s.Resources.GPUModels,
		CPUMilli: s.Resources.CPUMilli, MemoryMiB: s.Resources.MemoryMiB,
		Class: int(s.Priority.Class), Value: s.Priority.Value,
		Regions: s.Placement.Regions, Residency: s.Placement.Residency,
		DataRegion: s.Placement.DataRegion, Reservation: s.Placement.Reservation, Nodes: s.Placement.Nodes, Exclude: s.Placement.ExcludeNodes}
}

func encode(e *Endpoint) []byte {
	s := &e.Spec
	spec := templateRecord(s)
	spec.Name, spec.Tenant, spec.Model, spec.MinReplicas, spec.MaxReplicas = s.Name, s.Tenant, s.Model, s.MinReplicas, s.MaxReplicas
	spec.SLOP95, spec.Throughput = s.SLO.P95, s.Throughput
	spec.ScaleInAft, spec.ScaleInInt = s.Autoscale.ScaleInAfter, s.Autoscale.ScaleInInterval
	spec.LeadTime, spec.PeakWindow = s.Autoscale.LeadTime, s.Autoscale.PeakWindow
	spec.MaxSurge, spec.MaxUnavail = s.Rollout.MaxSurge, s.Rollout.MaxUnavailable
	spec.ServiceTime, spec.ReadyPath, spec.ReadyTime, spec.Access = s.ServiceTime, s.Readiness.Path, s.Readiness.Timeout, s.Access
	r := endpointRecord{
		Spec:  spec,
		Token: e.token,
		Status: endpointStatusRecord{Desired: e.Desired, Reason: e.Reason, RolloutSince: e.RolloutSince, Unlabelled: e.Unlabelled,
			Restarted: e.Restarted, PreviousRestarted: e.PreviousRestarted, CrashLoop: crashLoopRecord(e.CrashLoop),
			Autoscaler: autoscaleStateRecord{LowSince: e.State.LowSince, LowMax: e.State.LowMax, LastScaleIn: e.State.LastScaleIn,
				Boost: e.State.Boost, LastMiss: e.State.LastMiss, Unsettled: e.State.Unsettled}},
		CreatedAt: e.CreatedAt,
	}
	if e.Previous != nil {
		prev := templateRecord(e.Previous)
		r.Status.Previous = &prev
	}
	for _, ev := range e.Events {
		r.Status.Events = append(r.Status.Events, eventRecord(ev))
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("endpoint: encode %s: %v", s.Name, err)) // only plain data: cannot happen
	}
	return b
}

func decode(b []byte) (*Endpoint, error) {
	var r endpointRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	s := r.Spec
	if s.Name == "" {
		return nil, fmt.Errorf("endpoint record without a name")
	}
	e := &Endpoint{
		Spec:    specOfRecord(s),
		Desired: r.Status.Desired, Reason: r.Status.Reason, CreatedAt: r.CreatedAt, token: r.Token,
		RolloutSince: r.Status.RolloutSince, Unlabelled: r.Status.Unlabelled, Restarted: r.Status.Restarted,
		PreviousRestarted: r.Status.PreviousRestarted, CrashLoop: CrashLoop(r.Status.CrashLoop),
		State: autoscale.State{LowSince: r.Status.Autoscaler.LowSince, LowMax: r.Status.Autoscaler.LowMax,
			LastScaleIn: r.Status.Autoscaler.LastScaleIn, Boost: r.Status.Autoscaler.Boost,
			LastMiss: r.Status.Autoscaler.LastMiss, Unsettled: r.Status.Autoscaler.Unsettled},
	}
	if r.Status.Previous != nil {
		prev := specOfRecord(*r.Status.Previous)
		e.Previous = &prev
	}
	for _, ev := range r.Status.Events {
		e.Events = append(e.Events, Event(ev))
	}
	return e, nil
}

// specOfRecord is the spec a record holds.
func specOfRecord(s endpointSpecRecord) model.EndpointSpec {
	return model.EndpointSpec{
		Name: s.Name, Tenant: s.Tenant, Model: s.Model, Command: s.Command, Env: s.Env, Container: s.Container,
		Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: s.GPUs, GPUMilli: s.GPUMilli,
			GPUModels: s.GPUModels, CPUMilli: s.CPUMilli, MemoryMiB: s.MemoryMiB},
		Priority:    model.Priority{Class: model.Class(s.Class), Value: s.Value},
		MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas, SLO: model.SLO{P95: s.SLOP95},
		Placement: model.Placement{Regions: s.Regions, Residency: s.Residency, DataRegion: s.DataRegion,
			Reservation: s.Reservation, Nodes: s.Nodes, ExcludeNodes: s.Exclude},
		Throughput: s.Throughput,
		Autoscale: model.EndpointAutoscale{ScaleInAfter: s.ScaleInAft, ScaleInInterval: s.ScaleInInt,
			LeadTime: s.LeadTime, PeakWindow: s.PeakWindow},
		Rollout:     model.EndpointRollout{MaxSurge: s.MaxSurge, MaxUnavailable: s.MaxUnavail},
		ServiceTime: s.ServiceTime, Readiness: model.EndpointReadiness{Path: s.ReadyPath, Timeout: s.ReadyTime}, Access: s.Access,
	}
}
