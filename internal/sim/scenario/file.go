package scenario

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/data/traces"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/engine"
	"github.com/allot-dev/allot/internal/sim/serving"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/trace/azurellm"
	"github.com/allot-dev/allot/internal/trace/philly"
)

// DefaultTrainingSpeed is the work per second of a GPU of each model,
// A100 = 1: H100 1.8 (MLPerf Training v3.0, like-for-like 16-GPU
// submissions), T4 0.2 (dense FP16 tensor FLOP/s, 65 against 312).
// docs/serving-model.md has the sources.
var DefaultTrainingSpeed = map[string]float64{"H100": 1.8, "A100": 1, "T4": 0.2}

// File is a scenario as written in YAML (see the package documentation).
type File struct {
	Name     string        `yaml:"name"`
	Seed     int64         `yaml:"seed"`
	Start    spec.Time     `yaml:"start"`
	Duration spec.Duration `yaml:"duration"`
	// Tenants is the path of a tenants file (partitions, tenants, quotas,
	// strategy), relative to the scenario file.
	Tenants string `yaml:"tenants"`
	// OnTime is how soon after its window opens a reservation's work must
	// run to count as honoured on time (default 15m).
	OnTime spec.Duration `yaml:"on_time"`
	// MinRunTime is the core's protection of fresh work (default 10m); a
	// guarantee counts as violated only for work that waited longer.
	MinRunTime spec.Duration `yaml:"min_run_time"`
	// HoldAfter is the core's Config.HoldAfter (0, the default: off): a
	// queued job that has waited this long keeps nodes until it starts.
	HoldAfter spec.Duration `yaml:"hold_after"`
	// PriorityGap is the core's Config.PriorityGap (0, the default: off):
	// a job may evict its own tenant's work of its class whose priority
	// value (class: standard:100) is at least this much below its own.
	PriorityGap int `yaml:"priority_gap"`
	// Cycle is the core's cycle period (engine.Config.Period): work that
	// arrives or ends between two boundaries is scheduled together at the
	// next; 0, the default, runs a cycle after every event.
	Cycle        spec.Duration    `yaml:"cycle"`
	Fleet        FleetGen         `yaml:"fleet"`
	Reservations []ReservationGen `yaml:"reservations"`
	Jobs         []JobGen         `yaml:"jobs"`
	Arrivals     []ArrivalGen     `yaml:"arrivals"`
	Training     []TrainingGen    `yaml:"training"`
	Endpoints    []EndpointGen    `yaml:"endpoints"`
	// TrainingSpeed is the work a GPU of each model does per second, the
	// reference (A100) being 1 (docs/serving-model.md); jobs' durations are
	// at the reference speed, and a gang runs at its slowest GPU's.
	// Default DefaultTrainingSpeed; a model it leaves out runs at 1.
	TrainingSpeed map[string]float64 `yaml:"training_speed"`
	// ScalingEfficiency is what an elastic job keeps of each doubling of
	// its instances (engine.Config.ScalingEfficiency; default
	// engine.DefaultScalingEfficiency, docs/serving-model.md): it matters
	// only in runs with elastic training (Options.Elastic).
	ScalingEfficiency float64 `yaml:"scaling_efficiency"`

	dir string // of the file, for Tenants and traces

	mu        sync.Mutex                   // guards the traces read so far, which runs share
	jobTraces map[string][]philly.Job      // training traces by name
	patterns  map[string]*azurellm.Pattern // request traces by name
}

// FleetGen generates the fleet: regions of clusters of node counts per SKU.
type FleetGen struct {
	Regions []RegionGen `yaml:"regions"`
}

// RegionGen is one region.
type RegionGen struct {
	Name      string       `yaml:"name"`
	Residency string       `yaml:"residency"`
	Clusters  []ClusterGen `yaml:"clusters"`
}

// ClusterGen is one cluster: runs of nodes of SKUs of the built-in
// catalog, laid out in leaf groups of LeafNodes (default 16).
type ClusterGen struct {
	Name      string    `yaml:"name"`
	Fabric    string    `yaml:"fabric"`
	LeafNodes int       `yaml:"leaf_nodes"`
	Nodes     []NodeGen `yaml:"nodes"`
}

