package scenario

import (
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// recorder measures a run as the engine's Recorder; minute-by-minute
// figures (SLO, guarantees) are taken by the run's tick.
type recorder struct {
	w                  *World
	eng                *engine.Engine
	spotLike           map[string]bool      // jobs that run as spot (submitted so, or the strategy's overflow)
	tier               map[string]string    // tenant → its partition's tier
	queuedAt           map[string]time.Time // when a job last became queued
	firstStart         map[string]time.Time
	submitted          map[string]*model.Job // jobs that are not replicas, by ID
	order              []string              // their IDs in submit order
	reserve            map[string]string     // job → the reservation whose opening it is
	training           map[string]bool       // jobs whose workload is training
	work               map[string]float64    // training jobs' work, GPU-seconds at the reference speed
	ended              map[string]time.Time  // when training jobs succeeded
	goodput            float64               // training GPU-seconds of work done and kept, by jobs that ended
	endpointGPUSeconds map[string]float64    // replicas' GPU-seconds held, per endpoint

	gpuSeconds  map[string]float64 // per tenant
	busySeconds float64            // GPU-seconds held
	spotSeconds float64
	lostSeconds float64
	spotLost    float64
	redone      float64 // GPU-seconds of checkpointed work started over (engine.RestartRecorder)
	home, away  int     // restarts of jobs with saved work on the node of their checkpoint, and elsewhere
	preemptions int
	// Resizes of elastic jobs (engine.ResizeRecorder), and the work since
	// the last checkpoint they lost.
	grows, shrinks int
	resizeLost     float64
	hourly         []float64  // GPU-seconds held per hour
	cost           *costMeter // USD per tenant (cost.go)

	// What is held now (hold, release).
	holds        map[string]*holding
	busy         float64
	tenantHeld   map[string]float64
	endpointHeld map[string]float64
	spotHeld     float64
	regionHeld   map[string]float64
	region       map[string]string // node → region
	// guarantee keeps, for checkGuarantees, the milli-GPU each partition
	// holds in each pool, as jobs start and stop.
	guarantee heldBooks
}

// heldBooks is what partitions hold by pool: held[p*pools+k] is the
// milli-GPU the p-th partition of Promised holds in pool k, counted as
// jobs start and stop (not summed over the holding jobs every minute).
type heldBooks struct {
	partIndex map[string]int // tenant → its partition's index; absent for none
	poolIndex map[string]int // node → its pool's index
	pools     int
	held      []int64
}

// count adds j's allocations, for a partition's tenant, to the books and
// returns what it added, for uncount when the attempt ends (by then the
// job's allocations are gone or others).
func (b *heldBooks) count(j *model.Job) []heldShare {
	p, ok := b.partIndex[j.Spec.Tenant]
	if !ok {
		return nil
	}
	out := make([]heldShare, 0, len(j.Status.Allocations))
	for _, a := range j.Status.Allocations {
		sh := heldShare{at: p*b.pools + b.poolIndex[a.Node], milli: int64(len(a.GPUs)) * a.GPUMilli}
		b.held[sh.at] += sh.milli
		out = append(out, sh)
	}
	return out
}

// uncount takes back what count added.
func (b *heldBooks) uncount(shares []heldShare) {
	for _, sh := range shares {
		b.held[sh.at] -= sh.milli
	}
}

// heldShare is milli-GPU counted at held[at].
type heldShare struct {
	at    int
	milli int64
}

func newRecorder(w *World) *recorder {
	r := &recorder{w: w, spotLike: map[string]bool{}, tier: map[string]string{}, queuedAt: map[string]time.Time{},
		firstStart: map[string]time.Time{}, submitted: map[string]*model.Job{}, reserve: map[string]string{},
		gpuSeconds: map[string]float64{}, tenantHeld: map[string]float64{}, training: map[string]bool{},
		holds: map[string]*holding{}, endpointHeld: map[string]float64{}, regionHeld: map[string]float64{}, region: map[string]string{},
		work: map[string]float64{}, ended: map[string]time.Time{}, endpointGPUSeconds: map[string]float64{}}
	tiers := map[string]string{}
	for _, p := range w.Promised.Partitions {
		tiers[p.Name] = p.Tier
		if p.Tier == "" {
			tiers[p.Name] = p.Name
		}
	}
	for _, n := range w.Fleet.Nodes {
		r.region[n.Name] = n.Region
	}
	for _, t := range w.Promised.Tenants {
		r.tier[t.Name] = "none"
		if t.Partition != "" {
			r.tier[t.Name] = tiers[t.Partition]
		}
	}
	return r
}

// held is the GPUs j holds, in GPUs.
func held(j *model.Job) float64 {
	var milli int64
	for _, a := range j.Status.Allocations {
		milli += int64(len(a.GPUs)) * a.GPUMilli
	}
	return float64(milli) / model.MilliPerGPU
}

// holding is what one job holds: the sums Advance accrues are kept up to
// date as jobs start and stop, so that an interval costs the same however
// many jobs run.
type holding struct {
	shares   []heldShare // in the guarantee's books (heldBooks.count)
	gpus     float64
	tenant   string
	endpoint string
	spot     bool
	usdHour  float64            // its attempt's rate (cost.go)
	regions  map[string]float64 // GPUs it holds per region
}

func (r *recorder) Advance(from, to time.Time) {
	dt := to.Sub(from).Seconds()
	if dt <= 0 {
		return
	}
	busy := r.busy
	for t, g := range r.tenantHeld {
		r.gpuSeconds[t] += g * dt
	}
	for ep, g := range r.endpointHeld {
		r.endpointGPUSeconds[ep] += g * dt
	}
	r.spotSeconds += r.spotHeld * dt
	r.meter().advance(to.Sub(from))
	r.busySeconds += busy * dt
	if busy <= 0 {
		return
	}
	// Split the interval over hour buckets.
	start := r.w.Start
	for t := from; t.Before(to); {
		h := int(t.Sub(start) / time.Hour)
		end := start.Add(time.Duration(h+1) * time.Hour)
		if to.Before(end) {
			end = to
		}
		for len(r.hourly) <= h {
			r.hourly = append(r.hourly, 0)
		}
		r.hourly[h] += busy * end.Sub(t).Seconds()
		t = end
	}
}

// hold adds j's new attempt to the sums.
func (r *recorder) hold(j *model.Job) {
	r.release(j.ID)
	h := &holding{gpus: held(j), tenant: j.Spec.Tenant, endpoint: j.Spec.Labels["endpoint"], spot: r.spotLike[j.ID],
		regions: map[string]float64{}}
	h.shares = r.guarantee.count(j)
	for _, a := range j.Status.Allocations {
		h.regions[r.region[a.Node]] += float64(int64(len(a.GPUs))*a.GPUMilli) / model.MilliPerGPU
	}
	h.usdHour = r.meter().started(j, h.spot, r.regionHeld)
	r.holds[j.ID] = h
	r.busy += h.gpus
	r.tenantHeld[h.tenant] += h.gpus
	if h.endpoint != "" {
		r.endpointHeld[h.endpoint] += h.gpus
	}
	if h.spot {
		r.spotHeld += h.gpus
	}
	for reg, g := range h.regions {
		r.regionHeld[reg] += g
	}
	r.meter().rate[h.tenant] += h.usdHour
}

// release takes job id's attempt, if any, out of the sums.
func (r *recorder) release(id string) {
	h, ok := r.holds[id]
	if !ok {
		return
	}
	delete(r.holds, id)
	r.guarantee.uncount(h.shares)
	r.busy -= h.gpus
	r.tenantHeld[h.tenant] -= h.gpus
	if h.endpoint != "" {
		r.endpointHeld[h.endpoint] -= h.gpus
	}
	if h.spot {
		r.spotHeld -= h.gpus
	}
	for reg, g := range h.regions {
		r.regionHeld[reg] -= g
	}
	r.meter().rate[h.tenant] -= h.usdHour
}

func (r *recorder) Started(j *model.Job, now time.Time) {
	r.hold(j)
	if _, ok := r.firstStart[j.ID]; !ok {
		r.firstStart[j.ID] = now
	}
	delete(r.queuedAt, j.ID)
}

func (r *recorder) Preempted(j *model.Job, p sched.Preemption, now time.Time) {
	r.release(j.ID)
	r.preemptions++
	r.lostSeconds += p.LostGPUSeconds
	if r.spotLike[j.ID] {
		r.spotLost += p.LostGPUSeconds
	}
	r.queuedAt[j.ID] = now
}

func (r *recorder) Ended(j *model.Job, now time.Time) {
	r.release(j.ID)
	delete(r.queuedAt, j.ID)
	if r.training[j.ID] && j.Status.State == model.StateSucceeded {
		r.ended[j.ID] = now
		r.goodput += r.work[j.ID]
	}
}

// Resized: elastic job j's attempt ended and the next started at its new
// size; it holds its new allocations from now.
func (r *recorder) Resized(j *model.Job, rs sched.Resize, _ time.Time) {
	r.hold(j)
	if rs.Grows() {
		r.grows++
	} else {
		r.shrinks++
	}
	r.resizeLost += rs.LostGPUSeconds
}

// Restarted: j, with saved work, restarted on the node of its checkpoint
// (home) or away from it, redoing gpuSeconds.
func (r *recorder) Restarted(_ *model.Job, home bool, gpuSeconds float64, _ time.Time) {
	if home {
		r.home++
	} else {
		r.away++
	}
	r.redone += gpuSeconds
}

// submit notes a job the workload submits (not a replica), with its work
// at the reference speed.
func (r *recorder) submit(j *model.Job, work time.Duration, spotLike, training bool, reservation string, now time.Time) {
	r.submitted[j.ID] = j
	if training {
		r.training[j.ID] = true
		r.work[j.ID] = work.Seconds() * float64(j.Spec.Resources.TotalMilli()) / model.MilliPerGPU
	}
	r.order = append(r.order, j.ID)
	r.queuedAt[j.ID] = now
	if spotLike {
		r.spotLike[j.ID] = true
	}
	if reservation != "" {
		r.reserve[j.ID] = reservation
	}
}

// replica notes an endpoint's replica.
func (r *recorder) replica(j *model.Job, now time.Time) {
	r.queuedAt[j.ID] = now
}

// meter is the run's cost meter, made on first use.
func (r *recorder) meter() *costMeter {
	if r.cost == nil {
		r.cost = newCostMeter(r.w)
	}
	return r.cost
}
