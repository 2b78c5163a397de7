package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/stats"
)

// Case is one configuration a sweep runs over every seed: a strategy (or
// hybrid without its overflow layer), with or without the operator
// policies, at a load.
type Case struct {
	Strategy   model.Strategy
	NoOverflow bool
	Policies   *model.PolicySet
	Load       float64
}

// Name is how tables head the case: "hybrid+policies", "hybrid
// (no overflow)", with "@1.2" for a load other than 1.
func (c Case) Name() string {
	n := string(c.Strategy)
	if n == "" {
		n = "file's strategy"
	}
	if c.NoOverflow {
		n += " (no overflow)"
	}
	if c.Policies != nil {
		n += "+policies"
	}
	if c.Load != 0 && c.Load != 1 {
		n += fmt.Sprintf(" @%g", c.Load)
	}
	return n
}

// Sweep runs every case on every seed, parallel runs at a time (at least
// one), with base's other options, and returns the results by case, then
// by seed in the order given. Runs are independent and deterministic, so
// the results do not depend on parallel.
func Sweep(ctx context.Context, f *File, base Options, cases []Case, seeds []int64, parallel int) ([][]*Result, error) {
	out := make([][]*Result, len(cases))
	for i := range out {
		out[i] = make([]*Result, len(seeds))
	}
	type task struct{ c, s int }
	tasks := make(chan task)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	took := make([]float64, len(cases)) // seconds of each case's last finished run; 0 before one
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				c := cases[t.c]
				o := base
				o.Strategy, o.NoOverflow, o.Policies, o.Load, o.Seed = c.Strategy, c.NoOverflow, c.Policies, c.Load, seeds[t.s]
				start := time.Now()
				res, err := Run(ctx, f, o)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s, seed %d: %w", c.Name(), seeds[t.s], err)
						cancel()
					}
					mu.Unlock()
					continue
				}
				res.WallSeconds = time.Since(start).Seconds()
				mu.Lock()
				out[t.c][t.s] = res
				took[t.c] = res.WallSeconds
				mu.Unlock()
			}
		}()
	}
	// The runs go longest first, so that the last to finish are short and
	// the workers end together: a case's runs take about as long as its
	// last one did, and a case none of whose runs has finished counts as
	// the longest (so each case is measured within the first few runs).
	next := make([]int, len(cases)) // each case's next seed to feed
	for fed := 0; fed < len(cases)*len(seeds) && ctx.Err() == nil; fed++ {
		pick := -1
		mu.Lock()
		for c := range cases {
			if next[c] < len(seeds) && (pick < 0 || longer(took[c], took[pick])) {
				pick = c
			}
		}
		mu.Unlock()
		select {
		case tasks <- task{pick, next[pick]}:
			next[pick]++
		case <-ctx.Done():
		}
	}
	close(tasks)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// longer reports whether runs that took a seconds (0: none finished yet,
// as long as any) take longer than those that took b.
func longer(a, b float64) bool { return (a == 0 && b != 0) || (b != 0 && a > b) }

// Figure is one measure over the seeds of a case.
type Figure struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	// Higher tells which way is better: 1 higher, -1 lower, 0 neither.
	Higher int `json:"-"`
}

// Summary is the figure's mean with its 95 % confidence interval.
func (f Figure) Summary() stats.Summary { return stats.Summarize(f.Values) }

