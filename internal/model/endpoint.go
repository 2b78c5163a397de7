package model

import (
	"math"
	"sort"
	"strings"
	"time"
)

// EndpointSpec is an inference endpoint: replicas of one serving program,
// each one instance of Resources, kept between MinReplicas and MaxReplicas
// so that the 95th percentile of request latency stays within SLO.P95.
//
// Priority defaults (in package spec) to standard, the class of jobs: a
// replica must not be spot, which is evicted whenever anyone needs the
// capacity and would break the SLO at the worst moment, and reserved is
// the class of bought-ahead or guaranteed capacity, which an operator
// grants on purpose; as a default it would let every endpoint that scales
// out preempt all standard training.
type EndpointSpec struct {
	Name   string
	Tenant string
	// Model is the name of the served model, free text for people
	// ("llama-3-70b-instruct").
	Model   string
	Command []string
	Env     map[string]string
	// Container, when set, runs each replica from an image, as a job's
	// (container.go); Command then replaces the image's entrypoint.
	Container *Container
	// Resources is one replica: InstanceCount is 1, and a replica needs a
	// GPU or a fraction of one (GPUMilli); GPUModels lists the models a
	// replica may run on, each of which needs a Throughput entry.
	Resources   Resources
	Priority    Priority
	MinReplicas int
	MaxReplicas int
	SLO         SLO
	// Placement: Regions, Residency, DataRegion, Reservation and
	// ExcludeNodes mean what they mean for jobs; Interconnect must be empty, as replicas are
	// independent single instances, not a gang.
	Placement Placement
	// Throughput is, per GPU model, the requests per second one replica
	// (as Resources sizes it) sustains with its p95 latency at SLO.P95.
	Throughput map[string]float64
	// Autoscale tunes the autoscaler for this endpoint; zero fields take
	// the autoscaler's defaults.
	Autoscale EndpointAutoscale
	// Rollout bounds how a change of what shapes a replica replaces the
	// replicas; zero is the default (EndpointRollout).
	Rollout EndpointRollout
	// ServiceTime is how long one request takes on an idle replica: the
	// part of its latency no count of replicas shortens. The autoscaler's
	// model never predicts a p95 below it; zero when not known.
	ServiceTime time.Duration
	// Readiness is how the gateway learns that a new replica may take
	// traffic; zero is the default (EndpointReadiness).
	Readiness EndpointReadiness
	// Access is who may call the endpoint through the gateway: AccessTenant
	// (the default, "" too) or AccessPublic.
	Access string
}

// The labels of an endpoint's replica jobs that the scheduling core reads:
// a job labelled LabelWorkload: WorkloadInference is placed off
// InfiniBand nodes while others fit (package sched, placeAmong).
const (
	LabelWorkload     = "workload"
	WorkloadInference = "inference"
)

// Who may call an endpoint through the gateway.
const (
	// AccessTenant: a bearer token of the endpoint's tenant; the gateway
	// never forwards it to a replica.
	AccessTenant = "tenant"
	// AccessPublic: anyone who reaches the gateway.
	AccessPublic = "public"
)

// EndpointReadiness is the check a replica must pass before the gateway
// sends it traffic: a GET of Path answered 2xx within Timeout.
type EndpointReadiness struct {
	Path    string
	Timeout time.Duration
}

// Defaults of EndpointReadiness, and the bound of its timeout.
const (
	DefaultReadinessPath    = "/healthz"
	DefaultReadinessTimeout = 2 * time.Second
	MaxReadinessTimeout     = time.Minute
	maxReadinessPath        = 1024
)

// Or returns r with the defaults for the fields left zero.
func (r EndpointReadiness) Or() EndpointReadiness {
	if r.Path == "" {
		r.Path = DefaultReadinessPath
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultReadinessTimeout
	}
	return r
}

