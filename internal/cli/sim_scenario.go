package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/report"
	"github.com/allot-dev/allot/internal/sim/engine"
	"github.com/allot-dev/allot/internal/sim/scenario"
	"github.com/allot-dev/allot/internal/spec"
)

type simScenarioFlags struct {
	strategy, policies, output, report string
	checkpoints                        string
	findMin                            bool
	factor                             float64
}

func newSimScenarioCmd() *cobra.Command {
	f := simScenarioFlags{}
	cmd := &cobra.Command{
		Use:   "scenario FILE",
		Short: "Simulate a scenario (fleet, tenants, training, endpoints, reservations) under each sharing strategy",
		Long: `scenario runs a scenario file through the same scheduling core, autoscaler,
operator policies and strategy code as the server, on a virtual clock, and
reports per strategy: SLO attainment per endpoint (% of minutes whose p95 was
within the SLO), guarantee violations per partition (minutes in which work
that fits its unused guarantee had waited longer than min_run_time),
reservations honoured on time, spot GPU-hours run and lost to preemption,
queueing delay per tier (p50/p99), GPU utilisation, and GPU-hours and cost
(USD, at the fleet's prices as the server bills them, docs/cost.md) per tenant.

Strategies (docs/strategies.md): static (each partition only on its
guarantees, no lending), dynamic (one pool: classes, policies and preemption
only), hybrid (guarantees lent while idle and reclaimed, non-urgent batch and
developer work run as spot). --strategy all runs the three side by side.

--checkpoints says where a preempted job's checkpoint lies: shared (the
default: storage every node reaches, so the next attempt resumes anywhere),
local (on the disk of the node of its first instance, as allot's agents keep
it; the scheduler is told and sends the job back there when it can) or
local-untold (on the node, the scheduler unaware). With a local choice an
attempt that runs elsewhere starts over, and the table adds the checkpointed
GPU-hours so redone.

--find-min-fleet searches (bisection on a uniform factor of every node count)
for the smallest fleet on which each strategy still keeps every endpoint's SLO
in at least 99 % of minutes, violates no guarantee and honours every
reservation on time.`,
		Example: `  # The week of examples/scenarios, three strategies side by side
  allot sim scenario examples/scenarios/week.yaml --strategy all

  # With the operator policies, as JSON
  allot sim scenario examples/scenarios/week.yaml --strategy all --policies examples/policies.yaml -o json

  # The smallest fleet each strategy needs, with plots
  allot sim scenario examples/scenarios/week.yaml --strategy all --find-min-fleet --report /tmp/week`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runSimScenario(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.strategy, "strategy", "", "static, dynamic, hybrid, a comma-separated list, or all (default: the tenants file's)")
	fl.StringVar(&f.policies, "policies", "", "operator policies file (e.g. examples/policies.yaml)")
	fl.Float64Var(&f.factor, "fleet-factor", 1, "scale every node count of the fleet by F")
	fl.BoolVar(&f.findMin, "find-min-fleet", false, "search for the smallest fleet factor on which each strategy meets its targets")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: json or table")
	fl.StringVar(&f.report, "report", "", "write plots and index.html into this directory")
	fl.StringVar(&f.checkpoints, "checkpoints", "shared", "where preempted work's checkpoints lie: shared (storage every node reaches), local (on the node, as allot's agents keep them; placement goes back to it), local-untold (on the node, placement unaware)")
	return cmd
}

// scenarioRun is one strategy's outcome as the command prints it.
type scenarioRun struct {
	*scenario.Result
	// MinFleet is the search's answer with --find-min-fleet.
	MinFleet *scenario.MinFleet `json:"min_fleet,omitempty"`
}

// runSimScenario runs each strategy asked for, then the search.
func runSimScenario(cmd *cobra.Command, path string, f simScenarioFlags) error {
	if f.output != "json" && f.output != "table" {
		return Usage(fmt.Errorf("-o %q: want json or table", f.output))
	}
	if !(f.factor > 0) {
		return Usage(fmt.Errorf("--fleet-factor %g: want a positive number", f.factor))
	}
	strategies, err := parseStrategies(f.strategy)
	if err != nil {
		return Usage(err)
	}
	ckpts, err := engine.ParseCheckpoints(f.checkpoints)
	if err != nil {
		return Usage(fmt.Errorf("--checkpoints: %w", err))
	}
	file, err := scenario.Read(path)
	if err != nil {
		return Usage(err)
	}
	var ps *model.PolicySet
	if f.policies != "" {
		if ps, err = spec.ReadPolicies(f.policies); err != nil {
			return Usage(err)
		}
	}
	var runs []scenarioRun
	var reportRuns []report.Run
	for _, s := range strategies {
		opt := scenario.Options{Strategy: s, Policies: ps, Factor: f.factor, Checkpoints: ckpts}
		start := time.Now()
		res, err := scenario.Run(cmd.Context(), file, opt)
		if err != nil {
			return err
		}
		res.WallSeconds = time.Since(start).Seconds()
		run := scenarioRun{Result: res}
		if f.findMin {
			mf, err := scenario.FindMinFleet(cmd.Context(), file, opt)
			if err != nil {
				return err
			}
			run.MinFleet = mf
		}
		runs = append(runs, run)
		if f.report != "" {
			w, err := file.Build(f.factor, s)
			if err != nil {
				return err
			}
			reportRuns = append(reportRuns, res.ReportRun(w))
		}
	}
	if f.report != "" {
		if err := report.Write(f.report, "allot sim scenario "+file.Name, reportRuns); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	out := cmd.OutOrStdout()
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(runs)
	}
	return writeScenarioTable(out, runs)
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

// writeScenarioTable prints the strategies side by side, one column each.
func writeScenarioTable(w io.Writer, runs []scenarioRun) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, cell func(r scenarioRun) string) {
		fmt.Fprint(tw, name, "\t")
		for _, r := range runs {
			fmt.Fprint(tw, cell(r), "\t")
		}
		fmt.Fprintln(tw)
	}
	row("strategy", func(r scenarioRun) string {
		if r.Policies {
			return r.Strategy + "+policies"
		}
		return r.Strategy
	})
	row("fleet GPUs", func(r scenarioRun) string { return fmt.Sprintf("%d (×%g)", r.GPUs, r.FleetFactor) })
	for i, e := range runs[0].Endpoints {
		row("SLO attainment "+e.Name, func(r scenarioRun) string { return fmt.Sprintf("%.2f %%", r.Endpoints[i].AttainmentPct) })
	}
	for i, p := range runs[0].Partitions {
		row("guarantee violation min "+p.Name, func(r scenarioRun) string { return fmt.Sprint(r.Partitions[i].ViolationMinutes) })
	}
	row("reservations on time", func(r scenarioRun) string { return fmt.Sprintf("%.0f %%", r.ReservationsOnTimePct) })
	row("spot GPU-h run", func(r scenarioRun) string { return fmt.Sprintf("%.0f", r.SpotGPUHours) })
	row("spot GPU-h lost", func(r scenarioRun) string { return fmt.Sprintf("%.0f", r.SpotLostGPUHours) })
	for i, t := range runs[0].Tiers {
		row("queue p50/p99 min "+t.Tier, func(r scenarioRun) string {
			if i >= len(r.Tiers) {
				return "-"
			}
			return fmt.Sprintf("%.1f / %.1f", r.Tiers[i].P50Minutes, r.Tiers[i].P99Minutes)
		})
	}
	row("GPU utilisation", func(r scenarioRun) string { return fmt.Sprintf("%.1f %%", r.UtilisationPct) })
	for i, t := range runs[0].Tenants {
		row("GPU-h "+t.Tenant, func(r scenarioRun) string {
			if i >= len(r.Tenants) {
				return "-"
			}
			return fmt.Sprintf("%.0f", r.Tenants[i].GPUHours)
		})
	}
	for i, t := range runs[0].Tenants {
		row("USD "+t.Tenant, func(r scenarioRun) string {
			if i >= len(r.Tenants) {
				return "-"
			}
			return fmt.Sprintf("%.0f", r.Tenants[i].USD)
		})
	}
	row("preemptions", func(r scenarioRun) string { return fmt.Sprint(r.Preemptions) })
	if runs[0].Checkpoints != "" {
		row("restarts at / away from checkpoint", func(r scenarioRun) string { return fmt.Sprintf("%d / %d", r.RestartsHome, r.RestartsAway) })
		row("checkpointed GPU-h redone", func(r scenarioRun) string { return fmt.Sprintf("%.1f", r.RedoneGPUHours) })
	}
	row("policy firings", func(r scenarioRun) string { return fmt.Sprint(r.PolicyFirings) })
	row("cycles with policy overrides", func(r scenarioRun) string { return fmt.Sprint(r.PolicyOverrideCycles) })
	row("meets targets", func(r scenarioRun) string { return fmt.Sprint(r.Meets) })
	if runs[0].MinFleet != nil {
		row("smallest fleet factor", func(r scenarioRun) string { return r.MinFleet.String() })
	}
	row("wall s", func(r scenarioRun) string { return fmt.Sprintf("%.1f", r.WallSeconds) })
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range runs {
		for _, m := range r.Misses {
			fmt.Fprintf(w, "%s misses: %s\n", r.Strategy, m)
		}
		for _, m := range r.Warnings {
			fmt.Fprintf(w, "%s warning: %s\n", r.Strategy, m)
		}
	}
	return nil
}