// Figures are the measures of a case's runs (one a seed), in the order
// tables print them. Every run of a sweep has the same endpoints,
// partitions, tiers and tenants, so figure i is the same measure in every
// case.
func Figures(runs []*Result) []Figure {
	if len(runs) == 0 {
		return nil
	}
	var out []Figure
	add := func(name string, higher int, v func(r *Result) float64) {
		f := Figure{Name: name, Higher: higher}
		for _, r := range runs {
			f.Values = append(f.Values, v(r))
		}
		out = append(out, f)
	}
	r0 := runs[0]
	for i, e := range r0.Endpoints {
		add(fmt.Sprintf("SLO attainment %% %s (p95 %s ≤ %g ms)", e.Name, e.Metric, e.SLOMs), 1, func(r *Result) float64 { return r.Endpoints[i].AttainmentPct })
	}
	for i, p := range r0.Partitions {
		add("guarantee violation min "+p.Name, -1, func(r *Result) float64 { return float64(r.Partitions[i].ViolationMinutes) })
	}
	add("reservations on time %", 1, func(r *Result) float64 { return r.ReservationsOnTimePct })
	for i, t := range r0.Tiers {
		add("queueing mean min "+t.Tier, -1, func(r *Result) float64 { return r.Tiers[i].MeanMinutes })
		add("queueing median min "+t.Tier, -1, func(r *Result) float64 { return r.Tiers[i].P50Minutes })
		add("queueing p95 min "+t.Tier, -1, func(r *Result) float64 { return r.Tiers[i].P95Minutes })
	}
	add(FigureTrainingQueue, -1, func(r *Result) float64 { return r.Training.MeanQueueMin })
	add("training queueing median min", -1, func(r *Result) float64 { return r.Training.MedianQueueMin })
	add("training queueing p95 min", -1, func(r *Result) float64 { return r.Training.P95QueueMin })
	add(FigureTrainingJCT, -1, func(r *Result) float64 { return r.Training.MeanJCTHours })
	add(FigureGoodput, 1, func(r *Result) float64 { return r.Training.GoodputGPUHours })
	add("training jobs completed", 1, func(r *Result) float64 { return float64(r.Training.Completed) })
	add(FigureUtilisation, 1, func(r *Result) float64 { return r.UtilisationPct })
	add("spot GPU-h run", 0, func(r *Result) float64 { return r.SpotGPUHours })
	add("spot GPU-h lost", -1, func(r *Result) float64 { return r.SpotLostGPUHours })
	add("GPU-h per SLO-met endpoint-minute", -1, func(r *Result) float64 { return r.GPUHoursPerSLOMinute })
	for i, e := range r0.Endpoints {
		add("autoscaler p95 predicted/measured "+e.Name, 0, func(r *Result) float64 { return r.Endpoints[i].AutoscalerRatio })
	}
	for i, t := range r0.Tenants {
		add("USD "+t.Tenant, 0, func(r *Result) float64 { return r.Tenants[i].USD })
	}
	add("preemptions", -1, func(r *Result) float64 { return float64(r.Preemptions) })
	if r0.Elastic {
		add("GPU-h lost to preemption", -1, func(r *Result) float64 { return r.LostGPUHours })
		add("resizes: grow", 0, func(r *Result) float64 { return float64(r.Grows) })
		add("resizes: shrink", 0, func(r *Result) float64 { return float64(r.Shrinks) })
		add("GPU-h lost to resizes", -1, func(r *Result) float64 { return r.ResizeLostGPUHours })
	}
	add("wall s", 0, func(r *Result) float64 { return r.WallSeconds })
	return out
}

// Names of the figures the comparison with static reads.
const (
	FigureTrainingQueue = "training queueing mean min"
	FigureTrainingJCT   = "training JCT mean h"
	FigureGoodput       = "training goodput GPU-h"
	FigureUtilisation   = "GPU utilisation %"
)

// Target is one target's pass rate over a case's seeds.
type Target struct {
	Name   string `json:"name"`
	Passed []bool `json:"passed"`
}

// Targets are the targets a run must meet (Result.Meets and its parts),
// one pass or fail a seed.
func Targets(runs []*Result) []Target {
	if len(runs) == 0 {
		return nil
	}
	var out []Target
	add := func(name string, ok func(r *Result) bool) {
		t := Target{Name: name}
		for _, r := range runs {
			t.Passed = append(t.Passed, ok(r))
		}
		out = append(out, t)
	}
	add(fmt.Sprintf("every endpoint's SLO in ≥ %g %% of minutes", TargetAttainmentPct), func(r *Result) bool {
		for _, e := range r.Endpoints {
			if e.AttainmentPct < TargetAttainmentPct {
				return false
			}
		}
		return true
	})
	add("no guarantee violation minute", func(r *Result) bool {
		for _, p := range r.Partitions {
			if p.ViolationMinutes > 0 {
				return false
			}
		}
		return true
	})
	add("every reservation on time", func(r *Result) bool { return r.ReservationsOnTimePct == 100 })
	add("all of these", func(r *Result) bool { return r.Meets })
	return out
}
