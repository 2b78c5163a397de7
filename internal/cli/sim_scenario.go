package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/report"
	"github.com/allot-dev/allot/internal/sim/engine"
	"github.com/allot-dev/allot/internal/sim/scenario"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/stats"
)

// simGCPercent is the garbage collector's target for sim scenario when
// GOGC does not set one.
const simGCPercent = 200

type simScenarioFlags struct {
	strategy, policies, output, report string
	checkpoints, seeds, loads, grid    string
	cpuProfile                         string
	findMin, ablation, elastic         bool
	factor                             float64
	parallel                           int
}

func newSimScenarioCmd() *cobra.Command {
	f := simScenarioFlags{}
	cmd := &cobra.Command{
		Use:   "scenario FILE",
		Short: "Simulate a scenario (fleet, tenants, training, endpoints, reservations) under each sharing strategy",
		Long: `scenario runs a scenario file through the same scheduling core, autoscaler,
operator policies and strategy code as the server, on a virtual clock. The
endpoints' requests are served by a request-level model of LLM serving
(continuous batching, prefill and decode per GPU model; docs/serving-model.md),
independent of the autoscaler's own model, and each minute's p95 is taken over
the simulated requests.

It reports per strategy: SLO attainment per endpoint (% of minutes whose p95
met the SLO), guarantee violation minutes per partition (work its guarantee
covers waited longer than min_run_time while the partition held less than the
guarantee, and would have started with what it was owed taken back from other
partitions), reservations honoured on time, queueing per tier (mean, median,
p95), training's queueing, completion time (JCT) and goodput (work done and
kept, in reference GPU-hours), GPU utilisation, spot GPU-hours run and lost,
GPU-hours per SLO-met endpoint-minute, the autoscaler's p95 prediction over the
measured p95, and cost per tenant (USD, as the server bills, docs/cost.md).

--seeds runs every strategy on each seed (in parallel, --parallel at a time)
and prints each figure as its mean ± the half-width of its 95 % confidence
interval (Student's t), each target as the share of seeds that met it, and,
when static is among the strategies, how each other strategy compares with it
(ratios with Fieller's 95 % interval). --load scales every arrival stream,
training stream and request rate together; each load gets its own table.

Strategies (docs/strategies.md): static (each partition only on its
guarantees, no lending), dynamic (one pool: classes, policies and preemption
only), hybrid (guarantees lent while idle and reclaimed, non-urgent internal
batch and developer work run as spot). --strategy all runs the three side by
side. --ablation runs hybrid with and without --policies, and hybrid with the
policies but without its overflow layer: what each part changes.

--checkpoints says where a preempted job's checkpoint lies: shared (the
default: storage every node reaches), local (on the node of its first
instance; the scheduler is told and sends the job back there) or local-untold
(on the node, the scheduler unaware); with a local choice the table adds the
checkpointed GPU-hours redone.

--elastic makes the training streams' jobs elastic, as each stream's elastic
block says (by default the gangs, 2 instances or more, may grow to twice their
size one instance at a time): the core grows them into capacity nothing else
uses and shrinks them before it evicts whole jobs; each resize restarts the job
from its last checkpoint, and a job runs at the speed its size gives it, each
doubling keeping scaling_efficiency of its speed (0.9 by default;
docs/serving-model.md, "Elastic training"). The work drawn is the same as
without --elastic, so two runs compare the same scenario with and without
elasticity; the table adds the resizes and the GPU-hours they lost.

--find-min-fleet runs every strategy at each fleet factor of --grid (a uniform
factor of every node count) over the seeds, and reports the smallest factor at
which at least 95 % of the seeds meet every target, with the whole grid: no
bisection, no assumption that a larger fleet always does better.

--report writes, per strategy (its first seed), plots of each endpoint's
per-minute p95 against its SLO, hourly utilisation, queueing and use per
partition, and an index.html.`,
		Example: `  # The week of examples/scenarios: three strategies, ten seeds, mean ± 95 % CI
  allot sim scenario examples/scenarios/week.yaml --strategy all --seeds 1-10

  # With the operator policies, at three loads, as JSON
  allot sim scenario examples/scenarios/week.yaml --strategy all --policies examples/policies.yaml \
      --seeds 1-10 --load 0.8,1.0,1.2 -o json

  # The same week with elastic training gangs
  allot sim scenario examples/scenarios/week.yaml --strategy all --policies examples/policies.yaml --seeds 1-3 --elastic

  # What the policies and the overflow layer each change
  allot sim scenario examples/scenarios/week.yaml --ablation --policies examples/policies.yaml --seeds 1-10

  # The smallest fleet hybrid needs, with plots
  allot sim scenario examples/scenarios/week.yaml --strategy hybrid --seeds 1-5 --find-min-fleet --grid 0.8,0.9,1 --report /tmp/week`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runSimScenario(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.strategy, "strategy", "", "static, dynamic, hybrid, a comma-separated list, or all (default: the tenants file's)")
	fl.StringVar(&f.policies, "policies", "", "operator policies file (e.g. examples/policies.yaml)")
	fl.BoolVar(&f.ablation, "ablation", false, "run hybrid with and without --policies, and without its overflow layer (needs --policies)")
	fl.StringVar(&f.seeds, "seeds", "", "seeds to run, e.g. 1-10 or 1,3,5-7 (default: the scenario's seed)")
	fl.StringVar(&f.loads, "load", "1", "load factors, e.g. 0.8,1.0,1.2: arrival, training and request rates times L")
	fl.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "runs at a time")
	fl.Float64Var(&f.factor, "fleet-factor", 1, "scale every node count of the fleet by F")
	fl.BoolVar(&f.elastic, "elastic", false, "make the training streams' jobs elastic as their elastic blocks say (default: gangs grow to twice their size)")
	fl.BoolVar(&f.findMin, "find-min-fleet", false, "find the smallest fleet factor of --grid at which ≥ 95 % of the seeds meet every target")
	fl.StringVar(&f.grid, "grid", "0.6,0.7,0.8,0.9,1,1.1,1.2", "fleet factors --find-min-fleet tries")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: json or table")
	fl.StringVar(&f.report, "report", "", "write plots and index.html into this directory")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file")
	_ = fl.MarkHidden("cpuprofile")
	fl.StringVar(&f.checkpoints, "checkpoints", "shared", "where preempted work's checkpoints lie: shared (storage every node reaches), local (on the node, as allot's agents keep them; placement goes back to it), local-untold (on the node, placement unaware)")
	return cmd
}