// EndpointRollout is how a rolling update replaces an endpoint's
// replicas, as a Kubernetes Deployment's strategy.rollingUpdate is: at
// most MaxSurge replicas beyond the desired count, at most MaxUnavailable
// fewer than it serving. The zero value is the default: a quarter of the
// desired count beyond it (at least one), none fewer. Where no replica
// beyond the desired count can start (the tenant's quota or the fleet is
// full), MaxSurge 0 and MaxUnavailable 1 replace replicas in place.
type EndpointRollout struct {
	MaxSurge, MaxUnavailable int
}

// Bounds of the replica counts a rollout may surge or lack.
func (r EndpointRollout) Bounds(desired int) (surge, unavailable int) {
	if r == (EndpointRollout{}) {
		return max(1, (desired+3)/4), 0
	}
	return r.MaxSurge, r.MaxUnavailable
}

// EndpointAutoscale is an operator's tuning of one endpoint's autoscaler,
// as Kubernetes' HorizontalPodAutoscaler behavior.scaleDown is. A zero
// field means the autoscaler's default (package autoscale, DefaultParams).
type EndpointAutoscale struct {
	// ScaleInAfter is how long a smaller replica count must have sufficed
	// before the first scale-in (the stabilisation window).
	ScaleInAfter time.Duration
	// ScaleInInterval is the least time between two scale-in steps.
	ScaleInInterval time.Duration
	// LeadTime is from asking for a replica to its serving: the forecast
	// looks this far ahead.
	LeadTime time.Duration
	// PeakWindow is how far back the forecast takes the peak arrival rate:
	// a burst keeps its replicas at least this long after it ends.
	PeakWindow time.Duration
}

// MaxAutoscaleDuration bounds each duration of EndpointAutoscale.
const MaxAutoscaleDuration = time.Hour

// SLO is an endpoint's latency objective.
type SLO struct {
	P95 time.Duration // the 95th percentile of request latency
}

// Bounds of an endpoint spec's numbers.
const (
	MaxReplicas   = 1000
	MaxSLO        = 10 * time.Minute
	MaxThroughput = 1e7 // requests per second of one replica
)

// DefaultEndpointCommand is the program an endpoint runs when its spec
// names none: allot's own demo server (allot demo serve).
var DefaultEndpointCommand = []string{"allot", "demo", "serve"}

