package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// jobDocument is the layout of a job file (see package spec), in JSON.
// Fields at their default are left out, except gpus_per_instance, whose
// default (1) differs from its zero value (no GPU).
type jobDocument struct {
	Name       string            `json:"name"`
	Tenant     string            `json:"tenant,omitempty"`
	Command    []string          `json:"command,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Resources  resourcesDocument `json:"resources"`
	Priority   string            `json:"priority,omitempty"`
	Placement  *placementDoc     `json:"placement,omitempty"`
	Retry      *retryDocument    `json:"retry,omitempty"`
	Checkpoint *checkpointDoc    `json:"checkpoint,omitempty"`
	Duration   string            `json:"duration,omitempty"`
}

type resourcesDocument struct {
	InstanceCount   int      `json:"instance_count"`
	GPUsPerInstance int      `json:"gpus_per_instance"`
	GPUMilli        int64    `json:"gpu_milli,omitempty"`
	GPUModels       []string `json:"gpu_models,omitempty"`
	CPU             string   `json:"cpu,omitempty"`    // milli-cores, "500m"
	Memory          int64    `json:"memory,omitempty"` // MiB
}

type placementDoc struct {
	Regions      []string `json:"regions,omitempty"`
	Residency    string   `json:"residency,omitempty"`
	Interconnect string   `json:"interconnect,omitempty"`
	DataRegion   string   `json:"data_region,omitempty"`
	Reservation  string   `json:"reservation,omitempty"`
}

type retryDocument struct {
	MaxRetries int    `json:"max_retries,omitempty"`
	Timeout    string `json:"timeout,omitempty"`
}

type checkpointDoc struct {
	Interval string `json:"interval,omitempty"`
	Grace    string `json:"grace,omitempty"`
}

// JobDocument returns s as a JSON job document, the body Submit sends: the
// same fields and units as a job YAML file, so the server reads back
// exactly s.
func JobDocument(s model.JobSpec) ([]byte, error) {
	r := s.Resources
	d := jobDocument{
		Name:    s.Name,
		Tenant:  s.Tenant,
		Command: s.Command,
		Env:     s.Env,
		Resources: resourcesDocument{
			InstanceCount: r.InstanceCount, GPUsPerInstance: r.GPUsPerInstance,
			GPUMilli: r.GPUMilli, GPUModels: r.GPUModels, Memory: r.MemoryMiB,
		},
		Duration: durationText(s.Duration),
	}
	if r.CPUMilli != 0 {
		d.Resources.CPU = fmt.Sprintf("%dm", r.CPUMilli)
	}
	if s.Priority != (model.Priority{Class: model.ClassStandard}) {
		d.Priority = s.Priority.String()
	}
	if p := s.Placement; p.Regions != nil || p.Residency != "" || p.Interconnect != "" || p.DataRegion != "" || p.Reservation != "" {
		d.Placement = &placementDoc{Regions: p.Regions, Residency: p.Residency,
			Interconnect: string(p.Interconnect), DataRegion: p.DataRegion, Reservation: p.Reservation}
	}
	if s.Retry != (model.Retry{}) {
		d.Retry = &retryDocument{MaxRetries: s.Retry.MaxRetries, Timeout: durationText(s.Retry.Timeout)}
	}
	if s.Checkpoint != (model.Checkpoint{}) {
		d.Checkpoint = &checkpointDoc{Interval: durationText(s.Checkpoint.Interval), Grace: durationText(s.Checkpoint.Grace)}
	}
	return json.Marshal(d)
}

// durationText writes a duration as a job file does; zero is left out.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
