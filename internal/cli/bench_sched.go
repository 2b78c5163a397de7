package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
)

type benchSchedFlags struct {
	gpus, pending, cycles int
	fill, elastic         float64
	seed                  uint64
	output                string
	cpuProfile            string
	baseline              string
	scratch               bool
}

// benchSchedFigures are what --baseline compares for bench sched.
var benchSchedFigures = []figure{
	{"gpus", sameSetting},
	{"pending", sameSetting},
	{"fill", sameSetting},
	{"cycles", sameSetting},
	{"seed", sameSetting},
	{"first_cycle_ms", lowerIsBetter},
	{"steady_p50_ms", lowerIsBetter},
	{"steady_p99_ms", lowerIsBetter},
	{"single_node_decision_p99_ms", lowerIsBetter},
	{"gang64_decision_p99_ms", lowerIsBetter},
	{"peak_heap_mib", lowerIsBetter},
	{"peak_rss_mib", lowerIsBetter},
	{"decisions_per_sec", higherIsBetter},
	{"first_cycle_decisions_per_sec", higherIsBetter},
}

func newBenchSchedCmd() *cobra.Command {
	f := benchSchedFlags{}
	cmd := &cobra.Command{
		Use:   "sched [--gpus 100000] [--pending 50000] [--fill 0.9] [--cycles 100]",
		Short: "Measure the scheduling core on a busy synthetic fleet",
		Long: `sched measures the scheduling core alone (no store, no API) where users run it:
on a fleet that is already busy, with a long queue in front of it.

The fleet is the one of the core's Go benchmark: --gpus / 8 nodes of 8 GPUs
in three InfiniBand regions, H100 and A100 leaf groups of 32 nodes, racks of 8
nodes under a 90 kW cap; twenty tenants in three partitions (one guaranteed
most H100s of r0, one most A100s of r1, one with no guarantee, so it only
borrows), and four open reservations owned by tenant00..tenant03.

Before anything is measured the core itself fills the fleet to --fill of its
GPUs with running work of every shape, class and partition (preemption off
while filling); start and checkpoint times are spread over three days, so
what a preemption loses differs from job to job and a few jobs are still
protected by the minimum run time (10 minutes).

Then --pending jobs are queued: 30 % one GPU and 20 % a fraction of one GPU
(inference), 10 % two or four GPUs, 25 % eight GPUs on one node (training),
5 % reservation owners' jobs inside their reservation, 4 % InfiniBand gangs
of 2 to 64 nodes × 8 GPUs (64 the most common); a quarter spot, a tenth
reserved class, half pinned to a GPU model.

--elastic F makes a share F of the queued whole-GPU jobs outside reservations
elastic (issue 42): a gang of n nodes may run with n to 2n nodes, a job of one
instance with one or two, one instance at a time; the core grows them into
capacity nothing else uses and shrinks them before it evicts. Which jobs are
elastic is drawn apart from the rest, so the queue is otherwise the one without
the flag, and without it the Plans (and their digests) are those of a build
without elastic jobs.

The first cycle decides the whole queue. Each of the --cycles steady-state
cycles that follow first moves the clock a minute on, completes 1 % of the
running work and tops the queue back up to --pending, then schedules and
applies the Plan (binds start, preempted jobs requeue) as the simulators do.

Reported:
  first cycle, steady p50/p99   wall time of a cycle on a sched.Session: its
                                Schedule, plus reporting the changes since
                                the previous cycle (completions, the last
                                Plan's binds and preemptions); the first
                                includes building the Session
  decisions/s                   queued jobs decided (bound, preempting or
                                given their reason) per second of steady
                                cycles
  1-node / 64-node decision p99 time the core spent on one job of one
                                instance / of a 64-node gang, from the
                                previous decision to this one (the core tells
                                a sched.Observer; it reads no clock itself)
  preemptions/cycle             mean over the steady cycles
  peak heap, peak RSS           runtime.MemStats.HeapAlloc sampled during the
                                cycles, /proc/self/status VmHWM

The same flags and seed give the same world and the same Plans (their
digest is printed, so two builds can be checked to decide alike); the times
are the machine's. --scratch plans every cycle from scratch instead
(sched.Scheduler.Schedule on the whole world, nothing carried between
cycles): its digests are the Session's, and its times what carrying the
state saves. A progress bar goes to stderr when it is a terminal.`,
		Example: `  allot bench sched                              # 100,000 GPUs, 50,000 queued, 90 % full
  allot bench sched --gpus 8000 --pending 2000 --cycles 20 -o json
  allot bench sched --fill 0 --cycles 0           # the empty fleet of BenchmarkCycle
  allot bench sched --elastic 0.2                 # a fifth of the queued whole-GPU jobs elastic`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchSched(cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.gpus, "gpus", 100_000, "GPUs in the fleet, rounded down to whole 8-GPU nodes (at least 1,600, so that every region has\nan H100 and an A100 leaf group for the partitions' guarantees)")
	fl.IntVar(&f.pending, "pending", 50_000, "queued jobs at the first cycle, kept queued after")
	fl.Float64Var(&f.fill, "fill", 0.9, "share of the GPUs running work holds before the first cycle, 0 to 1")
	fl.Float64Var(&f.elastic, "elastic", 0, "share of the queued whole-GPU jobs outside reservations that are elastic, 0 to 1 (gangs n to 2n nodes, single instances 1 to 2)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the world and of its churn")
	fl.IntVar(&f.cycles, "cycles", 100, "steady-state cycles after the first")
	fl.BoolVar(&f.scratch, "scratch", false, "plan every cycle from a Snapshot of the whole world, carrying nothing between cycles")
	addBenchFlags(cmd, &f.output, &f.cpuProfile, &f.baseline, "the measured cycles")
	return cmd
}

// benchSchedResult is the outcome of one `allot bench sched` run; its JSON
// is what -o json prints and what a saved baseline holds. Times are in
// milliseconds, memory in MiB.
type benchSchedResult struct {
	GPUs           int     `json:"gpus"`
	Nodes          int     `json:"nodes"`
	Pending        int     `json:"pending"`
	Fill           float64 `json:"fill"`
	Elastic        float64 `json:"elastic"`       // share of the queued whole-GPU jobs that are elastic
	HeldAtStart    float64 `json:"held_at_start"` // share of GPUs held before the first cycle
	RunningAtStart int     `json:"running_at_start"`
	Seed           uint64  `json:"seed"`
	Cycles         int     `json:"cycles"` // steady-state cycles measured
	SetupS         float64 `json:"setup_s"`

	FirstCycleMs        float64 `json:"first_cycle_ms"`
	FirstCycleDecisions int     `json:"first_cycle_decisions"`
	FirstCycleBinds     int     `json:"first_cycle_binds"`
	FirstCyclePreempts  int     `json:"first_cycle_preemptions"`
	SteadyP50Ms         float64 `json:"steady_p50_ms"`
	SteadyP99Ms         float64 `json:"steady_p99_ms"`
	SteadyMaxMs         float64 `json:"steady_max_ms"`
	DecisionsPerSec     float64 `json:"decisions_per_sec"` // steady cycles
	FirstDecisionsPerS  float64 `json:"first_cycle_decisions_per_sec"`
	BindsPerCycle       float64 `json:"binds_per_cycle"`       // steady mean
	PreemptionsPerCycle float64 `json:"preemptions_per_cycle"` // steady mean
	ResizesPerCycle     float64 `json:"resizes_per_cycle"`     // steady mean, of elastic jobs

	SingleNodeDecisions int     `json:"single_node_decisions"`
	SingleNodeP99Ms     float64 `json:"single_node_decision_p99_ms"`
	Gang64Decisions     int     `json:"gang64_decisions"`
	Gang64P99Ms         float64 `json:"gang64_decision_p99_ms"`
	Gang64MaxMs         float64 `json:"gang64_decision_max_ms"`
	PeakHeapMiB         float64 `json:"peak_heap_mib"`
	PeakRSSMiB          float64 `json:"peak_rss_mib"`
	// PlansSHA256 digests every Plan of the run (as JSON, in order): two
	// builds that decide alike print the same digest.
	PlansSHA256 string `json:"plans_sha256"`
	// DecisionsSHA256 digests only the binds and preemptions of every
	// Plan: two builds that place and evict alike print the same one, even
	// where they word a pending job's detail differently.
	DecisionsSHA256 string `json:"decisions_sha256"`
	GOMAXPROCS      int    `json:"gomaxprocs"`
	LoadAvgAtStart  string `json:"loadavg_at_start"`
}

// decisionClock times the core's decisions through sched.Observer and
// samples the heap now and then.
type decisionClock struct {
	last         time.Time
	single, gang []time.Duration
	n            int
	peakHeap     uint64
	ms           runtime.MemStats
}

func (c *decisionClock) Prepared() { c.last = time.Now() }

func (c *decisionClock) Decided(j *model.Job) {
	now := time.Now()
	d := now.Sub(c.last)
	switch j.Spec.Resources.InstanceCount {
	case 1:
		c.single = append(c.single, d)
	case 64:
		c.gang = append(c.gang, d)
	}
	if c.n++; c.n%4096 == 0 {
		c.sampleHeap()
		now = time.Now() // the sample is not the next decision's time
	}
	c.last = now
}

func (c *decisionClock) sampleHeap() {
	runtime.ReadMemStats(&c.ms)
	c.peakHeap = max(c.peakHeap, c.ms.HeapAlloc)
}

func runBenchSched(out, errOut io.Writer, f benchSchedFlags) error {
	if f.gpus < 8 || f.pending < 0 || f.cycles < 0 || f.fill < 0 || f.fill > 1 || !(f.elastic >= 0 && f.elastic <= 1) {
		return Usage(fmt.Errorf("need --gpus ≥ 8, --pending ≥ 0, --cycles ≥ 0, 0 ≤ --fill ≤ 1 and 0 ≤ --elastic ≤ 1"))
	}
	if f.output != "table" && f.output != "json" {
		return Usage(fmt.Errorf("--output must be table or json"))
	}
	base, err := loadBaseline(f.baseline, benchSchedFigures)
	if err != nil {
		return err
	}
	if err := base.sameSettings(benchSchedResult{GPUs: f.gpus / 8 * 8, Pending: f.pending, Fill: f.fill, Cycles: f.cycles, Seed: f.seed}); err != nil {
		return err
	}
	bar := newProgress(errOut)
	load, _ := os.ReadFile("/proc/loadavg")
	bar.say("building and filling the fleet")
	t0 := time.Now()
	b, err := schedtest.NewBusy(schedtest.BusyConfig{Nodes: f.gpus / 8, Pending: f.pending, Fill: f.fill, Seed: f.seed, Elastic: f.elastic})
	if err != nil {
		return Usage(err)
	}
	r := benchSchedResult{
		GPUs: f.gpus / 8 * 8, Nodes: f.gpus / 8, Pending: f.pending, Fill: f.fill, Elastic: f.elastic, Seed: f.seed, Cycles: f.cycles,
		HeldAtStart: b.Held(), SetupS: time.Since(t0).Seconds(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), LoadAvgAtStart: string(bytes.TrimSpace(load)),
	}
	for _, j := range b.World.Jobs {
		if j.Status.State.Holds() {
			r.RunningAtStart++
		}
	}
	digest, decided := sha256.New(), sha256.New()
	clock := &decisionClock{}
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime, Observer: clock})
	stopProfile, err := startProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	// The cycles run on a Session that carries the core's state from one
	// to the next; a cycle's time includes the changes reported to it since
	// the previous one (the first: building it).
	var session *sched.Session
	var reported time.Duration // reporting changes since the last cycle
	cycle := func() (time.Duration, int, sched.Plan, error) {
		var queued []*model.Job
		for _, j := range b.World.Jobs {
			if j.Status.State == model.StateQueued {
				queued = append(queued, j)
			}
		}
		start := time.Now()
		if f.scratch {
			p := s.Schedule(b.World.Snapshot(), b.Now)
			d := time.Since(start)
			clock.sampleHeap()
			if err := digestPlan(digest, decided, p); err != nil {
				return 0, 0, p, err
			}
			return d, len(queued), p, b.Apply(p)
		}
		if session == nil {
			session = s.NewSession(&b.World.Fleet, &b.World.Tenancy)
			for _, j := range b.World.Jobs {
				if err := session.Hold(j); err != nil {
					return 0, 0, sched.Plan{}, err
				}
			}
		}
		p := session.Schedule(queued, b.Now)
		d := time.Since(start) + reported
		clock.sampleHeap()
		if err := digestPlan(digest, decided, p); err != nil {
			return 0, 0, p, err
		}
		if err := b.Apply(p); err != nil {
			return 0, 0, p, err
		}
		bound := make(map[string]bool, len(p.Binds))
		for _, bd := range p.Binds {
			bound[bd.Job] = true
		}
		resized := make(map[string]bool, len(p.Resizes))
		for _, rs := range p.Resizes {
			resized[rs.Job] = true
		}
		var started, grown []*model.Job
		for _, j := range b.World.Jobs {
			switch {
			case bound[j.ID]:
				started = append(started, j)
			case resized[j.ID]:
				grown = append(grown, j)
			}
		}
		start = time.Now()
		for _, pr := range p.Preemptions {
			session.Release(pr.Job)
		}
		for _, j := range started {
			if err := session.Hold(j); err != nil {
				return 0, 0, p, err
			}
		}
		for _, j := range grown { // or shrunk: held anew with its allocations
			if err := session.Update(j); err != nil {
				return 0, 0, p, err
			}
		}
		reported = time.Since(start)
		return d, len(queued), p, nil
	}
	bar.step(0, f.cycles+1, "first cycle")
	d, n, p, err := cycle()
	if err != nil {
		return err
	}
	r.FirstCycleMs, r.FirstCycleDecisions = ms(d), n
	r.FirstCycleBinds, r.FirstCyclePreempts = len(p.Binds), len(p.Preemptions)
	r.FirstDecisionsPerS = float64(n) / d.Seconds()
	var steady []time.Duration
	var total time.Duration
	decisions, binds, preempts, resizes := 0, 0, 0, 0
	for c := 1; c <= f.cycles; c++ {
		bar.step(c, f.cycles+1, fmt.Sprintf("last cycle %.0f ms", ms(d)))
		b.Step()
		start := time.Now()
		for _, j := range b.Done {
			if session != nil {
				session.Release(j.ID)
			}
		}
		reported += time.Since(start)
		d, n, p, err = cycle()
		if err != nil {
			return err
		}
		steady = append(steady, d)
		total += d
		decisions += n
		binds += len(p.Binds)
		preempts += len(p.Preemptions)
		resizes += len(p.Resizes)
	}
	bar.done()
	if f.cycles > 0 {
		r.SteadyP50Ms, r.SteadyP99Ms, r.SteadyMaxMs = ms(pct(steady, 0.50)), ms(pct(steady, 0.99)), ms(pct(steady, 1))
		r.DecisionsPerSec = float64(decisions) / total.Seconds()
		r.BindsPerCycle = float64(binds) / float64(f.cycles)
		r.PreemptionsPerCycle = float64(preempts) / float64(f.cycles)
		r.ResizesPerCycle = float64(resizes) / float64(f.cycles)
	}
	r.SingleNodeDecisions, r.SingleNodeP99Ms = len(clock.single), ms(pct(clock.single, 0.99))
	r.Gang64Decisions, r.Gang64P99Ms, r.Gang64MaxMs = len(clock.gang), ms(pct(clock.gang, 0.99)), ms(pct(clock.gang, 1))
	r.PeakHeapMiB = float64(clock.peakHeap) / (1 << 20)
	_, r.PeakRSSMiB = rssMiB()
	r.PlansSHA256 = hex.EncodeToString(digest.Sum(nil))
	r.DecisionsSHA256 = hex.EncodeToString(decided.Sum(nil))
	if err := writeBenchSched(out, r, f.output); err != nil {
		return err
	}
	return base.check(errOut, r)
}