// NodeGen is Count nodes of SKU.
type NodeGen struct {
	SKU   string `yaml:"sku"`
	Count int    `yaml:"count"`
}

// ReservationGen is capacity bought ahead whose window opens Opens after
// the start and lasts Lasts; at the opening its owner submits Work naming
// it (instances of whole nodes of the SKU, for Work.Duration).
type ReservationGen struct {
	Name   string        `yaml:"name"`
	Owner  string        `yaml:"owner"`
	SKU    string        `yaml:"sku"`
	Region string        `yaml:"region"`
	Count  int           `yaml:"count"`
	Opens  spec.Duration `yaml:"opens"`
	Lasts  spec.Duration `yaml:"lasts"`
	Work   struct {
		Instances int           `yaml:"instances"`
		Duration  spec.Duration `yaml:"duration"`
	} `yaml:"work"`
}

// JobGen is one job submitted At after the start.
type JobGen struct {
	Name            string            `yaml:"name"`
	Tenant          string            `yaml:"tenant"`
	At              spec.Duration     `yaml:"at"`
	Instances       int               `yaml:"instances"`
	GPUsPerInstance int               `yaml:"gpus_per_instance"`
	GPUModels       []string          `yaml:"gpu_models"`
	Regions         []string          `yaml:"regions"`
	Residency       string            `yaml:"residency"`
	Interconnect    string            `yaml:"interconnect"`
	Class           string            `yaml:"class"`
	Duration        spec.Duration     `yaml:"duration"`
	Checkpoint      spec.Duration     `yaml:"checkpoint"`
	Labels          map[string]string `yaml:"labels"`
}

// ArrivalGen is a stream of jobs between From and Until (default the whole
// run), arriving on average Every apart (Poisson). Each draws its GPUs per
// instance and instance count from the lists, and its duration
// log-uniformly between MinDuration and MaxDuration.
type ArrivalGen struct {
	Name            string            `yaml:"name"`
	Tenant          string            `yaml:"tenant"`
	From            spec.Duration     `yaml:"from"`
	Until           spec.Duration     `yaml:"until"`
	Every           spec.Duration     `yaml:"every"`
	Instances       []int             `yaml:"instances"`
	GPUsPerInstance []int             `yaml:"gpus_per_instance"`
	GPUModels       []string          `yaml:"gpu_models"`
	Regions         []string          `yaml:"regions"`
	Residency       string            `yaml:"residency"`
	Interconnect    string            `yaml:"interconnect"`
	Class           string            `yaml:"class"`
	MinDuration     spec.Duration     `yaml:"min_duration"`
	MaxDuration     spec.Duration     `yaml:"max_duration"`
	Checkpoint      spec.Duration     `yaml:"checkpoint"`
	Labels          map[string]string `yaml:"labels"`
}

// EndpointGen is an inference endpoint and the requests it receives.
type EndpointGen struct {
	Name   string `yaml:"name"`
	Tenant string `yaml:"tenant"`
	Model  string `yaml:"model"`
	// Serving is the served model as the world sees it (package
	// sim/serving: parameters, weight bytes, KV cache, batch); default
	// serving.DefaultModel.
	Serving         *serving.Model `yaml:"serving"`
	GPUsPerInstance int            `yaml:"gpus_per_instance"`
	GPUModels       []string       `yaml:"gpu_models"`
	Regions         []string       `yaml:"regions"`
	Residency       string         `yaml:"residency"`
	Class           string         `yaml:"class"`
	MinReplicas     int            `yaml:"min_replicas"`
	MaxReplicas     int            `yaml:"max_replicas"`
	SLO             SLO            `yaml:"slo"`
	// Throughput is the autoscaler's own profile (requests/s one replica
	// sustains at the SLO, per GPU model), as the endpoint's owner states
	// it to the server; the world does not read it.
	Throughput spec.Throughput `yaml:"throughput"`
	// Startup is from a replica's start to its serving (model load;
	// default 2m).
	Startup spec.Duration `yaml:"startup"`
	Load    Load          `yaml:"load"`
}

