package alert

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Rule is one built-in alert: the Go form of the rules.yaml alert of the
// same Name.
type Rule struct {
	Name     string
	Severity string // the rule's severity label: warning or critical
	// For is how long the condition must hold before the alert fires; 0
	// fires at the first evaluation that holds.
	For time.Duration
	// Thresholds are the numbers the rules.yaml expression compares with,
	// in the order they appear there (the test reads them back from it).
	Thresholds []float64
	// Window is the range of a rule over a rate or an increase (the [5m]
	// of rules.yaml); 0 for a rule over instant values.
	Window time.Duration
	// cond returns the instances for which the condition holds now.
	cond func(v Values, h *history, now time.Time) []Instance
	// summary says in a sentence what an instance means.
	summary func(Instance) string
}

// Instance is one label set for which a rule's condition holds, with the
// value of the expression.
type Instance struct {
	Labels Labels
	Value  float64
}

// Thresholds and windows of the rules, as in rules.yaml.
const (
	allocationBound = 0.8
	cycleQuantile   = 0.99
	cycleBound      = 1.0 // seconds
	cycleWindow     = 5 * time.Minute
	panicWindow     = 10 * time.Minute
	// A node on which this many attempts failed within nodeFailWindow
	// is likely at fault: jobs' retries go elsewhere, so repeated
	// failures there are mostly of different jobs.
	nodeFailBound  = 3
	nodeFailWindow = 10 * time.Minute
)

