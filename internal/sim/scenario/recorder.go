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
	w          *World
	eng        *engine.Engine
	spotLike   map[string]bool      // jobs that run as spot (submitted so, or the strategy's overflow)
	tier       map[string]string    // tenant → its partition's tier
	queuedAt   map[string]time.Time // when a job last became queued
	firstStart map[string]time.Time
	submitted  map[string]*model.Job // jobs that are not replicas, by ID
	order      []string              // their IDs in submit order
	reserve    map[string]string     // job → the reservation whose opening it is

	gpuSeconds  map[string]float64 // per tenant
	busySeconds float64            // GPU-seconds held
	spotSeconds float64
	lostSeconds float64
	spotLost    float64
	redone      float64 // GPU-seconds of checkpointed work started over (engine.RestartRecorder)
	home, away  int     // restarts of jobs with saved work on the node of their checkpoint, and elsewhere
	preemptions int
	hourly      []float64 // GPU-seconds held per hour
	tenantHeld  map[string]float64
	cost        *costMeter // USD per tenant (cost.go)
}

func newRecorder(w *World) *recorder {
	r := &recorder{w: w, spotLike: map[string]bool{}, tier: map[string]string{}, queuedAt: map[string]time.Time{},
		firstStart: map[string]time.Time{}, submitted: map[string]*model.Job{}, reserve: map[string]string{},
		gpuSeconds: map[string]float64{}, tenantHeld: map[string]float64{}}
	tiers := map[string]string{}
	for _, p := range w.Promised.Partitions {
		tiers[p.Name] = p.Tier
		if p.Tier == "" {
			tiers[p.Name] = p.Name
		}
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

func (r *recorder) Advance(from, to time.Time) {
	holding := r.eng.Holding()
	dt := to.Sub(from).Seconds()
	start := r.w.Start
	var busy float64
	r.meter().advance(holding, to.Sub(from))
	for _, j := range holding {
		g := held(j)
		busy += g
		r.gpuSeconds[j.Spec.Tenant] += g * dt
		if r.spotLike[j.ID] {
			r.spotSeconds += g * dt
		}
	}
	r.busySeconds += busy * dt
	if busy == 0 {
		return
	}
	// Split the interval over hour buckets.
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

func (r *recorder) Started(j *model.Job, now time.Time) {
	r.meter().started(j, r.spotLike[j.ID])
	if _, ok := r.firstStart[j.ID]; !ok {
		r.firstStart[j.ID] = now
	}
	delete(r.queuedAt, j.ID)
}

func (r *recorder) Preempted(j *model.Job, p sched.Preemption, now time.Time) {
	r.preemptions++
	r.lostSeconds += p.LostGPUSeconds
	if r.spotLike[j.ID] {
		r.spotLost += p.LostGPUSeconds
	}
	r.queuedAt[j.ID] = now
}

func (r *recorder) Ended(j *model.Job, _ time.Time) { delete(r.queuedAt, j.ID) }

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

// submit notes a job the workload submits (not a replica).
func (r *recorder) submit(j *model.Job, spotLike bool, reservation string, now time.Time) {
	r.submitted[j.ID] = j
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

// meter is the run's cost meter, made on first use (the engine is set
// after the recorder).
func (r *recorder) meter() *costMeter {
	if r.cost == nil {
		r.cost = newCostMeter(r.w, func() []*model.Job { return r.eng.Holding() })
	}
	return r.cost
}