// SLO is an endpoint's latency objective: the p95 of a metric over each
// minute's requests.
type SLO struct {
	// Metric is ttft (time to first token) or request (the whole request);
	// default request.
	Metric string  `yaml:"metric"`
	P95Ms  float64 `yaml:"p95_ms"`
}

// The SLO metrics.
const (
	MetricTTFT    = "ttft"
	MetricRequest = "request"
)

// Load is an endpoint's requests: a daily curve of requests/s between
// TroughRPS and PeakRPS, a cosine over the day with its top at PeakHour
// (UTC), times Weekend on Saturdays and Sundays (default 1), with a
// multiplicative noise of about ±Noise (0.05 is 5 %) drawn each minute;
// within each minute, arrivals and token counts follow Trace (a built-in
// trace name, data/traces: azure-code or azure-conv, the default; or a CSV
// path relative to the scenario).
type Load struct {
	Trace     string  `yaml:"trace"`
	PeakRPS   float64 `yaml:"peak_rps"`
	TroughRPS float64 `yaml:"trough_rps"`
	PeakHour  float64 `yaml:"peak_hour"`
	Weekend   float64 `yaml:"weekend"`
	Noise     float64 `yaml:"noise"`
}

// TrainingGen is a stream of training jobs drawn from a job trace
// (Philly's, by default): each arrival takes the GPU count and run time of
// a job of the trace chosen at random, its run time capped at MaxDuration
// and meant at the reference GPU's speed (training_speed). Arrivals are
// Poisson between From and Until, at the rate that offers GPUHoursPerHour
// of work each hour. A job of up to NodeGPUs GPUs is one instance (one GPU
// runs on any node of an allowed model, inference nodes included); a
// larger one is a gang of whole nodes on one InfiniBand fabric.
type TrainingGen struct {
	Name   string `yaml:"name"`
	Tenant string `yaml:"tenant"`
	// Trace is "philly" (data/traces) or a CSV path relative to the
	// scenario, with Philly's columns.
	Trace           string            `yaml:"trace"`
	GPUHoursPerHour float64           `yaml:"gpu_hours_per_hour"`
	From            spec.Duration     `yaml:"from"`
	Until           spec.Duration     `yaml:"until"`
	MaxDuration     spec.Duration     `yaml:"max_duration"`
	MaxGPUs         int               `yaml:"max_gpus"`
	NodeGPUs        int               `yaml:"node_gpus"`
	GPUModels       []string          `yaml:"gpu_models"`
	Regions         []string          `yaml:"regions"`
	Residency       string            `yaml:"residency"`
	Class           string            `yaml:"class"`
	Checkpoint      spec.Duration     `yaml:"checkpoint"`
	Labels          map[string]string `yaml:"labels"`
	// Elastic says which of the stream's jobs are elastic, and how, in a
	// run with elastic training (Options.Elastic, --elastic); a stream
	// without it takes DefaultElastic there. Other runs ignore it: the
	// same file gives the comparison with and without elasticity.
	Elastic *ElasticGen `yaml:"elastic"`
}

// ElasticGen makes a training stream's larger jobs elastic
// (model.Elastic): a job of n instances, n at least FromInstances, runs
// with n to n × MaxFactor instances (its base size n is what it waits
// for), Step at a time; when Step does not divide n × (MaxFactor − 1),
// its maximum is the largest size below that it reaches.
type ElasticGen struct {
	// FromInstances: jobs of at least this many instances are elastic
	// (default 2: the gangs of whole nodes; 1 makes every job elastic,
	// its grown instances on other nodes of its cluster).
	FromInstances int `yaml:"from_instances"`
	// MaxFactor bounds a job's size at MaxFactor times its base size
	// (default 2).
	MaxFactor int `yaml:"max_factor"`
	// Step is the instances a resize adds or removes (default 1).
	Step int `yaml:"step"`
}

// DefaultElastic is the elasticity of a training stream without an
// elastic block, in a run with elastic training: the gangs (2 instances
// or more, 9 to 64 GPUs of Philly's jobs) grow to twice their size, an
// instance at a time; jobs of one node stay rigid.
var DefaultElastic = ElasticGen{FromInstances: 2, MaxFactor: 2, Step: 1}

// Read reads the scenario file at path. See Parse.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	f.dir = filepath.Dir(path)
	return f, nil
}