// Validate checks the spec on its own (not against the fleet).
//
// min_replicas must be at least 1: an endpoint at zero replicas has no
// replica to measure its arrival rate, so nothing would tell the
// autoscaler to start one, and the first requests would wait for a
// replica to be placed and load its model (minutes), far beyond any
// latency SLO.
func (s *EndpointSpec) Validate() error {
	r := s.Resources
	switch {
	case s.Model == "":
		return fieldErr("model", "must name the served model")
	case len(s.Model) > 253:
		return fieldErr("model", "must be at most 253 characters")
	case r.InstanceCount != 1:
		return fieldErr("resources.instance_count", "a replica is one instance, got %d; scale with min_replicas and max_replicas", r.InstanceCount)
	case r.GPUsPerInstance < 1:
		return fieldErr("resources.gpus_per_instance", "a replica needs a GPU or a fraction of one (gpu_milli): its throughput is per GPU model, got %d", r.GPUsPerInstance)
	case s.Placement.Interconnect != "":
		return fieldErr("placement.interconnect", "replicas are independent single instances, not a gang: leave interconnect out")
	case s.MinReplicas < 1 || s.MinReplicas > MaxReplicas:
		return fieldErr("min_replicas", "must be between 1 and %d, got %d (an endpoint keeps at least one replica to measure its load)", MaxReplicas, s.MinReplicas)
	case s.MaxReplicas < s.MinReplicas || s.MaxReplicas > MaxReplicas:
		return fieldErr("max_replicas", "must be between min_replicas (%d) and %d, got %d", s.MinReplicas, MaxReplicas, s.MaxReplicas)
	case s.SLO.P95 <= 0:
		return fieldErr("slo.p95_ms", "must be above 0: the p95 latency the endpoint keeps, in milliseconds")
	case s.SLO.P95 > MaxSLO:
		return fieldErr("slo.p95_ms", "must be at most %d ms, got %d", MaxSLO.Milliseconds(), s.SLO.P95.Milliseconds())
	case len(r.GPUModels) == 0:
		return fieldErr("resources.gpu_models", "must list the GPU models a replica may run on")
	case len(s.Throughput) == 0:
		return fieldErr("throughput", "must give the requests/s one replica sustains at the SLO, per GPU model, e.g. {H100: 900, T4: 120}")
	}
	// The rest is checked as a job of one instance would be: the same
	// fields, the same messages.
	job := JobSpec{Name: s.Name, Tenant: s.Tenant, Command: s.Command, Env: s.Env, Resources: r,
		Priority: s.Priority, Placement: s.Placement, Container: s.Container}
	if err := job.Validate(); err != nil {
		return err
	}
	if err := Printable("model", s.Model); err != nil {
		return err
	}
	for _, m := range s.ThroughputModels() {
		field := "throughput." + m
		if m == "" {
			return fieldErr("throughput", "a GPU model name must not be empty")
		}
		if err := Printable("throughput", m); err != nil {
			return err
		}
		if v := s.Throughput[m]; !(v > 0) || math.IsInf(v, 0) || v > MaxThroughput {
			return fieldErr(field, "must be a number of requests/s above 0 and at most %g, got %g", float64(MaxThroughput), v)
		}
	}
	for i, m := range r.GPUModels {
		if _, ok := s.Throughput[m]; !ok {
			return fieldErr("throughput", "has no entry for %s, which resources.gpu_models[%d] allows", m, i)
		}
	}
	a := s.Autoscale
	for _, f := range []struct {
		field string
		d     time.Duration
	}{{"autoscale.scale_in_after", a.ScaleInAfter}, {"autoscale.scale_in_interval", a.ScaleInInterval},
		{"autoscale.lead_time", a.LeadTime}, {"autoscale.peak_window", a.PeakWindow}} {
		if f.d < 0 || f.d > MaxAutoscaleDuration {
			return fieldErr(f.field, "must be a duration between 0 (the default) and %s, got %s", MaxAutoscaleDuration, f.d)
		}
	}
	if s.ServiceTime < 0 || s.ServiceTime >= s.SLO.P95 {
		return fieldErr("service_time_ms", "must be between 0 (not known) and below slo.p95_ms (%d ms): a replica must be able to meet the SLO idle, got %s",
			s.SLO.P95.Milliseconds(), s.ServiceTime)
	}
	if rd := s.Readiness; rd.Path != "" && (rd.Path[0] != '/' || len(rd.Path) > maxReadinessPath || strings.ContainsAny(rd.Path, " ?#\x00\r\n")) {
		return fieldErr("readiness.path", "must be an absolute path of at most %d bytes without spaces, query or fragment, such as /healthz, got %q", maxReadinessPath, rd.Path)
	} else if rd.Timeout < 0 || rd.Timeout > MaxReadinessTimeout {
		return fieldErr("readiness.timeout", "must be a duration between 0 (the default, %s) and %s, got %s", DefaultReadinessTimeout, MaxReadinessTimeout, rd.Timeout)
	}
	if s.Access != "" && s.Access != AccessTenant && s.Access != AccessPublic {
		return fieldErr("access", "must be %q (a token of the endpoint's tenant) or %q (anyone), got %q", AccessTenant, AccessPublic, s.Access)
	}
	if r := s.Rollout; r.MaxSurge < 0 || r.MaxSurge > MaxReplicas {
		return fieldErr("rollout.max_surge", "must be between 0 and %d replicas, got %d", MaxReplicas, r.MaxSurge)
	} else if r.MaxUnavailable < 0 || r.MaxUnavailable > MaxReplicas {
		return fieldErr("rollout.max_unavailable", "must be between 0 and %d replicas, got %d", MaxReplicas, r.MaxUnavailable)
	}
	return nil
}

// ThroughputModels returns the GPU models of the throughput profile in
// name order.
func (s *EndpointSpec) ThroughputModels() []string {
	out := make([]string, 0, len(s.Throughput))
	for m := range s.Throughput {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}
