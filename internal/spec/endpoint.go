package spec

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// endpointFile is the layout of one inference endpoint.
type endpointFile struct {
	Name        string            `yaml:"name"`
	Tenant      string            `yaml:"tenant"`
	Model       string            `yaml:"model"`
	Command     command           `yaml:"command"`
	Env         map[string]string `yaml:"env"`
	Image       string            `yaml:"image"`
	Args        []string          `yaml:"args"`
	Workdir     string            `yaml:"workdir"`
	Mounts      []mountEntry      `yaml:"mounts"`
	Resources   replicaEntry      `yaml:"resources"`
	Priority    priority          `yaml:"priority"`
	MinReplicas int               `yaml:"min_replicas"`
	MaxReplicas *int              `yaml:"max_replicas"`
	SLO         sloEntry          `yaml:"slo"`
	Placement   placementEntry    `yaml:"placement"`
	Throughput  throughput        `yaml:"throughput"`
	Autoscale   autoscaleEntry    `yaml:"autoscale"`
	Rollout     *rolloutEntry     `yaml:"rollout"`
	ServiceTime milliseconds      `yaml:"service_time_ms"`
	Readiness   readinessEntry    `yaml:"readiness"`
	Access      string            `yaml:"access"`
}

// readinessEntry is the check a new replica passes before the gateway
// routes to it; a field left out takes the default.
type readinessEntry struct {
	Path    string   `yaml:"path"`
	Timeout duration `yaml:"timeout"`
}

// rolloutEntry bounds a rolling update; a field left out is 0, and a
// section left out the default (model.EndpointRollout).
type rolloutEntry struct {
	MaxSurge       int `yaml:"max_surge"`
	MaxUnavailable int `yaml:"max_unavailable"`
}

// autoscaleEntry tunes the endpoint's autoscaler; a field left out takes
// the autoscaler's default.
type autoscaleEntry struct {
	ScaleInAfter    duration `yaml:"scale_in_after"`
	ScaleInInterval duration `yaml:"scale_in_interval"`
	LeadTime        duration `yaml:"lead_time"`
	PeakWindow      duration `yaml:"peak_window"`
}

// replicaEntry is the resources of one replica: a job's resources without
// instance_count, as the replica count is the autoscaler's.
type replicaEntry struct {
	GPUsPerInstance int      `yaml:"gpus_per_instance"`
	GPUMilli        int64    `yaml:"gpu_milli"`
	GPUModels       []string `yaml:"gpu_models"`
	CPU             cpu      `yaml:"cpu"`
	Memory          memory   `yaml:"memory"`
}

type sloEntry struct {
	P95 milliseconds `yaml:"p95_ms"`
}

// newEndpointFile returns an endpoint with the defaults of fields left
// out: one GPU per replica, one replica at least, standard priority.
func newEndpointFile() endpointFile {
	return endpointFile{
		Resources:   replicaEntry{GPUsPerInstance: 1},
		Priority:    priority{Class: model.ClassStandard},
		MinReplicas: 1,
	}
}

// milliseconds is a latency written as a number of milliseconds (150,
// 12.5) and kept as a time.Duration.
type milliseconds time.Duration

func (m *milliseconds) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	ms, err := number(n)
	if err != nil {
		return fmt.Errorf("want a number of milliseconds like 150, got %s", describe(n))
	}
	if math.Abs(ms) > maxDuration*1000 {
		return fmt.Errorf("%s ms is out of range", n.Value)
	}
	*m = milliseconds(time.Duration(math.Round(ms * float64(time.Millisecond))))
	return nil
}

// throughput maps GPU models to the requests per second one replica
// sustains at the SLO: {H100: 900, T4: 120}.
type throughput map[string]float64

func (t *throughput) decodeNode(d *decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping of GPU models to requests/s, e.g. {H100: 900, T4: 120}, got %s", describe(n))
	}
	out := throughput{}
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if err := d.visit(k, path); err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode || isMerge(k) {
			return d.errorAt(k, path, "want a GPU model name, got %s", describe(k))
		}
		fp := join(path, k.Value)
		if first, dup := lines[k.Value]; dup {
			return d.errorAt(k, fp, "set twice (first at line %d)", first)
		}
		lines[k.Value] = k.Line
		if v == nil {
			return d.errorAt(k, fp, "want a number of requests/s, got nothing")
		}
		f, err := number(v)
		if err != nil {
			return d.errorAt(v, fp, "want a number of requests/s, got %s", describe(v))
		}
		out[k.Value] = f
	}
	*t = out
	return nil
}

// ReadEndpoints reads the endpoints in the file at pathOrDir or, when it
// is a directory, in its *.yaml, *.yml and *.json files in name order. See
// ParseEndpoints.
func ReadEndpoints(pathOrDir string) ([]model.EndpointSpec, error) {
	return ReadEndpointFiles([]string{pathOrDir})
}

