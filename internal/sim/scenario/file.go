package scenario

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

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
	HoldAfter    spec.Duration    `yaml:"hold_after"`
	Fleet        FleetGen         `yaml:"fleet"`
	Reservations []ReservationGen `yaml:"reservations"`
	Jobs         []JobGen         `yaml:"jobs"`
	Arrivals     []ArrivalGen     `yaml:"arrivals"`
	Endpoints    []EndpointGen    `yaml:"endpoints"`

	dir string // of the file, for Tenants
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
	Name            string          `yaml:"name"`
	Tenant          string          `yaml:"tenant"`
	Model           string          `yaml:"model"`
	GPUsPerInstance int             `yaml:"gpus_per_instance"`
	GPUModels       []string        `yaml:"gpu_models"`
	Regions         []string        `yaml:"regions"`
	Residency       string          `yaml:"residency"`
	Class           string          `yaml:"class"`
	MinReplicas     int             `yaml:"min_replicas"`
	MaxReplicas     int             `yaml:"max_replicas"`
	SLOMs           float64         `yaml:"slo_ms"`
	Throughput      spec.Throughput `yaml:"throughput"`
	// Startup is from a replica's start to its serving (model load;
	// default 2m).
	Startup spec.Duration `yaml:"startup"`
	Curve   Curve         `yaml:"curve"`
}

// Curve is a daily request curve: requests/s between Trough and Peak, a
// cosine over the day with its top at PeakHour (UTC), times Weekend on
// Saturdays and Sundays (default 1), with a multiplicative noise of about
// ±Noise (0.05 is 5 %) drawn each minute from the seed.
type Curve struct {
	PeakRPS   float64 `yaml:"peak_rps"`
	TroughRPS float64 `yaml:"trough_rps"`
	PeakHour  float64 `yaml:"peak_hour"`
	Weekend   float64 `yaml:"weekend"`
	Noise     float64 `yaml:"noise"`
}

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
	if err := spec.DecodeStruct(name, data, f, "a scenario (name: …, fleet: …)", f.check); err != nil {
		return nil, err
	}
	f.defaults()
	return f, nil
}

// Defaults of a scenario.
const (
	DefaultOnTime  = 15 * time.Minute
	DefaultStartup = 2 * time.Minute
	DefaultLeaf    = 16
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
		if f.Endpoints[i].Startup == 0 {
			f.Endpoints[i].Startup = spec.Duration(DefaultStartup)
		}
		if f.Endpoints[i].Curve.Weekend == 0 {
			f.Endpoints[i].Curve.Weekend = 1
		}
		if f.Endpoints[i].GPUsPerInstance == 0 {
			f.Endpoints[i].GPUsPerInstance = 1
		}
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
	for i, e := range f.Endpoints {
		p := fmt.Sprintf("endpoints[%d]", i)
		c := e.Curve
		switch {
		case c.PeakRPS <= 0 || c.PeakRPS > model.MaxThroughput*model.MaxReplicas || math.IsNaN(c.PeakRPS):
			return fieldErr(p+".curve.peak_rps", "must be a positive number of requests/s, got %g", c.PeakRPS)
		case c.TroughRPS < 0 || c.TroughRPS > c.PeakRPS || math.IsNaN(c.TroughRPS):
			return fieldErr(p+".curve.trough_rps", "must be between 0 and peak_rps, got %g", c.TroughRPS)
		case c.PeakHour < 0 || c.PeakHour >= 24 || math.IsNaN(c.PeakHour):
			return fieldErr(p+".curve.peak_hour", "must be an hour of the day in [0, 24), got %g", c.PeakHour)
		case c.Weekend < 0 || c.Weekend > 10 || math.IsNaN(c.Weekend):
			return fieldErr(p+".curve.weekend", "must be a factor between 0 and 10, got %g", c.Weekend)
		case c.Noise < 0 || c.Noise > 1 || math.IsNaN(c.Noise):
			return fieldErr(p+".curve.noise", "must be between 0 and 1, got %g", c.Noise)
		case e.Startup < 0:
			return fieldErr(p+".startup", "must not be negative")
		case !(e.SLOMs > 0) || e.SLOMs > float64(model.MaxSLO/time.Millisecond):
			return fieldErr(p+".slo_ms", "must be a number of milliseconds above 0 and at most %d, got %g", model.MaxSLO/time.Millisecond, e.SLOMs)
		}
		if _, err := class(e.Class); err != nil {
			return fieldErr(p+".class", "%v", err)
		}
		// The rest is the endpoint's own validation.
		es := endpointSpec(e)
		if err := es.Validate(); err != nil {
			return model.Prefix(p, err)
		}
	}
	return nil
}

// class reads a priority class name; empty is standard.
func class(s string) (model.Class, error) {
	p, err := model.ParsePriority(s)
	return p.Class, err
}
