package frag

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/score"
	"github.com/allot-dev/allot/internal/trace/openb"
)

// MaxPodsPerNode is the paper's limit of pods bound to one node.
const MaxPodsPerNode = 1001

// DefaultPoints are the arrived percentages the paper reports.
var DefaultPoints = []int{80, 90, 95, 100, 110, 120, 130}

// ErrNoEvents is returned when a requested arrived percentage is never
// reached (or is jumped over) in some seed.
var ErrNoEvents = errors.New("frag: no placement at requested arrived percentage")

// Config describes one experiment: a cluster, a pod list, a policy, seeds.
type Config struct {
	Nodes   []openb.Node
	Pods    []openb.Pod
	Policy  string
	Inflate float64 // arrivals up to Inflate × GPU capacity; 1.3 in the paper
	Seeds   []int64
	Points  []int // arrived percentages to report; DefaultPoints when nil
	Workers int   // seeds run at once; 1 when < 1
	// Ceiling also reports each seed's packing ceiling (see Ceiling).
	Ceiling bool
	// FreeAt, when above 0, reports each seed's free capacity at the first
	// attempt that brings arrived to FreeAt % (FreeReport).
	FreeAt float64
}

// SeedResult is one seed's run.
type SeedResult struct {
	Seed  int64
	Alloc []float64 // allocation % at Config.Points
	// Ceiling is the packing ceiling % at Config.Points of the fractions
	// this run placed, averaged over the same attempts as Alloc, and
	// CeilingAll that of every fraction that arrived; nil unless
	// Config.Ceiling.
	Ceiling, CeilingAll []float64
	Placed              int
	Failed              int
	// Free is where the free capacity lay at Config.FreeAt; nil unless
	// asked for, or when arrived never reached it.
	Free *FreeReport
}

// Point aggregates the seeds at one arrived percentage.
type Point struct {
	ArrivedPct int
	Median     float64
	Min, Max   float64
	// Ceiling and CeilingAll are the seeds' median packing ceilings (see
	// SeedResult); 0 unless Config.Ceiling.
	Ceiling, CeilingAll float64
}

// Result is the experiment's outcome.
type Result struct {
	Policy string
	Points []Point
	Seeds  []SeedResult
}

// Run runs every seed of cfg, cfg.Workers at a time, and aggregates them.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Points == nil {
		cfg.Points = DefaultPoints
	}
	if _, err := score.New(cfg.Policy, score.WithWorkload(score.Workload{{P: 1}})); err != nil {
		return Result{}, err
	}
	reqs := requests(cfg.Pods)
	var w score.Workload
	if score.NeedsWorkload(cfg.Policy) {
		w = score.TargetWorkload(reqs, score.DefaultCoverage)
	}
	res := Result{Policy: cfg.Policy, Seeds: make([]SeedResult, len(cfg.Seeds))}
	errs := make([]error, len(cfg.Seeds))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(cfg.Workers, 1) {
		wg.Go(func() {
			for i := range next {
				res.Seeds[i], errs[i] = runSeed(ctx, cfg, reqs, w, cfg.Seeds[i])
			}
		})
	}
	for i := range cfg.Seeds {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	for k, pct := range cfg.Points {
		vals := make([]float64, len(res.Seeds))
		for i, s := range res.Seeds {
			vals[i] = s.Alloc[k]
		}
		p := aggregate(pct, vals)
		if cfg.Ceiling {
			for i, s := range res.Seeds {
				vals[i] = s.Ceiling[k]
			}
			p.Ceiling = aggregate(pct, vals).Median
			for i, s := range res.Seeds {
				vals[i] = s.CeilingAll[k]
			}
			p.CeilingAll = aggregate(pct, vals).Median
		}
		res.Points = append(res.Points, p)
	}
	return res, nil
}

func aggregate(pct int, vals []float64) Point {
	slices.Sort(vals)
	p := Point{ArrivedPct: pct}
	if n := len(vals); n > 0 {
		p.Min, p.Max = vals[0], vals[n-1]
		p.Median = (vals[(n-1)/2] + vals[n/2]) / 2
	}
	return p
}

// requests turns pods into the core's requests; pods of one gpu_spec share
// one Models slice.
func requests(pods []openb.Pod) []sched.Request {
	out := make([]sched.Request, len(pods))
	for i, p := range pods {
		r := sched.Request{GPUs: p.GPUs, Milli: p.GPUMilli, CPU: p.CPUMilli, Memory: p.MemoryMiB, Models: p.Models}
		if p.GPUs == 0 {
			r.Milli, r.Models = 0, nil
		}
		out[i] = r
	}
	return out
}

