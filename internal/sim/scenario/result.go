package scenario

// Result is one run of a scenario under one strategy.
type Result struct {
	Scenario string `json:"scenario"`
	Strategy string `json:"strategy"`
	// Variant names a variant of the strategy (no-overflow); empty for
	// the strategy itself.
	Variant     string  `json:"variant,omitempty"`
	Policies    bool    `json:"policies"`
	Seed        int64   `json:"seed"`
	Load        float64 `json:"load"`
	FleetFactor float64 `json:"fleet_factor"`
	Nodes       int     `json:"nodes"`
	GPUs        int     `json:"gpus"`

	Endpoints    []EndpointResult    `json:"endpoints"`
	Partitions   []PartitionResult   `json:"partitions"`
	Reservations []ReservationResult `json:"reservations"`
	// ReservationsOnTimePct is the share of reservations whose work ran
	// within on_time of the window opening.
	ReservationsOnTimePct float64 `json:"reservations_on_time_pct"`
	// SpotGPUHours is run by work in the spot class (submitted so, or the
	// hybrid strategy's overflow); SpotLostGPUHours of it was lost to
	// preemption (work since the last checkpoint).
	SpotGPUHours     float64      `json:"spot_gpu_hours"`
	SpotLostGPUHours float64      `json:"spot_lost_gpu_hours"`
	Tiers            []TierResult `json:"queueing_by_tier"`
	// Training is what the training jobs (workload: training) got.
	Training       TrainingResult `json:"training"`
	UtilisationPct float64        `json:"gpu_utilisation_pct"`
	// GPUHoursPerSLOMinute is the endpoints' replicas' GPU-hours over the
	// endpoint-minutes whose p95 met the SLO: what serving within the SLO
	// cost.
	GPUHoursPerSLOMinute float64     `json:"gpu_hours_per_slo_met_endpoint_minute"`
	Tenants              []TenantUse `json:"gpu_hours_by_tenant"`
	Preemptions          int         `json:"preemptions"`
	LostGPUHours         float64     `json:"lost_gpu_hours"`
	// Elastic is whether the training streams' jobs ran elastic
	// (Options.Elastic). Grows and Shrinks count the resizes of elastic
	// jobs; ResizeLostGPUHours is the work since the last checkpoint that
	// their instances lost to them (LostGPUHours is preemption's).
	Elastic            bool    `json:"elastic,omitempty"`
	Grows              int     `json:"resizes_grow,omitempty"`
	Shrinks            int     `json:"resizes_shrink,omitempty"`
	ResizeLostGPUHours float64 `json:"resize_lost_gpu_hours,omitempty"`
	// RedoneGPUHours, with checkpoints on the nodes' disks
	// (Options.Checkpoints), is the checkpointed work that attempts
	// started over because they ran on another node than their checkpoint.
	RedoneGPUHours float64 `json:"checkpointed_gpu_hours_redone,omitempty"`
	// RestartsHome and RestartsAway count the restarts of preempted jobs
	// with saved work on the node of their checkpoint and elsewhere.
	RestartsHome int `json:"restarts_on_checkpoint_node,omitempty"`
	RestartsAway int `json:"restarts_elsewhere,omitempty"`
	// Checkpoints is where checkpoints lay (engine.Checkpoints); empty for
	// shared storage.
	Checkpoints   string `json:"checkpoints,omitempty"`
	PolicyFirings int    `json:"policy_firings"`
	// PolicyOverrideCycles counts the cycles in which the policies changed
	// the class of some work.
	PolicyOverrideCycles int `json:"policy_override_cycles"`
	Cycles               int `json:"cycles"`
	// Meets is whether every endpoint kept its SLO in at least
	// TargetAttainmentPct of the minutes, no guarantee was violated and
	// every reservation was on time; Misses says what failed.
	Meets  bool     `json:"meets_targets"`
	Misses []string `json:"misses,omitempty"`
	// Warnings names each pool that the tenancy, as the run's strategy
	// gives it to the core, promises more GPUs than it has at some instant
	// of the run (model.Promise): reservations' work there may wait.
	Warnings    []string `json:"warnings,omitempty"`
	WallSeconds float64  `json:"wall_seconds"`

	// Series for the report.
	HourlyUtilisation []float64 `json:"-"`
	QueueDelays       []float64 `json:"-"`
}

