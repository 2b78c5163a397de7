package forecast

import (
	"math"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Weights turn a region's price and distance into hours of predicted wait,
// so that one score ranks the regions of a job:
//
//	score = wait in hours + Price × USD per GPU-hour + Distance × distance
//
// Lower is better. With the defaults a region 1 hour later is worth 4 USD
// per GPU-hour less, and each step of distance from the job's data costs
// half an hour of waiting.
type Weights struct {
	Price    float64 // hours per USD per GPU-hour
	Distance float64 // hours per step of distance
}

// DefaultWeights are the weights a server uses unless told otherwise.
var DefaultWeights = Weights{Price: 0.25, Distance: 0.5}

// Distance is how far region to is from the job's data in region from:
// 0 in the same region (or when the job names no data region), 1 in another
// region of the same residency zone, 2 in another zone (or an unknown
// region).
func Distance(f *model.Fleet, from, to string) int {
	if from == "" || from == to {
		return 0
	}
	a, okA := f.Region(from)
	b, okB := f.Region(to)
	if okA && okB && a.Residency == b.Residency {
		return 1
	}
	return 2
}

// Candidates returns the regions spec may run in, in the fleet's order: its
// allowed regions (every region when it names none) whose residency zone is
// the one it requires (any, when it requires none) and that have a SKU that
// can hold one of its instances (Price). A region without one is never a
// choice, however cheap or idle: no estimate could ever be made there.
func Candidates(f *model.Fleet, spec *model.JobSpec) []string {
	var out []string
	for _, rg := range f.Regions {
		if !spec.Placement.AllowsRegion(rg.Name) || (spec.Placement.Residency != "" && spec.Placement.Residency != rg.Residency) {
			continue
		}
		if _, capable := Price(f, spec, rg.Name); capable {
			out = append(out, rg.Name)
		}
	}
	return out
}

// Price is the cheapest price per GPU-hour, in USD, of a node SKU in region
// that can hold one instance of spec (its GPU model, enough GPUs), among
// the nodes its placement.nodes and exclude_nodes leave it: the spot
// price for spot work, the on-demand price otherwise. It is 0 for work
// that asks for no GPU, and false when no such SKU is in the region.
func Price(f *model.Fleet, spec *model.JobSpec, region string) (float64, bool) {
	r := spec.Resources
	best, found := 0.0, false
	for _, n := range f.Nodes {
		sku, ok := f.Catalog[n.SKU]
		if n.Region != region || !ok || !spec.Placement.AllowsNode(n.Name) {
			continue
		}
		if r.GPUsPerInstance == 0 {
			return 0, true
		}
		if sku.GPUs < r.GPUsPerInstance || !r.AcceptsModel(sku.GPUModel) {
			continue
		}
		per := sku.PricePerHour
		if spec.Priority.Class == model.ClassSpot {
			per = sku.SpotPrice
		}
		per /= float64(sku.GPUs)
		if !found || per < best {
			best, found = per, true
		}
	}
	return best, found
}

// RegionOption is one region a job could run in, as Rank saw it.
type RegionOption struct {
	Region string
	// Estimate is the job's estimated start when pinned to the region.
	Estimate        Estimate
	PricePerGPUHour float64
	Distance        int
	// Score ranks the options (lower first): the estimated wait in hours
	// (the horizon when there is no estimate) plus the weighted price and
	// distance.
	Score  float64
	Chosen bool
}

// Rank scores each region of estimates for spec and returns them best
// first, the best marked Chosen. Regions outside Candidates(spec) are
// dropped: residency and allowed regions are hard limits. Options with an
// estimate come before those without; ties go to the nearer, then the
// cheaper, then the first by name.
func Rank(f *model.Fleet, spec *model.JobSpec, estimates map[string]Estimate, now time.Time, horizon time.Duration, w Weights) []RegionOption {
	var out []RegionOption
	for _, region := range Candidates(f, spec) {
		e, ok := estimates[region]
		if !ok {
			continue
		}
		price, _ := Price(f, spec, region)
		wait := horizon
		if e.Known() {
			wait = max(e.Start.Sub(now), 0)
		}
		d := Distance(f, spec.Placement.DataRegion, region)
		score := wait.Hours() + w.Price*price + w.Distance*float64(d)
		out = append(out, RegionOption{Region: region, Estimate: e, PricePerGPUHour: price, Distance: d,
			Score: math.Round(score*1000) / 1000})
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Estimate.Known() != y.Estimate.Known() {
			return x.Estimate.Known()
		}
		if x.Score != y.Score {
			return x.Score < y.Score
		}
		if x.Distance != y.Distance {
			return x.Distance < y.Distance
		}
		if x.PricePerGPUHour != y.PricePerGPUHour {
			return x.PricePerGPUHour < y.PricePerGPUHour
		}
		return x.Region < y.Region
	})
	if len(out) > 0 {
		out[0].Chosen = true
	}
	return out
}

// PerRegion estimates the start of queued job j pinned to each of its
// candidate regions in turn (a what-if copy of j that allows only that
// region) in place of the job of j's ID in snap (added when snap has none),
// the rest of snap as it is: one forward run per region, each of at most
// half the cycles of f.Events(snap) (at least 8). j's own spec decides the
// candidates, so a job the driver already pinned is weighed across all the
// regions it allows.
func (f *Forecaster) PerRegion(snap *sched.Snapshot, now time.Time, j *model.Job) map[string]Estimate {
	if j.Status.State != model.StateQueued {
		return nil
	}
	half := *f
	half.opts.MaxEvents = max(f.Events(snap)/2, 8)
	at := -1
	for i, x := range snap.Jobs {
		if x.ID == j.ID {
			at = i
		}
	}
	out := map[string]Estimate{}
	for _, region := range Candidates(snap.Fleet, &j.Spec) {
		jobs := append(make([]*model.Job, 0, len(snap.Jobs)+1), snap.Jobs...)
		if at < 0 {
			jobs = append(jobs, Pin(j, region))
		} else {
			jobs[at] = Pin(j, region)
		}
		what := &sched.Snapshot{Fleet: snap.Fleet, Tenancy: snap.Tenancy, Jobs: jobs}
		out[region] = half.Starts(what, now, j.ID)[j.ID]
	}
	return out
}

// Pin returns a copy of j that allows only region, keeping every other
// limit (residency included). It returns j itself when region is empty or
// not among j's allowed regions, so a stale or wrong choice can never take
// a job outside its limits.
func Pin(j *model.Job, region string) *model.Job {
	if region == "" || !j.Spec.Placement.AllowsRegion(region) {
		return j
	}
	if len(j.Spec.Placement.Regions) == 1 && j.Spec.Placement.Regions[0] == region {
		return j
	}
	c := *j
	c.Spec.Placement.Regions = []string{region}
	return &c
}

// Move decides whether a job waiting in region current should go to the
// best of options (as Rank returned them): only when the best is another
// region whose estimated start is sooner than current's (or current has
// none). It returns the region to move to, or "".
func Move(options []RegionOption, current string) string {
	if len(options) == 0 || options[0].Region == current || !options[0].Estimate.Known() {
		return ""
	}
	best := options[0]
	for _, o := range options {
		if o.Region == current && o.Estimate.Known() && !best.Estimate.Start.Before(o.Estimate.Start) {
			return ""
		}
	}
	return best.Region
}