// scenarioCase is one case's outcome as the command prints it.
type scenarioCase struct {
	Name       string             `json:"name"`
	Strategy   string             `json:"strategy"`
	NoOverflow bool               `json:"no_overflow,omitempty"`
	Policies   bool               `json:"policies"`
	Elastic    bool               `json:"elastic,omitempty"`
	Load       float64            `json:"load"`
	Seeds      []int64            `json:"seeds"`
	Figures    []figureOut        `json:"figures"`
	Targets    []targetOut        `json:"targets"`
	Versus     []versusOut        `json:"versus_static,omitempty"`
	MinFleet   *scenario.MinFleet `json:"min_fleet,omitempty"`
	Runs       []*scenario.Result `json:"runs"`
	Misses     []string           `json:"-"`
	Warnings   []string           `json:"-"`
}

type figureOut struct {
	Name      string    `json:"name"`
	Mean      float64   `json:"mean"`
	HalfWidth float64   `json:"ci95_half_width"`
	Values    []float64 `json:"values"`
	text      string
}

type targetOut struct {
	Name     string  `json:"name"`
	Met      int     `json:"met"`
	Seeds    int     `json:"seeds"`
	PassRate float64 `json:"pass_rate"`
	Lo       float64 `json:"pass_rate_lo"`
	Hi       float64 `json:"pass_rate_hi"`
}

