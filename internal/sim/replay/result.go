package replay

import (
	"slices"
	"time"
)

// Result is what one replay measured. Times are seconds.
type Result struct {
	Policy       string  `json:"policy"`
	Sharing      string  `json:"sharing"`
	ClusterScale float64 `json:"cluster_scale"`
	Nodes        int     `json:"nodes"`
	GPUs         int     `json:"gpus"`

	AvgJCT    float64 `json:"avg_jct"`
	MedianJCT float64 `json:"median_jct"`
	P99JCT    float64 `json:"p99_jct"`
	// AvgJCTFirstHalf and AvgJCTSecondHalf split AvgJCT between the first
	// half of the replayed jobs in submit order and the rest, so that a
	// policy designed on the first half shows how it does on the second.
	AvgJCTFirstHalf  float64 `json:"avg_jct_first_half"`
	AvgJCTSecondHalf float64 `json:"avg_jct_second_half"`
	AvgQueue         float64 `json:"avg_queueing_delay"`
	MedianQueue      float64 `json:"median_queueing_delay"`
	P99Queue         float64 `json:"p99_queueing_delay"`
	// P99QueueGang and MaxQueueGang are the queueing delays of the jobs
	// that need more than one node (gangs), which small jobs can starve.
	P99QueueGang float64 `json:"p99_queueing_delay_gang"`
	MaxQueueGang float64 `json:"max_queueing_delay_gang"`
	// GPUUtilisation is GPU-seconds held (lost work included) over GPUs ×
	// makespan.
	GPUUtilisation float64 `json:"gpu_utilisation"`
	// Makespan runs from the first submit to the last completion.
	Makespan     float64 `json:"makespan"`
	Preemptions  int     `json:"preemptions"`
	GPUHoursLost float64 `json:"gpu_hours_lost"`
	// MaxOwnerWait is the longest wait of an owner job that arrived while
	// its VC, counting its queued work, stayed within its guarantee and
	// another VC borrowed (borrow sharing only); OwnerJobs counts them.
	MaxOwnerWait float64 `json:"max_owner_wait_s"`
	OwnerJobs    int     `json:"owner_jobs"`

	// PastWalltime counts the attempts that ran longer than their job's
	// walltime (Config.Walltime; a spread slows a job); they ran to their
	// end all the same.
	PastWalltime int `json:"past_walltime,omitempty"`

	Jobs             int        `json:"jobs"`
	SkippedUnknownVC int        `json:"skipped_unknown_vc"`
	NeverFit         int        `json:"never_fit"`
	NeverFitJobs     []NeverFit `json:"never_fit_jobs,omitempty"`
	Cycles           int        `json:"cycles"`
	IdleCycles       int        `json:"idle_cycles"` // cycles that bound and preempted nothing
	Tenants          []Tenant   `json:"tenants"`
	WallSeconds      float64    `json:"wall_seconds"`
	// USD is what all tenants' work cost (see Tenant.USD) and
	// USDPerGPUHour the price it was billed at: one GPU of SKU in Region
	// on demand.
	USD           float64 `json:"usd"`
	USDPerGPUHour float64 `json:"usd_per_gpu_hour"`

	// QueueDelays holds every job's queueing delay, sorted, for CDFs.
	QueueDelays []float64 `json:"-"`
	// Utilisation is the share of GPUs held per Sample bucket from the
	// first submit.
	Utilisation []float64     `json:"-"`
	Sample      time.Duration `json:"-"`
}

// NeverFit is a job larger than all the capacity it may use.
type NeverFit struct {
	Line   int    `json:"line"`
	VC     string `json:"vc"`
	GPUs   int    `json:"gpus"`
	Reason string `json:"reason"`
}

// Tenant is one VC's share against its guarantee, and its cost: GPUHours
// is what its jobs' allocations held (lost work included; an uneven gang
// holds whole nodes), USD those GPU-hours at Result.USDPerGPUHour.
type Tenant struct {
	Name           string  `json:"name"`
	GuaranteedGPUs int     `json:"guaranteed_gpus"`
	AvgUsedGPUs    float64 `json:"avg_used_gpus"`
	MaxOwnerWait   float64 `json:"max_owner_wait_s"`
	OwnerJobs      int     `json:"owner_jobs"`
	Jobs           int     `json:"jobs"`
	AvgJCT         float64 `json:"avg_jct"`
	GPUHours       float64 `json:"gpu_hours"`
	USD            float64 `json:"usd"`
}

func (s *sim) summarise() {
	r := s.res
	r.Cycles, r.IdleCycles = s.eng.Cycles(), s.eng.Idle()
	r.Preemptions = s.preempts
	r.GPUHoursLost = s.lostGPUs / 3600
	r.Makespan = float64(s.now)
	if r.Makespan > 0 && r.GPUs > 0 {
		r.GPUUtilisation = s.busyInt / (float64(r.GPUs) * r.Makespan)
	}
	slices.Sort(s.jct)
	slices.Sort(s.queue)
	r.AvgJCT, r.MedianJCT, r.P99JCT = mean(s.jct), percentile(s.jct, 50), percentile(s.jct, 99)
	r.AvgQueue, r.MedianQueue, r.P99Queue = mean(s.queue), percentile(s.queue, 50), percentile(s.queue, 99)
	slices.Sort(s.queueGang)
	r.P99QueueGang, r.MaxQueueGang = percentile(s.queueGang, 99), percentile(s.queueGang, 100)
	if n := s.halfJobs[0]; n > 0 {
		r.AvgJCTFirstHalf = s.halfJCT[0] / float64(n)
	}
	if n := s.halfJobs[1]; n > 0 {
		r.AvgJCTSecondHalf = s.halfJCT[1] / float64(n)
	}
	r.QueueDelays = s.queue
	r.Sample = s.cfg.Sample
	bucket := s.cfg.Sample.Seconds()
	for _, b := range s.buckets {
		r.Utilisation = append(r.Utilisation, b/(bucket*float64(r.GPUs)))
	}
	r.USDPerGPUHour = gpuHourPrice(&s.fleet)
	for v, vc := range s.vcs {
		t := Tenant{Name: vc.name, GuaranteedGPUs: vc.gpus, MaxOwnerWait: s.maxOwner[v], OwnerJobs: s.owners[v],
			Jobs: s.vcJobs[v], GPUHours: float64(s.vcBilled[v]) / 3600}
		t.USD = t.GPUHours * r.USDPerGPUHour
		r.USD += t.USD
		if t.Jobs > 0 {
			t.AvgJCT = s.vcJCT[v] / float64(t.Jobs)
		}
		if r.Makespan > 0 {
			t.AvgUsedGPUs = s.vcUsedInt[v] / r.Makespan
		}
		r.Tenants = append(r.Tenants, t)
		r.MaxOwnerWait = max(r.MaxOwnerWait, t.MaxOwnerWait)
		r.OwnerJobs += t.OwnerJobs
	}
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// percentile is the nearest-rank percentile of sorted x.
func percentile(x []float64, p float64) float64 {
	if len(x) == 0 {
		return 0
	}
	k := int(float64(len(x))*p/100+0.999999999) - 1
	return x[min(max(k, 0), len(x)-1)]
}
