package scenario

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/policy"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sim/engine"
	"github.com/allot-dev/allot/internal/strategy"
)

// Options choose what one run compares.
type Options struct {
	// Strategy overrides the tenants file's; empty keeps it.
	Strategy model.Strategy
	// Policies, when not nil, are the operator's policies in force.
	Policies *model.PolicySet
	// Factor scales every node count of the fleet; 0 means 1.
	Factor float64
	// Checkpoints is where preempted work's checkpoints lie
	// (engine.Config.Checkpoints); the zero value is on shared storage.
	Checkpoints engine.Checkpoints
	// CheckIncremental is engine.Config.CheckIncremental: every cycle is
	// also planned from scratch, and a different Plan fails the run.
	CheckIncremental bool
	// Seed draws the work and the requests; 0 means the file's.
	Seed int64
	// Load scales every arrival and training stream and every endpoint's
	// request rate; 0 means 1.
	Load float64
	// Elastic makes the training streams' jobs elastic as their elastic
	// blocks say (DefaultElastic for a stream without one; Arrival.Elastic):
	// the core may grow them into capacity nothing else uses and shrink
	// them before it evicts whole jobs. The work drawn is the same as
	// without it.
	Elastic bool
	// NoOverflow runs hybrid without its overflow layer (the tenancy as
	// written: guarantees lent and reclaimed, classes as submitted), for
	// the ablation of what that layer does.
	NoOverflow bool
}

// defaults fills the zero fields of o from f.
func (o Options) defaults(f *File) Options {
	if o.Factor == 0 {
		o.Factor = 1
	}
	if o.Seed == 0 {
		o.Seed = f.Seed
	}
	if o.Load == 0 {
		o.Load = 1
	}
	return o
}

// run is the state of one run.
type run struct {
	f         *File
	w         *World
	opt       Options
	eng       *engine.Engine
	rec       *recorder
	endpoints []*endpointSim
	nodeModel map[string]string // node → GPU model
	nodePool  map[string][2]string
	clusters  map[string][]clusterNodes // region → its clusters
	partOf    map[string]string         // tenant → partition
	// For the count of what partitions hold (heldBooks), by index: node →
	// its pool's, tenant → its partition's in Promised (absent for none).
	poolIndex map[string]int
	pools     map[[2]string]int
	partIndex map[string]int
	// checkGuarantees' scratch, reused every minute: the holding jobs, and
	// by partition whether it is short of a guarantee, owed, violated.
	holding               []*model.Job
	short, owed, violated []bool

	// operator policies, driven as the server's applyPolicies does
	metrics    policy.Metrics
	scopes     *policy.Scopes // of the fleet, which does not change, for the utilisation recorded every minute
	active     []policy.Firing
	adjuster   policy.Adjuster // its buffers kept from cycle to cycle
	firings    int
	overridden int // cycles in which a policy changed some work's class

	jobs []*model.Job // scratch: the live jobs of this minute's tick

	violations map[string]int // partition → minutes
	// clear is, by partition (index in Promised), the last minute
	// checkGuarantees found none of its work owed the guarantee (zero
	// before the first): a job waits for what it is owed from then, or
	// from its queueing if later.
	clear          []time.Time
	firstViolation map[string]string // partition → what waited first
}