// versusOut is a figure of a case against static's at the same load:
// Ratio is static's mean over the case's (lower is better figures) or the
// case's over static's (higher is better), with Fieller's 95 % interval.
type versusOut struct {
	Name  string  `json:"name"`
	Ratio float64 `json:"ratio"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// runSimScenario runs each case over each seed, then the search.
func runSimScenario(cmd *cobra.Command, path string, f simScenarioFlags) error {
	if f.output != "json" && f.output != "table" {
		return Usage(fmt.Errorf("-o %q: want json or table", f.output))
	}
	if !(f.factor > 0) {
		return Usage(fmt.Errorf("--fleet-factor %g: want a positive number", f.factor))
	}
	if f.parallel < 1 {
		return Usage(fmt.Errorf("--parallel %d: want 1 or more", f.parallel))
	}
	if os.Getenv("GOGC") == "" {
		// A run holds a week of jobs and requests and allocates as it
		// goes; collecting half as often cost 6 % less CPU on the week
		// (BENCHMARKS.md) for about 40 % more memory (~340 MB a run).
		debug.SetGCPercent(simGCPercent)
	}
	stopProfile, err := startProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	strategies, err := parseStrategies(f.strategy)
	if err != nil {
		return Usage(err)
	}
	ckpts, err := engine.ParseCheckpoints(f.checkpoints)
	if err != nil {
		return Usage(fmt.Errorf("--checkpoints: %w", err))
	}
	loads, err := stats.ParseFloats(f.loads)
	if err != nil {
		return Usage(fmt.Errorf("--load: %w", err))
	}
	for _, l := range loads {
		if l > scenario.MaxLoad {
			return Usage(fmt.Errorf("--load: %g is above %d", l, scenario.MaxLoad))
		}
	}
	var grid []float64
	if f.findMin {
		if grid, err = stats.ParseFloats(f.grid); err != nil {
			return Usage(fmt.Errorf("--grid: %w", err))
		}
	}
	file, err := scenario.Read(path)
	if err != nil {
		return Usage(err)
	}
	seeds := []int64{file.Seed}
	if f.seeds != "" {
		ints, err := stats.ParseRange(f.seeds)
		if err != nil {
			return Usage(fmt.Errorf("--seeds: %w", err))
		}
		seeds = seeds[:0]
		for _, s := range ints {
			if s == 0 {
				return Usage(fmt.Errorf("--seeds: 0 is not a seed (0 means the file's); start at 1"))
			}
			seeds = append(seeds, int64(s))
		}
	}
	var ps *model.PolicySet
	if f.policies != "" {
		if ps, err = spec.ReadPolicies(f.policies); err != nil {
			return Usage(err)
		}
	}
	var cases []scenario.Case
	for _, l := range loads {
		if f.ablation {
			if ps == nil {
				return Usage(fmt.Errorf("--ablation compares hybrid with and without the policies: it needs --policies FILE"))
			}
			cases = append(cases, scenario.Case{Strategy: model.StrategyHybrid, Load: l},
				scenario.Case{Strategy: model.StrategyHybrid, Policies: ps, Load: l},
				scenario.Case{Strategy: model.StrategyHybrid, Policies: ps, NoOverflow: true, Load: l})
			continue
		}
		for _, s := range strategies {
			cases = append(cases, scenario.Case{Strategy: s, Policies: ps, Load: l})
		}
	}
	base := scenario.Options{Factor: f.factor, Checkpoints: ckpts, Elastic: f.elastic}
	results, err := scenario.Sweep(cmd.Context(), file, base, cases, seeds, f.parallel)
	if err != nil {
		return err
	}
	out := make([]scenarioCase, len(cases))
	for i, c := range cases {
		out[i] = summariseCase(c, seeds, results[i])
		out[i].Elastic = f.elastic
		if c.Strategy == "" && len(results[i]) > 0 {
			out[i].Strategy = results[i][0].Strategy
		}
	}
	compareWithStatic(cases, results, out)
	if f.findMin {
		for i, c := range cases {
			if c.Load != loads[0] {
				continue
			}
			mf, err := scenario.FindMinFleet(cmd.Context(), file, base, c, seeds, grid, f.parallel)
			if err != nil {
				return err
			}
			out[i].MinFleet = mf
		}
	}
	if f.report != "" {
		var runs []report.Run
		for i, c := range cases {
			w, err := file.Build(f.factor, c.Strategy)
			if err != nil {
				return err
			}
			r := results[i][0].ReportRun(w)
			r.Name = c.Name()
			runs = append(runs, r)
		}
		if err := report.Write(f.report, "allot sim scenario "+file.Name, runs); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	w := cmd.OutOrStdout()
	if f.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(jsonSafe(out))
	}
	return writeScenarioTables(w, out, loads, len(seeds))
}

// summariseCase turns a case's runs into its figures and targets.
func summariseCase(c scenario.Case, seeds []int64, runs []*scenario.Result) scenarioCase {
	sc := scenarioCase{Name: c.Name(), Strategy: string(c.Strategy), NoOverflow: c.NoOverflow, Policies: c.Policies != nil,
		Load: c.Load, Seeds: seeds, Runs: runs}
	for _, fig := range scenario.Figures(runs) {
		s := fig.Summary()
		sc.Figures = append(sc.Figures, figureOut{Name: fig.Name, Mean: s.Mean, HalfWidth: s.HalfWidth, Values: fig.Values, text: s.String()})
	}
	for _, t := range scenario.Targets(runs) {
		met := 0
		for _, ok := range t.Passed {
			if ok {
				met++
			}
		}
		rate, lo, hi := stats.PassRate(t.Passed)
		sc.Targets = append(sc.Targets, targetOut{Name: t.Name, Met: met, Seeds: len(t.Passed), PassRate: rate, Lo: lo, Hi: hi})
	}
	if len(runs) == 1 {
		sc.Misses, sc.Warnings = runs[0].Misses, runs[0].Warnings
	}
	return sc
}

// versusFigures are the figures compared with static: name, and whether
// higher is better.
var versusFigures = []struct {
	name   string
	higher bool
}{
	{scenario.FigureTrainingQueue, false},
	{scenario.FigureTrainingJCT, false},
	{scenario.FigureUtilisation, true},
	{scenario.FigureGoodput, true},
}

// compareWithStatic fills Versus of every case that has a static case at
// its load.
func compareWithStatic(cases []scenario.Case, results [][]*scenario.Result, out []scenarioCase) {
	for i, c := range cases {
		if c.Strategy == model.StrategyStatic {
			continue
		}
		j := -1
		for k, o := range cases {
			if o.Strategy == model.StrategyStatic && o.Load == c.Load && (o.Policies == nil) == (c.Policies == nil) {
				j = k
			}
		}
		if j < 0 {
			continue
		}
		mine, theirs := figureValues(results[i]), figureValues(results[j])
		for _, v := range versusFigures {
			a, b := mine[v.name], theirs[v.name]
			if !v.higher {
				a, b = b, a
			}
			r, lo, hi := stats.RatioOfMeans(a, b)
			label := "static's " + v.name + " ÷ this"
			if v.higher {
				label = "this " + v.name + " ÷ static's"
			}
			out[i].Versus = append(out[i].Versus, versusOut{Name: label, Ratio: r, Lo: lo, Hi: hi})
		}
	}
}

func figureValues(runs []*scenario.Result) map[string][]float64 {
	m := map[string][]float64{}
	for _, f := range scenario.Figures(runs) {
		m[f.Name] = f.Values
	}
	return m
}

// jsonSafe replaces the non-finite numbers JSON cannot hold (an interval
// over one seed) by the largest float, keeping their sign.
func jsonSafe(cs []scenarioCase) []scenarioCase {
	fix := func(x *float64) {
		switch {
		case math.IsNaN(*x):
			*x = 0
		case math.IsInf(*x, 1):
			*x = math.MaxFloat64
		case math.IsInf(*x, -1):
			*x = -math.MaxFloat64
		}
	}
	for i := range cs {
		for j := range cs[i].Figures {
			fix(&cs[i].Figures[j].Mean)
			fix(&cs[i].Figures[j].HalfWidth)
		}
		for j := range cs[i].Versus {
			fix(&cs[i].Versus[j].Ratio)
			fix(&cs[i].Versus[j].Lo)
			fix(&cs[i].Versus[j].Hi)
		}
		for j := range cs[i].Targets {
			fix(&cs[i].Targets[j].PassRate)
		}
	}
	return cs
}

// parseStrategies reads --strategy: empty keeps the tenants file's.
func parseStrategies(s string) ([]model.Strategy, error) {
	if s == "" {
		return []model.Strategy{""}, nil
	}
	if s == "all" {
		return model.Strategies, nil
	}
	var out []model.Strategy
	for _, p := range strings.Split(s, ",") {
		st := model.Strategy(strings.TrimSpace(p))
		if st == "" || !st.Valid() {
			return nil, fmt.Errorf("--strategy %q: want static, dynamic, hybrid, a list of them, or all", p)
		}
		out = append(out, st)
	}
	return out, nil
}

// writeScenarioTables prints one table per load, the cases side by side.
func writeScenarioTables(w io.Writer, cases []scenarioCase, loads []float64, seeds int) error {
	for li, l := range loads {
		var cs []scenarioCase
		for _, c := range cases {
			if c.Load == l {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		if li > 0 {
			fmt.Fprintln(w)
		}
		elastic := ""
		if cs[0].Elastic {
			elastic = ", elastic training"
		}
		if seeds > 1 {
			fmt.Fprintf(w, "load %g%s, %d seeds (%s): mean ± 95 %% CI; targets: seeds that met them\n", l, elastic, seeds, seedList(cs[0].Seeds))
		} else {
			fmt.Fprintf(w, "load %g%s, seed %d\n", l, elastic, cs[0].Seeds[0])
		}
		if err := writeScenarioTable(w, cs); err != nil {
			return err
		}
	}
	return nil
}

func seedList(s []int64) string {
	if len(s) > 1 && s[len(s)-1]-s[0] == int64(len(s)-1) {
		return fmt.Sprintf("%d-%d", s[0], s[len(s)-1])
	}
	var parts []string
	for _, x := range s {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ",")
}

func writeScenarioTable(w io.Writer, cs []scenarioCase) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, cell func(c scenarioCase) string) {
		fmt.Fprint(tw, name, "\t")
		for _, c := range cs {
			fmt.Fprint(tw, cell(c), "\t")
		}
		fmt.Fprintln(tw)
	}
	row("", func(c scenarioCase) string { return c.Name })
	row("fleet GPUs", func(c scenarioCase) string {
		r := c.Runs[0]
		return fmt.Sprintf("%d (×%g)", r.GPUs, r.FleetFactor)
	})
	for i, fig := range cs[0].Figures {
		row(fig.Name, func(c scenarioCase) string {
			if i >= len(c.Figures) {
				return "-"
			}
			return c.Figures[i].text
		})
	}
	if c0 := cs[0]; c0.Runs[0].Checkpoints != "" {
		row("restarts at / away from checkpoint", func(c scenarioCase) string {
			return fmt.Sprintf("%d / %d", c.Runs[0].RestartsHome, c.Runs[0].RestartsAway)
		})
		row("checkpointed GPU-h redone", func(c scenarioCase) string { return fmt.Sprintf("%.1f", c.Runs[0].RedoneGPUHours) })
	}
	for i, t := range cs[0].Targets {
		row("target: "+t.Name, func(c scenarioCase) string {
			tt := c.Targets[i]
			if tt.Seeds == 1 {
				return map[bool]string{true: "met", false: "missed"}[tt.Met == 1]
			}
			return fmt.Sprintf("%d/%d", tt.Met, tt.Seeds)
		})
	}
	for i, v := range versusRows(cs) {
		row(v, func(c scenarioCase) string {
			if i >= len(c.Versus) {
				return "-"
			}
			x := c.Versus[i]
			if len(c.Seeds) == 1 {
				return fmt.Sprintf("%.2f×", x.Ratio)
			}
			return fmt.Sprintf("%.2f× [%s, %s]", x.Ratio, ratioBound(x.Lo), ratioBound(x.Hi))
		})
	}
	if cs[0].MinFleet != nil {
		row("smallest fleet factor (≥ 95 % of seeds)", func(c scenarioCase) string { return c.MinFleet.String() })
		for i, t := range cs[0].MinFleet.Grid {
			row(fmt.Sprintf("  seeds meeting every target at ×%g", t.Factor), func(c scenarioCase) string {
				g := c.MinFleet.Grid[i]
				return fmt.Sprintf("%d/%d (%d GPUs)", g.Met, g.Seeds, g.GPUs)
			})
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cs {
		for _, m := range c.Misses {
			fmt.Fprintf(w, "%s misses: %s\n", c.Name, m)
		}
		for _, m := range c.Warnings {
			fmt.Fprintf(w, "%s warning: %s\n", c.Name, m)
		}
	}
	return nil
}

// versusRows names the comparison rows of the first case that has them.
func versusRows(cs []scenarioCase) []string {
	for _, c := range cs {
		if len(c.Versus) > 0 {
			var out []string
			for _, v := range c.Versus {
				out = append(out, "vs static: "+v.Name)
			}
			return out
		}
	}
	return nil
}

func ratioBound(x float64) string {
	if math.IsInf(x, 0) {
		return "∞"
	}
	return fmt.Sprintf("%.2f", x)
}