func writeBenchSched(out io.Writer, r benchSchedResult, format string) error {
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	elastic := ""
	if r.Elastic > 0 {
		elastic = fmt.Sprintf(" (%g of the whole-GPU ones elastic)", r.Elastic)
	}
	fmt.Fprintf(out, "%d GPUs (%d nodes), %.1f %% held by %d running jobs, %d queued%s, seed %d; setup %.1f s\n",
		r.GPUs, r.Nodes, 100*r.HeldAtStart, r.RunningAtStart, r.Pending, elastic, r.Seed, r.SetupS)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("first cycle", fmt.Sprintf("%.0f ms, %d decisions (%.0f/s), %d binds, %d preemptions",
		r.FirstCycleMs, r.FirstCycleDecisions, r.FirstDecisionsPerS, r.FirstCycleBinds, r.FirstCyclePreempts))
	if r.Cycles > 0 {
		row("steady cycle", fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d cycles", r.SteadyP50Ms, r.SteadyP99Ms, r.SteadyMaxMs, r.Cycles))
		row("decisions/s", fmt.Sprintf("%.0f (steady)", r.DecisionsPerSec))
		if r.Elastic > 0 {
			row("per cycle", fmt.Sprintf("%.1f binds, %.1f preemptions, %.1f resizes", r.BindsPerCycle, r.PreemptionsPerCycle, r.ResizesPerCycle))
		} else {
			row("per cycle", fmt.Sprintf("%.1f binds, %.1f preemptions", r.BindsPerCycle, r.PreemptionsPerCycle))
		}
	}
	row("1-node decision", fmt.Sprintf("p99 %.3f ms over %d", r.SingleNodeP99Ms, r.SingleNodeDecisions))
	row("64-node gang decision", fmt.Sprintf("p99 %.3f ms, max %.3f ms over %d", r.Gang64P99Ms, r.Gang64MaxMs, r.Gang64Decisions))
	row("memory", fmt.Sprintf("peak heap %.0f MiB, peak RSS %.0f MiB", r.PeakHeapMiB, r.PeakRSSMiB))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "plans sha256 %s, decisions sha256 %s\nGOMAXPROCS %d, load average at start %s\n", r.PlansSHA256[:16], r.DecisionsSHA256[:16], r.GOMAXPROCS, r.LoadAvgAtStart)
	return err
}

// digestPlan adds p to the digest of whole Plans and its binds,
// preemptions and resizes to the digest of decisions (a Plan without
// resizes digests as before they existed).
func digestPlan(plans, decisions io.Writer, p sched.Plan) error {
	if err := json.NewEncoder(plans).Encode(p); err != nil {
		return err
	}
	return json.NewEncoder(decisions).Encode(sched.Plan{Binds: p.Binds, Preemptions: p.Preemptions, Resizes: p.Resizes})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pct is the p-quantile of ds (nearest rank), 0 for none; it sorts ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}
