package spec

import (
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// EndpointDocument is an endpoint spec in the form of an endpoint file:
// the same field names and units, so that ParseEndpoints reads it back to
// the same spec. The API shows endpoints in this form.
type EndpointDocument struct {
	Name        string             `json:"name"`
	Tenant      string             `json:"tenant"`
	Model       string             `json:"model"`
	Command     []string           `json:"command,omitempty"`
	Env         map[string]string  `json:"env,omitempty"`
	Image       string             `json:"image,omitempty"`
	Args        []string           `json:"args,omitempty"`
	Workdir     string             `json:"workdir,omitempty"`
	Mounts      []mountDoc         `json:"mounts,omitempty"`
	Resources   replicaDoc         `json:"resources"`
	Priority    string             `json:"priority"`
	MinReplicas int                `json:"min_replicas"`
	MaxReplicas int                `json:"max_replicas"`
	SLO         sloDoc             `json:"slo"`
	Placement   *placementDoc      `json:"placement,omitempty"`
	Throughput  map[string]float64 `json:"throughput"`
	Autoscale   *autoscaleDoc      `json:"autoscale,omitempty"`
	Rollout     *rolloutDoc        `json:"rollout,omitempty"`
	ServiceTime float64            `json:"service_time_ms,omitempty"`
	Readiness   *readinessDoc      `json:"readiness,omitempty"`
	Access      string             `json:"access,omitempty"`
}

// readinessDoc is the readiness section of an endpoint file.
type readinessDoc struct {
	Path    string `json:"path,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// rolloutDoc is the rollout section of an endpoint file.
type rolloutDoc struct {
	MaxSurge       int `json:"max_surge"`
	MaxUnavailable int `json:"max_unavailable"`
}

// replicaDoc is the resources section of an endpoint file: one replica.
type replicaDoc struct {
	GPUsPerInstance int      `json:"gpus_per_instance"`
	GPUMilli        int64    `json:"gpu_milli,omitempty"`
	GPUModels       []string `json:"gpu_models,omitempty"`
	CPU             string   `json:"cpu,omitempty"`    // milli-cores, "500m"
	Memory          string   `json:"memory,omitempty"` // MiB, "8192Mi"
}

// sloDoc is the slo section of an endpoint file.
type sloDoc struct {
	P95Ms float64 `json:"p95_ms"`
}

// autoscaleDoc is the autoscale section of an endpoint file.
type autoscaleDoc struct {
	ScaleInAfter    string `json:"scale_in_after,omitempty"`
	ScaleInInterval string `json:"scale_in_interval,omitempty"`
	LeadTime        string `json:"lead_time,omitempty"`
	PeakWindow      string `json:"peak_window,omitempty"`
}

// EndpointDocumentOf returns s in endpoint-file form.
func EndpointDocumentOf(s model.EndpointSpec) EndpointDocument {
	r := s.Resources
	d := EndpointDocument{
		Name: s.Name, Tenant: s.Tenant, Model: s.Model, Command: s.Command, Env: s.Env,
		Resources:   replicaDoc{GPUsPerInstance: r.GPUsPerInstance, GPUMilli: r.GPUMilli, GPUModels: r.GPUModels},
		Priority:    s.Priority.String(),
		MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas,
		SLO:        sloDoc{P95Ms: float64(s.SLO.P95) / float64(time.Millisecond)},
		Throughput: s.Throughput,
	}
	d.Resources.CPU, d.Resources.Memory = cpuMemoryText(r)
	d.Image, d.Args, d.Workdir, d.Mounts = containerDoc(s.Container)
	d.Placement = placementDocOf(s.Placement)
	if a := s.Autoscale; a != (model.EndpointAutoscale{}) {
		d.Autoscale = &autoscaleDoc{ScaleInAfter: durationText(a.ScaleInAfter), ScaleInInterval: durationText(a.ScaleInInterval),
			LeadTime: durationText(a.LeadTime), PeakWindow: durationText(a.PeakWindow)}
	}
	if r := s.Rollout; r != (model.EndpointRollout{}) {
		d.Rollout = &rolloutDoc{MaxSurge: r.MaxSurge, MaxUnavailable: r.MaxUnavailable}
	}
	d.ServiceTime = float64(s.ServiceTime) / float64(time.Millisecond)
	if rd := s.Readiness; rd != (model.EndpointReadiness{}) {
		d.Readiness = &readinessDoc{Path: rd.Path, Timeout: durationText(rd.Timeout)}
	}
	d.Access = s.Access
	return d
}