// Rules are the built-in alerts, in rules.yaml's order.
var Rules = []Rule{
	{
		Name: "AllotGPUAllocationHigh", Severity: "warning", For: 5 * time.Minute,
		Thresholds: []float64{allocationBound},
		cond: func(v Values, _ *history, _ time.Time) []Instance {
			total := sumBy(v, "allot_gpus", "region", "gpu_model")
			var out []Instance
			for k, a := range sumBy(v, "allot_gpus_allocated", "region", "gpu_model") {
				t, ok := total[k]
				if !ok || t.value <= 0 {
					continue
				}
				if r := a.value / t.value; r > allocationBound {
					out = append(out, Instance{a.labels, r})
				}
			}
			return out
		},
		summary: func(i Instance) string {
			return fmt.Sprintf("%s GPUs in %s are %.0f%% allocated", i.Labels["gpu_model"], i.Labels["region"], 100*i.Value)
		},
	},
	{
		Name: "AllotPartitionBelowGuarantee", Severity: "warning", For: 10 * time.Minute,
		Thresholds: []float64{0},
		cond: func(v Values, _ *history, _ time.Time) []Instance {
			alloc := sumBy(v, "allot_gpus_allocated", "region", "gpu_model", "partition")
			queued := sumBy(v, "allot_queue_guaranteed_jobs", "region", "gpu_model", "partition")
			var out []Instance
			for _, g := range v["allot_gpus_guaranteed"] {
				l := pick(g, "region", "gpu_model", "partition")
				a, ok := alloc[l.key()]
				if !ok || a.value >= g.Value {
					continue
				}
				if q := queued[l.key()]; q.value > 0 { // work this guarantee could serve waits
					out = append(out, Instance{l, a.value})
				}
			}
			return out
		},
		summary: func(i Instance) string {
			return fmt.Sprintf("partition %s holds %s %s GPUs in %s, below its guarantee, with work queued",
				i.Labels["partition"], strconv.FormatFloat(i.Value, 'f', -1, 64), i.Labels["gpu_model"], i.Labels["region"])
		},
	},
	{
		Name: "AllotEndpointSLOBreach", Severity: "critical", For: 5 * time.Minute,
		cond: func(v Values, _ *history, _ time.Time) []Instance {
			slo := map[string]float64{}
			for _, s := range v["allot_endpoint_slo_p95_seconds"] {
				slo[s.Labels["endpoint"]] = s.Value
			}
			var out []Instance
			for _, s := range v["allot_endpoint_p95_latency_seconds"] {
				if b, ok := slo[s.Labels["endpoint"]]; ok && s.Value > b {
					out = append(out, Instance{pick(s, "endpoint"), s.Value})
				}
			}
			return out
		},
		summary: func(i Instance) string {
			return fmt.Sprintf("endpoint %s p95 latency %s is over its SLO", i.Labels["endpoint"], seconds(i.Value))
		},
	},
	{
		Name: "AllotNodeNotReady", Severity: "warning", For: 5 * time.Minute,
		Thresholds: []float64{1},
		cond: func(v Values, _ *history, _ time.Time) []Instance {
			var out []Instance
			for _, s := range v["allot_node_health"] {
				if s.Labels["health"] == "NotReady" && s.Value == 1 {
					out = append(out, Instance{pick(s, "node", "region", "cluster", "health"), s.Value})
				}
			}
			return out
		},
		summary: func(i Instance) string {
			return fmt.Sprintf("node %s (%s/%s) is NotReady", i.Labels["node"], i.Labels["region"], i.Labels["cluster"])
		},
	},
	{
		Name: "AllotNodeFailingJobs", Severity: "warning",
		Thresholds: []float64{nodeFailBound}, Window: nodeFailWindow,
		cond: func(v Values, h *history, now time.Time) []Instance {
			var out []Instance
			for _, s := range v["allot_node_failed_attempts_total"] {
				if n, ok := h.increase("allot_node_failed_attempts_total", s, now, nodeFailWindow); ok && n >= nodeFailBound {
					out = append(out, Instance{pick(s, "node"), n})
				}
			}
			return out
		},
		summary: func(i Instance) string {
			return fmt.Sprintf("%s attempts failed on node %s in the last 10 minutes", strconv.FormatFloat(i.Value, 'f', -1, 64), i.Labels["node"])
		},
	},
	{
		Name: "AllotNodeAutoDrained", Severity: "warning",
		Thresholds: []float64{1},
		cond: func(v Values, _ *history, _ time.Time) []Instance {
			var out []Instance
			for _, s := range v["allot_node_auto_drained"] {
				if s.Value == 1 {
					out = append(out, Instance{pick(s, "node", "region", "cluster"), s.Value})
				}
			}
			return out
		},
		summary: func(i Instance) string {
			return fmt.Sprintf("allot drained node %s (%s/%s) itself", i.Labels["node"], i.Labels["region"], i.Labels["cluster"])
		},
	},
	{
		Name: "AllotCycleSlow", Severity: "warning", For: 10 * time.Minute,
		Thresholds: []float64{cycleBound}, Window: cycleWindow,
		cond: func(v Values, h *history, now time.Time) []Instance {
			type bucket struct{ le, n float64 }
			var bs []bucket
			byLE := map[string]int{}
			for _, s := range v["allot_cycle_duration_seconds_bucket"] {
				n, ok := h.increase("allot_cycle_duration_seconds_bucket", s, now, cycleWindow)
				if !ok {
					continue
				}
				le := s.Labels["le"]
				if i, seen := byLE[le]; seen {
					bs[i].n += n
					continue
				}
				f, err := strconv.ParseFloat(le, 64)
				if err != nil {
					continue
				}
				byLE[le] = len(bs)
				bs = append(bs, bucket{f, n})
			}
			slices.SortFunc(bs, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
			les, counts := make([]float64, len(bs)), make([]float64, len(bs))
			for i, b := range bs {
				les[i], counts[i] = b.le, b.n
			}
			q := quantile(cycleQuantile, les, counts)
			if math.IsNaN(q) || q <= cycleBound {
				return nil
			}
			return []Instance{{Labels{}, q}}
		},
		summary: func(i Instance) string {
			return "scheduling cycle p99 is " + seconds(i.Value)
		},
	},
	{
		Name: "AllotCyclePanicked", Severity: "critical",
		Thresholds: []float64{0}, Window: panicWindow,
		cond: func(v Values, h *history, now time.Time) []Instance {
			var sum float64
			var any bool
			for _, s := range v["allot_cycle_panics_total"] {
				if n, ok := h.increase("allot_cycle_panics_total", s, now, panicWindow); ok {
					sum, any = sum+n, true
				}
			}
			if !any || sum <= 0 {
				return nil
			}
			return []Instance{{Labels{}, sum}}
		},
		summary: func(i Instance) string {
			return fmt.Sprintf("%s scheduling cycle(s) panicked in the last 10 minutes", strconv.FormatFloat(i.Value, 'f', -1, 64))
		},
	},
	{
		Name: "AllotTenantBudgetNear", Severity: "warning",
		Thresholds: []float64{budgetNear, 1},
		cond:       budgetSpent(func(r float64) bool { return r >= budgetNear && r < 1 }),
		summary: func(i Instance) string {
			return fmt.Sprintf("tenant %s has spent %.0f%% of its monthly budget", i.Labels["tenant"], 100*i.Value)
		},
	},
	{
		Name: "AllotTenantBudgetSpent", Severity: "critical",
		Thresholds: []float64{1},
		cond:       budgetSpent(func(r float64) bool { return r >= 1 }),
		summary: func(i Instance) string {
			return fmt.Sprintf("tenant %s has spent %.0f%% of its monthly budget", i.Labels["tenant"], 100*i.Value)
		},
	},
}

// budgetNear is the share of its budget past which a tenant is warned.
const budgetNear = 0.8

// budgetSpent returns the condition of a budget rule: the tenants whose
// share spent (allot_tenant_cost_usd / allot_tenant_budget_usd) in
// accepts, with that share as the value.
func budgetSpent(in func(float64) bool) func(Values, *history, time.Time) []Instance {
	return func(v Values, _ *history, _ time.Time) []Instance {
		budget := map[string]float64{}
		for _, s := range v["allot_tenant_budget_usd"] {
			budget[s.Labels["tenant"]] = s.Value
		}
		var out []Instance
		for _, s := range v["allot_tenant_cost_usd"] {
			b, ok := budget[s.Labels["tenant"]]
			if !ok || b <= 0 {
				continue
			}
			if r := s.Value / b; in(r) {
				out = append(out, Instance{pick(s, "tenant"), r})
			}
		}
		return out
	}
}

// ranged are the series range rules read, with the longest window each
// needs; the Evaluator records their samples.
var ranged = map[string]time.Duration{
	"allot_cycle_duration_seconds_bucket": cycleWindow,
	"allot_cycle_panics_total":            panicWindow,
	"allot_node_failed_attempts_total":    nodeFailWindow,
}

// quantile is Prometheus's histogram_quantile over cumulative bucket counts
// sorted by upper bound (the last one +Inf): linear interpolation inside the
// bucket the rank falls in; the bound below +Inf when it falls in +Inf; NaN
// without observations.
func quantile(q float64, les, counts []float64) float64 {
	n := len(les)
	if n < 2 || !math.IsInf(les[n-1], 1) || counts[n-1] <= 0 {
		return math.NaN()
	}
	rank := q * counts[n-1]
	i, _ := slices.BinarySearchFunc(counts, rank, cmpFloat)
	if i >= n-1 {
		return les[n-2]
	}
	start, below := 0.0, 0.0
	if i > 0 {
		start, below = les[i-1], counts[i-1]
	} else if les[0] <= 0 {
		return les[0]
	}
	in := counts[i] - below
	if in <= 0 {
		return les[i]
	}
	return start + (les[i]-start)*(rank-below)/in
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// seconds prints a value in seconds as a duration ("1.5s", "250ms").
func seconds(v float64) string {
	return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
}
