package spec

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Document is a job spec in the form of a job file: the same field names
// and units, so that ParseJobs reads it back to the same spec. The API
// shows jobs in this form and the CLI submits them in it (as JSON).
type Document struct {
	Name       string            `json:"name"`
	Tenant     string            `json:"tenant"`
	Command    []string          `json:"command,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Image      string            `json:"image,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Workdir    string            `json:"workdir,omitempty"`
	Mounts     []mountDoc        `json:"mounts,omitempty"`
	Resources  resourcesDoc      `json:"resources"`
	Priority   string            `json:"priority"`
	Placement  *placementDoc     `json:"placement,omitempty"`
	Retry      *retryDoc         `json:"retry,omitempty"`
	Checkpoint *checkpointDoc    `json:"checkpoint,omitempty"`
	Duration   string            `json:"duration,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	ArrayIndex *int              `json:"array_index,omitempty"`
	After      []string          `json:"after,omitempty"`
	AfterCond  string            `json:"after_condition,omitempty"`
	Begin      string            `json:"begin,omitempty"`
	Elastic    *elasticDoc       `json:"elastic,omitempty"`
}

// elasticDoc is the elastic block of a job file.
type elasticDoc struct {
	MinInstances int `json:"min_instances"`
	MaxInstances int `json:"max_instances"`
	Step         int `json:"step,omitempty"`
}

// resourcesDoc is the resources section of a job file.
type resourcesDoc struct {
	InstanceCount   int      `json:"instance_count"`
	GPUsPerInstance int      `json:"gpus_per_instance"`
	GPUMilli        int64    `json:"gpu_milli,omitempty"`
	GPUModels       []string `json:"gpu_models,omitempty"`
	CPU             string   `json:"cpu,omitempty"`    // milli-cores, "500m"
	Memory          string   `json:"memory,omitempty"` // MiB, "8192Mi"
}

// placementDoc is the placement section of a job file.
type placementDoc struct {
	Regions      []string `json:"regions,omitempty"`
	Residency    string   `json:"residency,omitempty"`
	Interconnect string   `json:"interconnect,omitempty"`
	DataRegion   string   `json:"data_region,omitempty"`
	Reservation  string   `json:"reservation,omitempty"`
	Nodes        []string `json:"nodes,omitempty"`
	ExcludeNodes []string `json:"exclude_nodes,omitempty"`
}

// retryDoc is the retry section of a job file.
type retryDoc struct {
	MaxRetries int    `json:"max_retries,omitempty"`
	Timeout    string `json:"timeout,omitempty"`
}

// checkpointDoc is the checkpoint section of a job file.
type checkpointDoc struct {
	Interval string `json:"interval,omitempty"`
	Grace    string `json:"grace,omitempty"`
}

// durationText writes a duration as a job file does; zero is left out.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// DocumentOf returns s in job-file form.
func DocumentOf(s model.JobSpec) Document {
	r := s.Resources
	d := Document{
		Name: s.Name, Tenant: s.Tenant, Command: s.Command, Env: s.Env,
		Resources: resourcesDoc{InstanceCount: r.InstanceCount, GPUsPerInstance: r.GPUsPerInstance,
			GPUMilli: r.GPUMilli, GPUModels: r.GPUModels},
		Priority:   s.Priority.String(),
		Duration:   durationText(s.Duration),
		Labels:     s.Labels,
		ArrayIndex: s.ArrayIndex,
		After:      s.After,
	}
	d.Image, d.Args, d.Workdir, d.Mounts = containerDoc(s.Container)
	if !s.Begin.IsZero() {
		d.Begin = s.Begin.UTC().Format(time.RFC3339Nano)
	}
	if e := s.Elastic; e != nil {
		d.Elastic = &elasticDoc{MinInstances: e.MinInstances, MaxInstances: e.MaxInstances, Step: e.Step}
	}
	if s.AfterCondition != model.AfterOK {
		d.AfterCond = s.AfterCondition.String()
	}
	d.Resources.CPU, d.Resources.Memory = cpuMemoryText(r)
	d.Placement = placementDocOf(s.Placement)
	if s.Retry != (model.Retry{}) {
		d.Retry = &retryDoc{MaxRetries: s.Retry.MaxRetries, Timeout: durationText(s.Retry.Timeout)}
	}
	if s.Checkpoint != (model.Checkpoint{}) {
		d.Checkpoint = &checkpointDoc{Interval: durationText(s.Checkpoint.Interval), Grace: durationText(s.Checkpoint.Grace)}
	}
	return d
}

// cpuMemoryText writes a request's CPU and memory as a spec file does
// ("500m", "8192Mi"), empty when not set.
func cpuMemoryText(r model.Resources) (cpu, memory string) {
	if r.CPUMilli != 0 {
		cpu = fmt.Sprintf("%dm", r.CPUMilli)
	}
	if r.MemoryMiB != 0 {
		memory = fmt.Sprintf("%dMi", r.MemoryMiB)
	}
	return cpu, memory
}

// placementDocOf is p in file form, nil when nothing of it is set.
func placementDocOf(p model.Placement) *placementDoc {
	if len(p.Regions) == 0 && p.Residency == "" && p.Interconnect == "" && p.DataRegion == "" && p.Reservation == "" &&
		len(p.Nodes) == 0 && len(p.ExcludeNodes) == 0 {
		return nil
	}
	return &placementDoc{Regions: p.Regions, Residency: p.Residency, Interconnect: string(p.Interconnect),
		DataRegion: p.DataRegion, Reservation: p.Reservation, Nodes: p.Nodes, ExcludeNodes: p.ExcludeNodes}
}