// Parse reads a scenario named name. Every problem is a *spec.Error naming
// the line and the field. Checks that need the fleet or the tenants (known
// SKUs, tenants) wait for Build.
func Parse(name string, data []byte) (*File, error) {
	f := &File{}
	check := func() error {
		f.defaults() // the checks see what a run will use
		return f.check()
	}
	if err := spec.DecodeStruct(name, data, f, "a scenario (name: …, fleet: …)", check); err != nil {
		return nil, err
	}
	return f, nil
}

// Defaults of a scenario.
const (
	DefaultOnTime  = 15 * time.Minute
	DefaultStartup = 2 * time.Minute
	DefaultLeaf    = 16
	// DefaultTrace is the request trace of an endpoint that names none.
	DefaultTrace = "azure-conv"
	// DefaultTrainingTrace is the job trace of a training stream.
	DefaultTrainingTrace = "philly"
	// DefaultMaxTrainingDuration caps a trace job's run time.
	DefaultMaxTrainingDuration = 24 * time.Hour
	// DefaultMaxTrainingGPUs leaves larger trace jobs out.
	DefaultMaxTrainingGPUs = 64
	// DefaultNodeGPUs is a training node's GPUs.
	DefaultNodeGPUs = 8
	// MaxDuration bounds a scenario's length (a minute tick each).
	MaxDuration = 31 * 24 * time.Hour
	maxNodes    = 100_000
	maxJobs     = 1_000_000
)

func (f *File) defaults() {
	if f.OnTime == 0 {
		f.OnTime = spec.Duration(DefaultOnTime)
	}
	if f.MinRunTime == 0 {
		f.MinRunTime = spec.Duration(10 * time.Minute)
	}
	for i := range f.Endpoints {
		e := &f.Endpoints[i]
		if e.Startup == 0 {
			e.Startup = spec.Duration(DefaultStartup)
		}
		if e.Load.Weekend == 0 {
			e.Load.Weekend = 1
		}
		if e.Load.Trace == "" {
			e.Load.Trace = DefaultTrace
		}
		if e.GPUsPerInstance == 0 {
			e.GPUsPerInstance = 1
		}
		if e.SLO.Metric == "" {
			e.SLO.Metric = MetricRequest
		}
		if e.Serving == nil {
			m := serving.DefaultModel
			e.Serving = &m
		}
	}
	for i := range f.Training {
		t := &f.Training[i]
		if t.Trace == "" {
			t.Trace = DefaultTrainingTrace
		}
		if t.Until == 0 {
			t.Until = f.Duration
		}
		if t.MaxDuration == 0 {
			t.MaxDuration = spec.Duration(DefaultMaxTrainingDuration)
		}
		if t.MaxGPUs == 0 {
			t.MaxGPUs = DefaultMaxTrainingGPUs
		}
		if t.NodeGPUs == 0 {
			t.NodeGPUs = DefaultNodeGPUs
		}
		if e := t.Elastic; e != nil {
			if e.FromInstances == 0 {
				e.FromInstances = DefaultElastic.FromInstances
			}
			if e.MaxFactor == 0 {
				e.MaxFactor = DefaultElastic.MaxFactor
			}
			if e.Step == 0 {
				e.Step = DefaultElastic.Step
			}
		}
	}
	if f.TrainingSpeed == nil {
		f.TrainingSpeed = maps.Clone(DefaultTrainingSpeed)
	}
	for i := range f.Fleet.Regions {
		for j := range f.Fleet.Regions[i].Clusters {
			if f.Fleet.Regions[i].Clusters[j].LeafNodes == 0 {
				f.Fleet.Regions[i].Clusters[j].LeafNodes = DefaultLeaf
			}
		}
	}
	for i := range f.Arrivals {
		if f.Arrivals[i].Until == 0 {
			f.Arrivals[i].Until = f.Duration
		}
	}
}

func fieldErr(field, format string, args ...any) error {
	return spec.FieldError(field, fmt.Sprintf(format, args...))
}

func (f *File) length() time.Duration { return time.Duration(f.Duration) }