// ReadEndpointFiles reads the endpoints of every file or directory in
// paths, in turn, as ReadEndpoints reads one.
func ReadEndpointFiles(paths []string) ([]model.EndpointSpec, error) {
	var specs []model.EndpointSpec
	err := readSpecFiles("endpoints", paths, func(file string, data []byte) error {
		s, err := ParseEndpoints(file, data)
		specs = append(specs, s...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return specs, nil
}

// ParseEndpoints reads the inference endpoints in the file named name:
// one or more YAML documents separated by "---", or JSON, each an
// endpoint or a list of endpoints. Absent fields take defaults:
// gpus_per_instance 1, min_replicas 1, max_replicas min_replicas (a fixed
// size), priority standard, gpu_models the models of the throughput
// profile, command allot demo serve, each autoscale duration
// (scale_in_after, scale_in_interval, lead_time, peak_window) zero: the
// autoscaler's default, and the rollout section the default rollout. Every returned spec has passed
// model.EndpointSpec.Validate; any error is an *Error.
func ParseEndpoints(name string, data []byte) ([]model.EndpointSpec, error) {
	return parseEndpoints(name, data, "")
}

// ParseEndpointsFor is ParseEndpoints with tenant as the tenant of every
// endpoint that names none: what the API does for a tenant's token.
func ParseEndpointsFor(name string, data []byte, tenant string) ([]model.EndpointSpec, error) {
	return parseEndpoints(name, data, tenant)
}

func parseEndpoints(name string, data []byte, tenant string) ([]model.EndpointSpec, error) {
	docs, err := parseDocuments(name, data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	var specs []model.EndpointSpec
	for _, doc := range docs {
		if doc.Kind != yaml.SequenceNode {
			s, err := d.endpoint(doc, doc, "", tenant)
			if err != nil {
				return nil, err
			}
			specs = append(specs, s)
			continue
		}
		for i, item := range doc.Content {
			s, err := d.endpoint(doc, resolve(item), fmt.Sprintf("[%d]", i), tenant)
			if err != nil {
				return nil, err
			}
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return nil, &Error{File: name, Msg: "file is empty: want an endpoint (name: …, tenant: …, model: …, slo: …, throughput: …)"}
	}
	return specs, nil
}

// endpoint reads and validates the endpoint at n, whose path from root is
// path; tenant is the tenant when the endpoint names none.
func (d *decoder) endpoint(root, n *yaml.Node, path, tenant string) (model.EndpointSpec, error) {
	if n == nil {
		return model.EndpointSpec{}, d.errorAt(root, path, "want an endpoint, got nothing")
	}
	e := newEndpointFile()
	e.Tenant = tenant
	if err := d.decode(n, path, reflect.ValueOf(&e).Elem()); err != nil {
		return model.EndpointSpec{}, err
	}
	r := e.Resources
	s := model.EndpointSpec{
		Name:      e.Name,
		Tenant:    e.Tenant,
		Model:     e.Model,
		Command:   []string(e.Command),
		Env:       e.Env,
		Container: containerFields{Image: e.Image, Args: e.Args, Workdir: e.Workdir, Mounts: e.Mounts}.container(),
		Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: r.GPUsPerInstance, GPUMilli: r.GPUMilli,
			GPUModels: r.GPUModels, CPUMilli: int64(r.CPU), MemoryMiB: int64(r.Memory)},
		Priority:    model.Priority(e.Priority),
		MinReplicas: e.MinReplicas,
		MaxReplicas: e.MinReplicas,
		SLO:         model.SLO{P95: time.Duration(e.SLO.P95)},
		Placement: model.Placement{
			Regions: e.Placement.Regions, Residency: e.Placement.Residency,
			Interconnect: model.Fabric(e.Placement.Interconnect),
			DataRegion:   e.Placement.DataRegion, Reservation: e.Placement.Reservation,
			Nodes: e.Placement.Nodes, ExcludeNodes: e.Placement.ExcludeNodes,
		},
		Throughput: e.Throughput,
		Autoscale: model.EndpointAutoscale{ScaleInAfter: time.Duration(e.Autoscale.ScaleInAfter),
			ScaleInInterval: time.Duration(e.Autoscale.ScaleInInterval), LeadTime: time.Duration(e.Autoscale.LeadTime),
			PeakWindow: time.Duration(e.Autoscale.PeakWindow)},
		ServiceTime: time.Duration(e.ServiceTime),
		Readiness:   model.EndpointReadiness{Path: e.Readiness.Path, Timeout: time.Duration(e.Readiness.Timeout)},
		Access:      e.Access,
	}
	if e.MaxReplicas != nil {
		s.MaxReplicas = *e.MaxReplicas
	}
	if r := e.Rollout; r != nil {
		if r.MaxSurge == 0 && r.MaxUnavailable == 0 {
			field := "rollout"
			if path != "" {
				field = path + ".rollout"
			}
			return model.EndpointSpec{}, d.errorAtPath(root, field, "a rollout needs max_surge or max_unavailable above 0 "+
				"(leave the section out for the default: a quarter of the replicas beyond the desired count, none fewer)")
		}
		s.Rollout = model.EndpointRollout{MaxSurge: r.MaxSurge, MaxUnavailable: r.MaxUnavailable}
	}
	if s.Command == nil && s.Container == nil {
		s.Command = slices.Clone(model.DefaultEndpointCommand)
	}
	if s.Resources.GPUModels == nil {
		s.Resources.GPUModels = s.ThroughputModels()
	}
	if err := s.Validate(); err != nil {
		return model.EndpointSpec{}, d.fromModel(root, err, func(f string) string {
			if path == "" {
				return f
			}
			return path + "." + strings.TrimPrefix(f, ".")
		})
	}
	return s, nil
}
