package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/report"
	"github.com/allot-dev/allot/internal/sim/replay"
	"github.com/allot-dev/allot/internal/trace/philly"
)

type simReplayFlags struct {
	jobs, vcs, policy, sharing, output, report string
	scale, spread, walltime                    float64
	checkpoint, minRun, holdAfter              time.Duration
	leaf, limit, gap                           int
}

func newSimReplayCmd() *cobra.Command {
	f := simReplayFlags{}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay the Philly trace over time through the scheduling core",
		Long: `replay runs the Philly trace (jobs arriving, running and finishing over months)
on a cluster shaped like the Helios study's: each virtual cluster owns the
nodes of 8 GPUs that philly_vc.csv gives it, and is a tenant guaranteed them.
Every cycle is one call of allot's scheduling core.

Sharing: static (a VC's jobs run only on its own nodes) or borrow (idle GPUs
anywhere may be borrowed and are reclaimed by preemption; a victim loses the
work since its last checkpoint). Policies: ` + strings.Join(replay.Policies, ", ") + ` (fifo is strict, as in
Helios: no job starts before an earlier one of its VC; fifo-backfill lets later
jobs use what the head leaves; fifo,
las and allot never read durations of unfinished jobs; sjf and srtf do).

Under static sharing the allot policy also preempts: a queued job evicts
running work of its own VC whose predicted remaining service (GPU-seconds) is
at least --priority-gap larger than its own, once that work has run
--min-run-time, cheapest lost work first (the core's Config.PriorityGap).

The average JCT is also given for each half of the jobs in submit order
(1st half, 2nd half), so that a policy designed on one half can be checked
on the other.

Cost: each VC is a tenant billed for the GPU-hours its jobs held (lost work
included) at the on-demand price of one GPU of the replay's SKU
(` + replay.SKU + `, package price): the USD column, the tenants' GPU-h and
USD, "usd" and "tenants[].usd" in -o json, and the --report page.

--policy takes one policy, a comma-separated list or "all", and --sharing one
mode or both ("static,borrow"); with more than one run, -o json writes an array
of results and --report plots them together.`,
		Example: `  # allot against SJF with true durations, static sharing, a quarter of the cluster
  allot sim replay --cluster-scale 0.25 --sharing static --policy sjf,allot

  # the same without preemption for a better priority value
  allot sim replay --cluster-scale 0.25 --sharing static --policy allot --priority-gap -1

  # design on the first half of the trace only
  allot sim replay --cluster-scale 0.25 --sharing static --policy allot --limit 41124 -o json

  # hold nodes for gangs after a day, with walltimes that let short work backfill them
  allot sim replay --cluster-scale 0.25 --sharing static --policy allot --hold-after 24h --walltime 2

  # what each virtual cluster's work cost
  allot sim replay --cluster-scale 0.25 --sharing borrow --policy allot -o json | jq '.tenants[] | {name, usd}'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimReplay(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.jobs, "jobs", "data/traces/philly/philly_jobs.csv", "Philly jobs CSV")
	fl.StringVar(&f.vcs, "vcs", "data/traces/philly/philly_vc.csv", "virtual clusters CSV")
	fl.StringVar(&f.policy, "policy", "allot", "queue policy: "+strings.Join(replay.Policies, ", ")+", a list, or all")
	fl.StringVar(&f.sharing, "sharing", "borrow", "static, borrow, or both as static,borrow")
	fl.Float64Var(&f.scale, "cluster-scale", 1, "keep ⌈nodes × F⌉ nodes of every virtual cluster")
	fl.DurationVar(&f.checkpoint, "checkpoint", replay.DefaultCheckpoint, "checkpoint interval of every job (0: never)")
	fl.DurationVar(&f.minRun, "min-run-time", -1, "protect started work from preemption this long (default: the checkpoint interval)")
	fl.Float64Var(&f.spread, "spread-penalty", replay.DefaultSpreadPenalty, "run-time penalty per extra node and per extra leaf group")
	fl.IntVar(&f.leaf, "leaf-nodes", replay.DefaultLeafNodes, "nodes per InfiniBand leaf group")
	fl.IntVar(&f.limit, "limit", 0, "replay only the first N jobs in submit order (0: all)")
	fl.DurationVar(&f.holdAfter, "hold-after", 0, "let a queued job that has waited this long keep nodes from later work until it starts (the core's Config.HoldAfter; 0: off)")
	fl.Float64Var(&f.walltime, "walltime", 0, "give every job a walltime (retry.timeout) of F × its run time, as users overestimate; with --hold-after, work that surely ends before a held job starts may backfill its nodes (0: none, as in the trace)")
	fl.IntVar(&f.gap, "priority-gap", replay.DefaultPriorityGap, "allot policy: preempt the VC's own running work whose priority value (GPU-seconds of predicted remaining service) is this much worse (negative: never)")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: json or table")
	fl.StringVar(&f.report, "report", "", "write plots and index.html into this directory")
	return cmd
}

func runSimReplay(cmd *cobra.Command, f simReplayFlags) error {
	if f.output != "json" && f.output != "table" {
		return Usage(fmt.Errorf("-o %q: want json or table", f.output))
	}
	policies := strings.Split(f.policy, ",")
	if f.policy == "all" {
		policies = replay.Policies
	}
	cfg := replay.Config{
		Sharing: replay.Sharing(f.sharing), ClusterScale: f.scale, Checkpoint: f.checkpoint,
		MinRunTime: f.minRun, SpreadPenalty: f.spread, LeafNodes: f.leaf, Limit: f.limit, PriorityGap: f.gap,
		HoldAfter: f.holdAfter, Walltime: f.walltime,
	}
	if f.walltime != 0 && !(f.walltime >= 1) {
		return Usage(fmt.Errorf("--walltime %g: want 0 (none) or at least 1", f.walltime))
	}
	if f.holdAfter < 0 {
		return Usage(fmt.Errorf("--hold-after %s: want 0 (off) or more", f.holdAfter))
	}
	if f.gap == 0 {
		return Usage(errors.New("--priority-gap 0: want a positive gap, or a negative one for none"))
	}
	if f.checkpoint == 0 {
		cfg.Checkpoint = -1 // never
	}
	if f.minRun < 0 {
		cfg.MinRunTime = max(f.checkpoint, 0)
	}
	if f.scale <= 0 {
		return Usage(fmt.Errorf("--cluster-scale %g: want a positive number", f.scale))
	}
	jobs, err := philly.ReadJobsFile(f.jobs)
	if err != nil {
		return Usage(fmt.Errorf("load jobs: %w", err))
	}
	vcs, err := philly.ReadVCsFile(f.vcs)
	if err != nil {
		return Usage(fmt.Errorf("load virtual clusters: %w", err))
	}
	cfg.Jobs, cfg.VCs = jobs, vcs
	var results []*replay.Result
	for _, sh := range strings.Split(f.sharing, ",") {
		for _, p := range policies {
			c := cfg
			c.Sharing = replay.Sharing(strings.TrimSpace(sh))
			c.Policy = strings.TrimSpace(p)
			if bar := progressBar(cmd.ErrOrStderr(), c.Policy); bar != nil {
				c.Progress = bar
			}
			r, err := replay.Run(cmd.Context(), c)
			if c.Progress != nil {
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			if errors.Is(err, replay.ErrConfig) {
				return Usage(err)
			}
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	if f.report != "" {
		if err := writeReplayReport(f.report, results); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	out := cmd.OutOrStdout()
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if len(results) == 1 {
			return enc.Encode(results[0])
		}
		return enc.Encode(results)
	}
	return writeReplayTable(out, results)
}

// progressBar returns a progress callback drawing on w when w is a
// terminal, else nil.
func progressBar(w io.Writer, label string) func(done, total int) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(done, total int) {
		const width = 40
		n := 0
		if total > 0 {
			n = done * width / total
		}
		fmt.Fprintf(f, "\r%-6s [%s%s] %d/%d jobs", label, strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total)
	}
}

func writeReplayTable(w io.Writer, results []*replay.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tsharing\tGPUs\tjobs\tavg JCT s\t1st half\t2nd half\tmedian\tp99\tavg queue s\tmedian\tp99\tutil\tmakespan s\tpreempt\tGPU-h lost\tmax owner wait s\tUSD\twall s\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.3f\t%.0f\t%d\t%.1f\t%.0f\t%.2f\t%.1f\t\n",
			r.Policy, r.Sharing, r.GPUs, r.Jobs, r.AvgJCT, r.AvgJCTFirstHalf, r.AvgJCTSecondHalf, r.MedianJCT, r.P99JCT, r.AvgQueue, r.MedianQueue, r.P99Queue,
			r.GPUUtilisation, r.Makespan, r.Preemptions, r.GPUHoursLost, r.MaxOwnerWait, r.USD, r.WallSeconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	r := results[0]
	fmt.Fprintf(w, "skipped (unknown VC): %d, never fit: %d\n", r.SkippedUnknownVC, r.NeverFit)
	fmt.Fprintf(w, "cost: GPU-hours held × %s per GPU-hour (%s on demand in %s)\n", usdRate(r.USDPerGPUHour), replay.SKU, replay.Region)
	for _, r := range results {
		fmt.Fprintf(w, "%s, %s: multi-node jobs' queueing delay p99 %.0f s, max %.0f s", r.Policy, r.Sharing, r.P99QueueGang, r.MaxQueueGang)
		if r.PastWalltime > 0 {
			fmt.Fprintf(w, "; %d attempts ran past their walltime", r.PastWalltime)
		}
		fmt.Fprintln(w)
	}
	for _, r := range results {
		fmt.Fprintf(w, "\n%s, %s: tenants\n", r.Policy, r.Sharing)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "tenant\tguaranteed GPUs\tavg used GPUs\tjobs\tavg JCT s\tmax owner wait s\tGPU-h\tUSD\t")
		for _, t := range r.Tenants {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%.0f\t%.0f\t%.1f\t%.2f\t\n", t.Name, t.GuaranteedGPUs, t.AvgUsedGPUs, t.Jobs, t.AvgJCT, t.MaxOwnerWait,
				t.GPUHours, t.USD)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// usdRate writes a price per unit to the hundredth of a cent, e.g. "$4.0963".
func usdRate(usd float64) string { return fmt.Sprintf("$%.4f", usd) }

func writeReplayReport(dir string, results []*replay.Result) error {
	var runs []report.Run
	for _, r := range results {
		run := report.Run{
			Name: r.Policy + ", " + r.Sharing, Utilisation: r.Utilisation, SampleHours: r.Sample.Hours(),
			QueueDelays: r.QueueDelays,
		}
		for _, t := range r.Tenants {
			run.Tenants = append(run.Tenants, report.Tenant{Name: t.Name, Guaranteed: float64(t.GuaranteedGPUs), AvgUsed: t.AvgUsedGPUs})
		}
		sec := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " s" }
		run.Figures = [][2]string{
			{"GPUs (nodes)", fmt.Sprintf("%d (%d)", r.GPUs, r.Nodes)},
			{"jobs", strconv.Itoa(r.Jobs)},
			{"avg / median / p99 JCT", sec(r.AvgJCT) + " / " + sec(r.MedianJCT) + " / " + sec(r.P99JCT)},
			{"avg JCT, first / second half of the jobs", sec(r.AvgJCTFirstHalf) + " / " + sec(r.AvgJCTSecondHalf)},
			{"avg / median / p99 queueing delay", sec(r.AvgQueue) + " / " + sec(r.MedianQueue) + " / " + sec(r.P99Queue)},
			{"p99 / max queueing delay of multi-node jobs", sec(r.P99QueueGang) + " / " + sec(r.MaxQueueGang)},
			{"GPU utilisation", fmt.Sprintf("%.1f %%", 100*r.GPUUtilisation)},
			{"makespan", sec(r.Makespan)},
			{"preemptions", strconv.Itoa(r.Preemptions)},
			{"GPU-hours lost to preemption", fmt.Sprintf("%.1f", r.GPUHoursLost)},
			{"max owner wait (jobs measured)", fmt.Sprintf("%s (%d)", sec(r.MaxOwnerWait), r.OwnerJobs)},
			{"skipped (unknown VC) / never fit", fmt.Sprintf("%d / %d", r.SkippedUnknownVC, r.NeverFit)},
			{"cost (GPU-hours held × " + usdRate(r.USDPerGPUHour) + " per GPU-hour, " + replay.SKU + " on demand)", fmt.Sprintf("$%.2f", r.USD)},
		}
		for _, t := range r.Tenants {
			run.Figures = append(run.Figures, [2]string{"cost of VC " + t.Name, fmt.Sprintf("$%.2f (%.1f GPU-hours)", t.USD, t.GPUHours)})
		}
		run.Figures = append(run.Figures, [2]string{"wall", fmt.Sprintf("%.1f s", r.WallSeconds)})
		runs = append(runs, run)
	}
	return report.Write(dir, "allot sim replay — Philly", runs)
}