// within checks an offset from the start.
func (f *File) within(field string, d spec.Duration) error {
	if d < 0 || time.Duration(d) > f.length() {
		return fieldErr(field, "must be between 0 and the scenario's duration (%s), got %s", f.length(), time.Duration(d))
	}
	return nil
}

// check is the validation of what can be checked without fleet and tenants.
func (f *File) check() error {
	switch {
	case f.Name == "":
		return fieldErr("name", "must not be empty")
	case time.Time(f.Start).IsZero():
		return fieldErr("start", "must be set, e.g. 2026-03-02T00:00:00Z")
	case f.Duration <= 0 || time.Duration(f.Duration) > MaxDuration:
		return fieldErr("duration", "must be between 1m and %s, got %s", MaxDuration, time.Duration(f.Duration))
	case f.Tenants == "":
		return fieldErr("tenants", "must name a tenants file (relative to the scenario)")
	case len(f.Fleet.Regions) == 0:
		return fieldErr("fleet.regions", "a fleet needs at least one region")
	case f.OnTime < 0:
		return fieldErr("on_time", "must not be negative")
	case f.MinRunTime < 0:
		return fieldErr("min_run_time", "must not be negative")
	case f.HoldAfter < 0:
		return fieldErr("hold_after", "must not be negative")
	case f.PriorityGap < 0:
		return fieldErr("priority_gap", "must not be negative")
	case f.Cycle < 0 || time.Duration(f.Cycle) > time.Hour:
		return fieldErr("cycle", "must be between 0 (a cycle after every event) and 1h, got %s", time.Duration(f.Cycle))
	}
	nodes := 0
	for i, r := range f.Fleet.Regions {
		for j, c := range r.Clusters {
			p := fmt.Sprintf("fleet.regions[%d].clusters[%d]", i, j)
			if c.LeafNodes < 0 {
				return fieldErr(p+".leaf_nodes", "must not be negative")
			}
			for k, ng := range c.Nodes {
				np := fmt.Sprintf("%s.nodes[%d]", p, k)
				if _, ok := model.BuiltinCatalog()[ng.SKU]; !ok {
					return fieldErr(np+".sku", "unknown SKU %q (known: %v)", ng.SKU, model.BuiltinCatalog().Names())
				}
				if ng.Count < 0 {
					return fieldErr(np+".count", "must not be negative, got %d", ng.Count)
				}
				nodes += ng.Count
				if nodes > maxNodes {
					return fieldErr(np+".count", "the fleet would have more than %d nodes", maxNodes)
				}
			}
		}
	}
	for i, r := range f.Reservations {
		p := fmt.Sprintf("reservations[%d]", i)
		switch {
		case r.Name == "":
			return fieldErr(p+".name", "must not be empty")
		case r.Count <= 0:
			return fieldErr(p+".count", "must be positive, got %d", r.Count)
		case r.Lasts <= 0:
			return fieldErr(p+".lasts", "must be a positive duration")
		case r.Work.Instances < 0 || r.Work.Instances > r.Count:
			return fieldErr(p+".work.instances", "must be between 0 and count (%d), got %d", r.Count, r.Work.Instances)
		case r.Work.Duration < 0:
			return fieldErr(p+".work.duration", "must not be negative")
		}
		if err := f.within(p+".opens", r.Opens); err != nil {
			return err
		}
	}
	for i, j := range f.Jobs {
		p := fmt.Sprintf("jobs[%d]", i)
		switch {
		case j.Name == "":
			return fieldErr(p+".name", "must not be empty")
		case j.Tenant == "":
			return fieldErr(p+".tenant", "must not be empty")
		case j.Duration <= 0:
			return fieldErr(p+".duration", "must be a positive duration")
		case j.Checkpoint < 0:
			return fieldErr(p+".checkpoint", "must not be negative")
		}
		if err := f.within(p+".at", j.At); err != nil {
			return err
		}
		if _, err := class(j.Class); err != nil {
			return fieldErr(p+".class", "%v", err)
		}
	}
	total := 0.0
	for i, a := range f.Arrivals {
		p := fmt.Sprintf("arrivals[%d]", i)
		switch {
		case a.Name == "":
			return fieldErr(p+".name", "must not be empty")
		case a.Tenant == "":
			return fieldErr(p+".tenant", "must not be empty")
		case a.Every <= 0:
			return fieldErr(p+".every", "must be a positive mean time between arrivals")
		case a.MinDuration <= 0 || a.MaxDuration < a.MinDuration:
			return fieldErr(p+".max_duration", "min_duration must be positive and max_duration at least min_duration")
		case len(a.GPUsPerInstance) == 0:
			return fieldErr(p+".gpus_per_instance", "must list at least one GPU count")
		case a.Checkpoint < 0:
			return fieldErr(p+".checkpoint", "must not be negative")
		}
		for k, n := range a.GPUsPerInstance {
			if n < 1 || n > 64 {
				return fieldErr(fmt.Sprintf("%s.gpus_per_instance[%d]", p, k), "must be between 1 and 64, got %d", n)
			}
		}
		for k, n := range a.Instances {
			if n < 1 || n > 4096 {
				return fieldErr(fmt.Sprintf("%s.instances[%d]", p, k), "must be between 1 and 4096, got %d", n)
			}
		}
		if err := f.within(p+".from", a.From); err != nil {
			return err
		}
		if err := f.within(p+".until", a.Until); err != nil {
			return err
		}
		if _, err := class(a.Class); err != nil {
			return fieldErr(p+".class", "%v", err)
		}
		until := a.Until
		if until == 0 {
			until = f.Duration
		}
		total += float64(until-a.From) / float64(a.Every)
		if total > maxJobs {
			return fieldErr(p+".every", "the scenario would generate more than %d jobs", maxJobs)
		}
	}
	for i, t := range f.Training {
		if err := t.check(f, fmt.Sprintf("training[%d]", i)); err != nil {
			return err
		}
		total += float64(f.Duration) / float64(time.Hour) * t.GPUHoursPerHour // at least an hour a job
		if total > maxJobs {
			return fieldErr(fmt.Sprintf("training[%d].gpu_hours_per_hour", i), "the scenario would generate more than %d jobs", maxJobs)
		}
	}
	if s := f.ScalingEfficiency; s < 0 || s > 1 || math.IsNaN(s) {
		return fieldErr("scaling_efficiency", "must be the share of each doubling of an elastic job's instances that turns into speed, above 0 and at most 1 (0 or unset: %g), got %g",
			engine.DefaultScalingEfficiency, s)
	}
	for m, v := range f.TrainingSpeed {
		if !(v > 0) || v > 100 {
			return fieldErr("training_speed."+m, "must be a speed above 0 and at most 100 (the reference GPU is 1), got %g", v)
		}
	}
	for i, e := range f.Endpoints {
		if err := e.check(fmt.Sprintf("endpoints[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (t TrainingGen) check(f *File, p string) error {
	switch {
	case t.Name == "":
		return fieldErr(p+".name", "must not be empty")
	case t.Tenant == "":
		return fieldErr(p+".tenant", "must not be empty")
	case !(t.GPUHoursPerHour > 0) || t.GPUHoursPerHour > 1e6:
		return fieldErr(p+".gpu_hours_per_hour", "must be the GPU-hours of work offered each hour, above 0 and at most 1e6, got %g", t.GPUHoursPerHour)
	case t.MaxDuration < 0:
		return fieldErr(p+".max_duration", "must not be negative")
	case t.MaxGPUs < 0 || t.MaxGPUs > 4096:
		return fieldErr(p+".max_gpus", "must be between 1 and 4096, got %d", t.MaxGPUs)
	case t.NodeGPUs < 0 || t.NodeGPUs > 64:
		return fieldErr(p+".node_gpus", "must be between 1 and 64, got %d", t.NodeGPUs)
	case t.Checkpoint < 0:
		return fieldErr(p+".checkpoint", "must not be negative")
	}
	if err := checkTrace(p+".trace", t.Trace, traces.Names()); err != nil {
		return err
	}
	if err := f.within(p+".from", t.From); err != nil {
		return err
	}
	if err := f.within(p+".until", t.Until); err != nil {
		return err
	}
	if t.Until != 0 && t.Until <= t.From {
		return fieldErr(p+".until", "must be after from (%s), got %s", time.Duration(t.From), time.Duration(t.Until))
	}
	if _, err := class(t.Class); err != nil {
		return fieldErr(p+".class", "%v", err)
	}
	if e := t.Elastic; e != nil {
		switch {
		case e.FromInstances < 1 || e.FromInstances > 4096:
			return fieldErr(p+".elastic.from_instances", "must be between 1 and 4096 (jobs of at least this many instances are elastic), got %d", e.FromInstances)
		case e.MaxFactor < 1 || e.MaxFactor > 16:
			return fieldErr(p+".elastic.max_factor", "must be between 1 and 16 (a job grows to at most this many times its size), got %d", e.MaxFactor)
		case e.Step < 1 || e.Step > 4096:
			return fieldErr(p+".elastic.step", "must be between 1 and 4096 instances, got %d", e.Step)
		}
	}
	return nil
}

// checkTrace checks a trace's name: a built-in one, or a path to a CSV
// file (read at Build, relative to the scenario).
func checkTrace(field, name string, builtin []string) error {
	if slices.Contains(builtin, name) || strings.HasSuffix(strings.ToLower(name), ".csv") {
		return nil
	}
	return fieldErr(field, "unknown trace %q (built-in: %s; or a path to a .csv file)", name, strings.Join(builtin, ", "))
}

func (e EndpointGen) check(p string) error {
	c := e.Load
	switch {
	case !(c.PeakRPS > 0) || c.PeakRPS > model.MaxThroughput*model.MaxReplicas:
		return fieldErr(p+".load.peak_rps", "must be a positive number of requests/s, got %g", c.PeakRPS)
	case c.TroughRPS < 0 || c.TroughRPS > c.PeakRPS || math.IsNaN(c.TroughRPS):
		return fieldErr(p+".load.trough_rps", "must be between 0 and peak_rps, got %g", c.TroughRPS)
	case c.PeakHour < 0 || c.PeakHour >= 24 || math.IsNaN(c.PeakHour):
		return fieldErr(p+".load.peak_hour", "must be an hour of the day in [0, 24), got %g", c.PeakHour)
	case c.Weekend < 0 || c.Weekend > 10 || math.IsNaN(c.Weekend):
		return fieldErr(p+".load.weekend", "must be a factor between 0 and 10, got %g", c.Weekend)
	case c.Noise < 0 || c.Noise > 1 || math.IsNaN(c.Noise):
		return fieldErr(p+".load.noise", "must be between 0 and 1, got %g", c.Noise)
	case e.Startup < 0:
		return fieldErr(p+".startup", "must not be negative")
	case !(e.SLO.P95Ms > 0) || e.SLO.P95Ms > float64(model.MaxSLO/time.Millisecond):
		return fieldErr(p+".slo.p95_ms", "must be a number of milliseconds above 0 and at most %d, got %g", model.MaxSLO/time.Millisecond, e.SLO.P95Ms)
	case e.SLO.Metric != MetricTTFT && e.SLO.Metric != MetricRequest:
		return fieldErr(p+".slo.metric", "must be ttft (time to first token) or request (the whole request), got %q", e.SLO.Metric)
	}
	if err := checkTrace(p+".load.trace", c.Trace, []string{"azure-code", "azure-conv"}); err != nil {
		return err
	}
	if field, err := e.Serving.Check(); err != nil {
		return fieldErr(p+".serving."+field, "%v", err)
	}
	if _, err := class(e.Class); err != nil {
		return fieldErr(p+".class", "%v", err)
	}
	// The rest is the endpoint's own validation.
	es := endpointSpec(e)
	if err := es.Validate(); err != nil {
		return model.Prefix(p, err)
	}
	// Every GPU model the endpoint may use must hold the served model.
	for _, m := range es.Resources.GPUModels {
		if _, err := serving.NewProfile(*e.Serving, m, es.Resources.GPUsPerInstance); err != nil {
			return fieldErr(p+".serving", "a replica on %d %s: %v", es.Resources.GPUsPerInstance, m, err)
		}
	}
	return nil
}

// class reads a priority (a class with an optional value, standard:100);
// empty is standard.
func class(s string) (model.Priority, error) {
	return model.ParsePriority(s)
}