// TargetAttainmentPct is the SLO attainment (share of minutes whose
// request-level p95 met the SLO) an endpoint must reach for a run to meet
// its targets.
const TargetAttainmentPct = 99.9

// EndpointResult is one endpoint's service over the run.
type EndpointResult struct {
	Name   string  `json:"name"`
	Tenant string  `json:"tenant"`
	SLOMs  float64 `json:"slo_ms"`
	// Metric is the SLO's: ttft or request.
	Metric string `json:"slo_metric"`
	// AttainmentPct is the share of minutes whose p95, over the minute's
	// simulated requests, was within the SLO.
	AttainmentPct float64 `json:"slo_attainment_pct"`
	Minutes       int     `json:"minutes"`
	// RequestsPerDayM is the mean requests per day, in millions.
	RequestsPerDayM float64 `json:"requests_per_day_millions"`
	// MissedPct is the share of all requests not within the SLO.
	MissedPct    float64 `json:"requests_missed_pct"`
	PeakReplicas int     `json:"peak_replicas"`
	WorstP95Ms   float64 `json:"worst_p95_ms"`
	// GPUHours is what the endpoint's replicas held.
	GPUHours float64 `json:"gpu_hours"`
	// AutoscalerRatio is the median over the minutes of the autoscaler's
	// predicted p95 (its own queueing model) over the measured one: 1 is
	// right, below 1 optimistic; AutoscalerErrorPct the median of
	// |predicted − measured| / measured.
	AutoscalerRatio    float64 `json:"autoscaler_p95_ratio"`
	AutoscalerErrorPct float64 `json:"autoscaler_p95_error_pct"`
	// P95Ms is the measured p95 of each minute (NaN without requests).
	P95Ms []float64 `json:"-"`
}

// TrainingResult is what the training jobs got. A job's completion time
// (JCT) runs from its submission to its end; one still running or queued
// at the end of the run counts until the end (a lower bound).
type TrainingResult struct {
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	// Queueing from submission to the first start, in minutes (jobs never
	// started count until the end).
	MeanQueueMin   float64 `json:"mean_queue_minutes"`
	MedianQueueMin float64 `json:"median_queue_minutes"`
	P95QueueMin    float64 `json:"p95_queue_minutes"`
	MeanJCTHours   float64 `json:"mean_jct_hours"`
	// GoodputGPUHours is the training work done and kept (not lost to
	// preemption), in GPU-hours at the reference GPU's speed.
	GoodputGPUHours float64 `json:"goodput_gpu_hours"`
}

// PartitionResult is one partition's guarantee over the run.
type PartitionResult struct {
	Name           string `json:"name"`
	Tier           string `json:"tier"`
	GuaranteedGPUs int    `json:"guaranteed_gpus"`
	// ViolationMinutes counts the minutes in which work of the partition
	// that fits its unused guarantee (in one pool and one cluster of it)
	// had been owed it for longer than min_run_time (checkGuarantees).
	ViolationMinutes int `json:"guarantee_violation_minutes"`
	// FirstViolation says which work waited, when, and how much of the
	// guarantee was unused; empty without a violation.
	FirstViolation string `json:"first_violation,omitempty"`
}

// ReservationResult is one reservation's opening.
type ReservationResult struct {
	Name    string  `json:"name"`
	Owner   string  `json:"owner"`
	Opens   string  `json:"opens"`
	WaitMin float64 `json:"wait_minutes"` // from the opening to its work's start; -1 if it never started
	OnTime  bool    `json:"on_time"`
}

// TierResult is the queueing delay of one tier's jobs (a partition's
// tier; "none" for tenants without a partition). Jobs that never started
// count with their wait until the end of the run.
type TierResult struct {
	Tier        string  `json:"tier"`
	Jobs        int     `json:"jobs"`
	NeverRan    int     `json:"never_started"`
	MeanMinutes float64 `json:"mean_minutes"`
	P50Minutes  float64 `json:"p50_minutes"`
	P95Minutes  float64 `json:"p95_minutes"`
	P99Minutes  float64 `json:"p99_minutes"`
}

// TenantUse is a tenant's GPU-hours and what they cost at the fleet's
// prices (USD, docs/cost.md).
type TenantUse struct {
	Tenant   string  `json:"tenant"`
	GPUHours float64 `json:"gpu_hours"`
	USD      float64 `json:"usd"`
}