// Run simulates the scenario once. It is deterministic: the same file and
// Options give the same Result (but WallSeconds, which the caller sets).
func Run(ctx context.Context, f *File, opt Options) (*Result, error) {
	opt = opt.defaults(f)
	if !(opt.Load > 0) || opt.Load > MaxLoad {
		return nil, fmt.Errorf("scenario %s: load must be in (0, %g], got %g", f.Name, float64(MaxLoad), opt.Load)
	}
	w, err := f.Build(opt.Factor, opt.Strategy)
	if err != nil {
		return nil, err
	}
	if opt.NoOverflow {
		if w.Tenancy.Strategy != model.StrategyHybrid {
			return nil, fmt.Errorf("scenario %s: without the overflow layer is a variant of hybrid, not of %s", f.Name, w.Tenancy.Strategy)
		}
		t := *w.Tenancy
		t.Strategy = "" // the tenancy as written: hybrid's base and elastic layers
		w.Tenancy = &t
	}
	work, err := f.Workload(opt.Seed, opt.Load)
	if err != nil {
		return nil, err
	}
	r := newRun(f, w, opt)

	// The workload.
	for i, a := range work {
		j := &model.Job{ID: fmt.Sprintf("job-%06d", i), Spec: a.Job}
		if opt.Elastic {
			j.Spec.Elastic = a.Elastic
		}
		spotLike := a.Job.Priority.Class == model.ClassSpot ||
			(w.Tenancy.Strategy == model.StrategyHybrid && a.Job.Priority.Class == model.ClassStandard && strategy.NonUrgent(w.Tenancy, &a.Job))
		training := workload(w.Promised, &a.Job) == "training"
		r.eng.At(w.Start.Add(a.At), func(now time.Time) {
			if err := r.eng.Submit(j, a.Work); err == nil {
				r.rec.submit(j, a.Work, spotLike, training, a.Reservation, now)
			}
		})
	}
	// The endpoints, with the replicas the autoscaler asks for at the first
	// minute's rate. The run starts mid-stream: replicas placed at the
	// start serve at once (their model loaded before the window opens);
	// later ones take their startup.
	for i, e := range f.Endpoints {
		ep, err := f.newEndpointSim(e, opt.Seed, i, opt.Load, w.Start)
		if err != nil {
			return nil, err
		}
		ep.warm = w.Start
		r.endpoints = append(r.endpoints, ep)
		if err := ep.add(r.eng, ep.initial(w.Start.Add(time.Minute))); err != nil {
			return nil, err
		}
	}
	// A minute's tick, from the first minute.
	var tickErr error
	var tick func(now time.Time)
	tick = func(now time.Time) {
		if err := r.tick(now); err != nil {
			tickErr = err
			return
		}
		if next := now.Add(time.Minute); !next.After(w.End) && ctx.Err() == nil {
			r.eng.At(next, tick)
		}
	}
	r.eng.At(w.Start.Add(time.Minute), tick)
	if err := r.eng.Run(w.End); err != nil {
		return nil, err
	}
	if tickErr != nil {
		return nil, tickErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// workload is the workload label of s as model.WorkLabels merges it: the
// job's own, else its tenant's, else its partition's.
func workload(t *model.Tenancy, s *model.JobSpec) string {
	tn, ok := t.Tenant(s.Tenant)
	if !ok {
		return s.Labels["workload"]
	}
	var part *model.Partition
	for i := range t.Partitions {
		if t.Partitions[i].Name == tn.Partition {
			part = &t.Partitions[i]
		}
	}
	return model.WorkLabels(part, &tn, s)["workload"]
}

// newRun is a run of w with nothing submitted yet.
func newRun(f *File, w *World, opt Options) *run {
	r := &run{f: f, w: w, opt: opt, rec: newRecorder(w), nodeModel: map[string]string{}, nodePool: map[string][2]string{},
		poolIndex: map[string]int{}, pools: map[[2]string]int{}, partIndex: map[string]int{},
		partOf: map[string]string{}, violations: map[string]int{}, firstViolation: map[string]string{}}
	r.clusters = clustersOf(w.Fleet)
	for _, n := range w.Fleet.Nodes {
		m := w.Fleet.Catalog[n.SKU].GPUModel
		r.nodeModel[n.Name] = m
		r.nodePool[n.Name] = [2]string{n.Region, m}
		k, ok := r.pools[r.nodePool[n.Name]]
		if !ok {
			k = len(r.pools)
			r.pools[r.nodePool[n.Name]] = k
		}
		r.poolIndex[n.Name] = k
	}
	for _, t := range w.Promised.Tenants {
		r.partOf[t.Name] = t.Partition
		for i, p := range w.Promised.Partitions {
			if p.Name == t.Partition {
				r.partIndex[t.Name] = i
			}
		}
	}
	r.rec.guarantee = heldBooks{partIndex: r.partIndex, poolIndex: r.poolIndex, pools: len(r.pools),
		held: make([]int64, len(w.Promised.Partitions)*len(r.pools))}
	r.scopes = policy.NewScopes(w.Fleet)
	r.clear = make([]time.Time, len(w.Promised.Partitions))
	r.eng = engine.New(engine.Config{Fleet: w.Fleet, Tenancy: w.Tenancy, Start: w.Start, Recorder: r.rec,
		Core:  sched.Config{MinRunTime: time.Duration(f.MinRunTime), HoldAfter: time.Duration(f.HoldAfter), PriorityGap: f.PriorityGap},
		Input: r.input, Checkpoints: opt.Checkpoints, CheckIncremental: opt.CheckIncremental, Speed: r.speed,
		ScalingEfficiency: f.ScalingEfficiency, Period: time.Duration(f.Cycle)})
	r.rec.eng = r.eng
	return r
}

// MaxLoad bounds Options.Load.
const MaxLoad = 100

// speed is the work per second of job j's attempt: its slowest GPU's
// training speed (File.TrainingSpeed; 1 for a model it leaves out), as
// data-parallel ranks wait for the slowest; the engine multiplies it by
// the scaling of an elastic job's size (File.ScalingEfficiency).
func (r *run) speed(j *model.Job) float64 {
	s := 0.0
	for _, a := range j.Status.Allocations {
		v, ok := r.f.TrainingSpeed[r.nodeModel[a.Node]]
		if !ok {
			v = 1
		}
		if s == 0 || v < s {
			s = v
		}
	}
	return s
}

// input is what the core schedules: the strategy's snapshot, then the
// operator policies' adjustment of it, as the server's cycle does.
func (r *run) input(snap *sched.Snapshot, now time.Time) *sched.Snapshot {
	s := strategy.Apply(snap, now)
	if r.opt.Policies != nil && len(r.active) > 0 {
		adj := r.adjuster.Adjust(s, r.opt.Policies, r.active, now)
		if len(adj.Overrides) > 0 {
			r.overridden++
		}
		s = adj.Snapshot
	}
	if r.opt.Elastic {
		if h := r.headroom(now); len(h) > 0 {
			if s == snap {
				c := *snap
				s = &c
			}
			s.Headroom = h
		}
	}
	return s
}

// headroom is what the endpoints' daily curves will ask for within the
// core's resize interval beyond the replicas they have: for each endpoint,
// the replicas its throughput profile needs at the highest rate of the
// curve (noise aside) over the interval, less those it has, in the region
// and GPU model where most of its replicas run. Elastic jobs do not grow
// into it (sched.Snapshot.Headroom), so that a gang does not take capacity
// the next morning's replicas will evict it from.
func (r *run) headroom(now time.Time) []sched.Headroom {
	interval := model.DefaultResizeInterval
	var out []sched.Headroom
	for _, ep := range r.endpoints {
		pools := map[[2]string]int{}
		var pool [2]string
		for _, j := range ep.replicas {
			if len(j.Status.Allocations) == 0 {
				continue
			}
			p := r.nodePool[j.Status.Allocations[0].Node]
			if pools[p]++; pools[p] > pools[pool] || (pools[p] == pools[pool] && p[0]+p[1] < pool[0]+pool[1]) {
				pool = p
			}
		}
		per := ep.spec.Throughput[pool[1]]
		if len(pools) == 0 || !(per > 0) {
			continue
		}
		peak := 0.0
		for t := now; !t.After(now.Add(interval)); t = t.Add(time.Minute) {
			peak = max(peak, ep.rate(t, false))
		}
		if extra := int(math.Ceil(peak/per)) - len(ep.replicas); extra > 0 {
			out = append(out, sched.Headroom{Region: pool[0], GPUModel: pool[1], GPUs: extra * max(ep.spec.Resources.GPUsPerInstance, 1)})
		}
	}
	return out
}

// tick is one minute: the endpoints measure and scale, the operator
// policies record and evaluate, and the guarantees are checked once the
// minute's cycle ran.
func (r *run) tick(now time.Time) error {
	p95 := make([]float64, len(r.endpoints))
	for i, ep := range r.endpoints {
		v, err := ep.tick(r.eng, r.nodeModel, now)
		if err != nil {
			return err
		}
		p95[i] = v
	}
	for _, ep := range r.endpoints {
		for _, j := range ep.replicas {
			if _, seen := r.rec.queuedAt[j.ID]; !seen && j.Status.State == model.StateQueued && j.Status.SubmittedAt.Equal(now) {
				r.rec.replica(j, now)
			}
		}
	}
	r.jobs = r.eng.AppendJobs(r.jobs[:0]) // with the replicas the endpoints just asked for
	if ps := r.opt.Policies; ps != nil && len(ps.Policies) > 0 {
		snap := strategy.Apply(&sched.Snapshot{Fleet: r.w.Fleet, Tenancy: r.w.Tenancy, Jobs: r.jobs}, now)
		r.scopes.Record(&r.metrics, snap.Jobs, now)
		for i, ep := range r.endpoints {
			r.metrics.Add("p95_latency", ep.spec.Name, now, p95[i])
		}
		r.metrics.Trim(now.Add(-policy.Window(ps)))
		next := policy.Evaluate(ps, policy.State{World: snap, Active: r.active}, &r.metrics, now)
		if changed(r.active, next) {
			r.eng.Kick()
		}
		for _, fi := range next {
			if !applies(r.active, fi.Policy) {
				r.firings++
			}
		}
		r.active = next
	}
	// The guarantees are checked on what the minute's cycle, which runs
	// after this tick's events, leaves: work that ended since the last
	// cycle has not been replaced before it, whatever the strategy.
	r.eng.At(now.Add(time.Nanosecond), func(time.Time) { r.checkGuarantees(now, r.jobs) })
	return nil
}

// changed reports whether the set of applying policies changed.
func changed(a, b []policy.Firing) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Policy != b[i].Policy {
			return true
		}
	}
	return false
}

func applies(active []policy.Firing, name string) bool {
	for _, f := range active {
		if f.Policy == name {
			return true
		}
	}
	return false
}

// clusterNodes is a cluster's fabric and GPU nodes, for the guarantee
// check.
type clusterNodes struct {
	name   string
	fabric model.Fabric
	nodes  []gpuNode
}

type gpuNode struct {
	name, model, sku string
	gpus             int
}

// clustersOf lists each region's clusters with their GPU nodes.
func clustersOf(f *model.Fleet) map[string][]clusterNodes {
	out := map[string][]clusterNodes{}
	index := map[string]*clusterNodes{}
	for _, reg := range f.Regions {
		for _, c := range reg.Clusters {
			out[reg.Name] = append(out[reg.Name], clusterNodes{name: c.Name, fabric: c.Fabric})
		}
		for i := range out[reg.Name] {
			index[out[reg.Name][i].name] = &out[reg.Name][i]
		}
	}
	for _, n := range f.Nodes {
		s := f.Catalog[n.SKU]
		if c := index[n.Cluster]; c != nil && s.GPUs > 0 {
			c.nodes = append(c.nodes, gpuNode{name: n.Name, model: s.GPUModel, sku: s.Name, gpus: s.GPUs})
		}
	}
	return out
}