func newCluster(nodes []openb.Node, ranks []int) ([]*sched.NodeInfo, int64) {
	out := make([]*sched.NodeInfo, len(nodes))
	var capMilli int64
	for i, n := range nodes {
		free := make([]int64, n.GPUs)
		for g := range free {
			free[g] = model.MilliPerGPU
		}
		capMilli += int64(n.GPUs) * model.MilliPerGPU
		out[i] = &sched.NodeInfo{
			Index: i, Rank: ranks[i], Name: n.Name, GPUModel: n.Model, Ready: true,
			FreeMilli: free, FreeWhole: n.GPUs,
			CPUCap: n.CPUMilli, CPUFree: n.CPUMilli, MemCap: n.MemoryMiB, MemFree: n.MemoryMiB,
		}
	}
	return out, capMilli
}

func underPodLimit(n *sched.NodeInfo) bool { return n.Pods < MaxPodsPerNode }

// runSeed places the seed's arrivals one at a time and records, after each
// attempt, arrived % (requested milli, failures included) and allocation %;
// a point's value is the mean allocation over the attempts whose arrived %
// rounds (half to even) to it.
func runSeed(ctx context.Context, cfg Config, reqs []sched.Request, w score.Workload, seed int64) (SeedResult, error) {
	arr := Arrivals(cfg.Pods, cfg.Nodes, cfg.Inflate, seed)
	nodes, capMilli := newCluster(cfg.Nodes, arr.Ranks)
	s, err := score.New(cfg.Policy, score.WithSeed(seed), score.WithWorkload(w))
	if err != nil {
		return SeedResult{}, err
	}
	ch := sched.Chooser{Scorer: s}
	last := slices.Max(cfg.Points)
	sum := make([]float64, last+1)
	cnt := make([]int, last+1)
	var ce, ceAll *ceiling // of the fractions placed, of all that arrived
	var ceSum, ceAllSum []float64
	if cfg.Ceiling {
		gpus := int(capMilli / model.MilliPerGPU)
		ce, ceAll = newCeiling(gpus), newCeiling(gpus)
		ceSum, ceAllSum = make([]float64, last+1), make([]float64, last+1)
	}
	var held *holdings
	if cfg.FreeAt > 0 {
		held = newHoldings(nodes, cfg.FreeAt)
	}
	res := SeedResult{Seed: seed}
	var arrived, alloc int64
	for k, p := range arr.Pods {
		if k%1024 == 0 && ctx.Err() != nil {
			return res, ctx.Err()
		}
		r := &reqs[p]
		arrived += r.TotalMilli()
		c, placed := ch.Choose(nodes, r, underPodLimit)
		if placed {
			if held != nil {
				held.bound(c.Node, r, c.GPUs)
			}
			c.Node.Bind(r, c.GPUs)
			alloc += r.TotalMilli()
			res.Placed++
		} else {
			res.Failed++
		}
		if ce != nil {
			if placed || !r.Fractional() {
				ce.add(r) // the fractions placed, the whole-GPU demand arrived
			}
			ceAll.add(r)
		}
		if held != nil {
			held.attempted(nodes, 100*float64(arrived)/float64(capMilli), 100*float64(alloc)/float64(capMilli), capMilli-alloc)
		}
		x := int(math.RoundToEven(100 * float64(arrived) / float64(capMilli)))
		if x > last {
			break
		}
		sum[x] += 100 * float64(alloc) / float64(capMilli)
		cnt[x]++
		if ce != nil && slices.Contains(cfg.Points, x) {
			b, err := ce.bound()
			if err != nil {
				return res, err
			}
			all, err := ceAll.bound()
			if err != nil {
				return res, err
			}
			ceSum[x] += b.AllocPct
			ceAllSum[x] += all.AllocPct
		}
	}
	if held != nil && held.done {
		res.Free = &held.rep
	}
	for _, pct := range cfg.Points {
		if pct < 0 || cnt[pct] == 0 {
			return res, fmt.Errorf("%w: %d%% in seed %d", ErrNoEvents, pct, seed)
		}
		res.Alloc = append(res.Alloc, sum[pct]/float64(cnt[pct]))
		if ce != nil {
			res.Ceiling = append(res.Ceiling, ceSum[pct]/float64(cnt[pct]))
			res.CeilingAll = append(res.CeilingAll, ceAllSum[pct]/float64(cnt[pct]))
		}
	}
	return res, nil
}
