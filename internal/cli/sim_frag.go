package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/score"
	"github.com/allot-dev/allot/internal/sim/frag"
	"github.com/allot-dev/allot/internal/trace/openb"
)

type simFragFlags struct {
	nodes, pods, policy, seeds, output string
	inflate, freeAt                    float64
	ceiling                            bool
}

func newSimFragCmd() *cobra.Command {
	f := simFragFlags{}
	cmd := &cobra.Command{
		Use:   "frag",
		Short: "Run the FGD paper's fragmentation experiment on an openb trace",
		Long: `frag replays an openb pod list onto an openb node list, one pod at a time and
inflated to a multiple of GPU capacity, placing each with one policy, and
reports the share of GPU capacity allocated against the share arrived
(median, min and max over seeds). Policies: ` + strings.Join(score.Names(), ", ") + `.

--ceiling adds two packing ceilings. GPU fractions waste what they leave
of their GPUs (an 810-milli pod leaves 190 that only pods of 190 or less
can use). A ceiling packs fractions onto the fewest GPUs the cutting-stock
LP allows, ignoring nodes, CPU and GPU models, and gives the GPUs left to
the whole-GPU pods that arrived. "ceiling" packs the fractions the run
placed: no arrangement of the same pods allocates more, so the gap is what
placement alone could still win. "all placed" packs every fraction that
arrived: no policy that places every fraction it is offered allocates more
(past the point where the cluster fills, policies drop fractions, and it
stops bounding them).

--free-at P says, for each seed, where the free GPU capacity lies at the
first pod that brings arrived to P %: the partly used GPUs grouped by the
fractions they hold (810 alone, 470+470, …) with their free milli, the
idle GPUs, and the arrived % from which no GPU was idle. Once no GPU is
idle, that free milli is what the policy lost to packing:

  allot sim frag --policy allot --seeds 42 --free-at 100`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimFrag(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nodes, "nodes", "data/traces/openb/openb_node_list_gpu_node.csv", "openb node list CSV")
	fl.StringVar(&f.pods, "pods", "data/traces/openb/openb_pod_list_default.csv", "openb pod list CSV")
	fl.StringVar(&f.policy, "policy", "allot", "placement policy: "+strings.Join(score.Names(), ", "))
	fl.StringVar(&f.seeds, "seeds", "42-51", "seeds: a range A-B or a comma-separated list")
	fl.Float64Var(&f.inflate, "inflate", 1.3, "pods arrive up to this multiple of GPU capacity")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: json or table")
	fl.BoolVar(&f.ceiling, "ceiling", false, "also report each run's packing ceiling (see above); slower")
	fl.Float64Var(&f.freeAt, "free-at", 0, "also report, per seed, where the free capacity lies at this arrived % (see above)")
	return cmd
}

// parseSeeds reads "42-51" or "1,5,9".
func parseSeeds(s string) ([]int64, error) {
	if a, b, ok := strings.Cut(s, "-"); ok && !strings.Contains(s, ",") {
		lo, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		hi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
		if err1 != nil || err2 != nil || hi < lo || hi-lo >= 10000 {
			return nil, fmt.Errorf("--seeds %q: want A-B with A <= B and at most 10000 seeds", s)
		}
		var out []int64
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out, nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds %q: %q is not an integer", s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

type simFragPoint struct {
	ArrivedPct int     `json:"arrived_pct"`
	Median     float64 `json:"alloc_pct_median"`
	Min        float64 `json:"alloc_pct_min"`
	Max        float64 `json:"alloc_pct_max"`
	Ceiling    float64 `json:"ceiling_pct_median,omitempty"`
	CeilingAll float64 `json:"ceiling_all_placed_pct_median,omitempty"`
}

type simFragReport struct {
	Policy      string         `json:"policy"`
	Workload    string         `json:"workload"`
	Seeds       []int64        `json:"seeds"`
	WallSeconds float64        `json:"wall_seconds"`
	Points      []simFragPoint `json:"points"`
	Free        []simFragFree  `json:"free,omitempty"`
}

// simFragFree is one seed's frag.FreeReport.
type simFragFree struct {
	Seed          int64              `json:"seed"`
	ArrivedPct    float64            `json:"arrived_pct"`
	AllocPct      float64            `json:"alloc_pct"`
	FreeMilli     int64              `json:"free_milli"`
	IdleGPUs      int                `json:"idle_gpus"`
	FullAtPct     float64            `json:"full_at_arrived_pct,omitempty"`
	FullFreeMilli int64              `json:"full_free_milli,omitempty"`
	Groups        []simFragFreeGroup `json:"groups"`
}

type simFragFreeGroup struct {
	Holds     []int64 `json:"holds"`
	GPUs      int     `json:"gpus"`
	FreeMilli int64   `json:"free_milli"`
}

func runSimFrag(cmd *cobra.Command, f simFragFlags) error {
	start := time.Now()
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return Usage(err)
	}
	if f.output != "json" && f.output != "table" {
		return Usage(fmt.Errorf("-o %q: want json or table", f.output))
	}
	if f.inflate < 1 || f.inflate > 10 {
		return Usage(fmt.Errorf("--inflate %g: want 1 to 10", f.inflate))
	}
	if f.freeAt < 0 || f.freeAt > 100*f.inflate {
		return Usage(fmt.Errorf("--free-at %g: want 0 (off) to --inflate × 100 (%g)", f.freeAt, 100*f.inflate))
	}
	if _, err := score.New(f.policy, score.WithWorkload(score.Workload{{P: 1}})); err != nil {
		return Usage(err)
	}
	nodes, err := openb.ReadNodesFile(f.nodes)
	if err != nil {
		return Usage(fmt.Errorf("load nodes: %w", err))
	}
	pods, err := openb.ReadPodsFile(f.pods)
	if err != nil {
		return Usage(fmt.Errorf("load pods: %w", err))
	}
	res, err := frag.Run(cmd.Context(), frag.Config{
		Nodes: nodes, Pods: pods, Policy: f.policy, Inflate: f.inflate, Seeds: seeds,
		Workers: runtime.GOMAXPROCS(0), Ceiling: f.ceiling, FreeAt: f.freeAt,
	})
	if errors.Is(err, frag.ErrNoEvents) {
		return Usage(err)
	}
	if err != nil {
		return err
	}
	rep := simFragReport{Policy: f.policy, Workload: workloadName(f.pods), Seeds: seeds,
		WallSeconds: time.Since(start).Seconds()}
	for _, p := range res.Points {
		rep.Points = append(rep.Points, simFragPoint{ArrivedPct: p.ArrivedPct, Median: p.Median, Min: p.Min, Max: p.Max,
			Ceiling: p.Ceiling, CeilingAll: p.CeilingAll})
	}
	for _, sr := range res.Seeds {
		if sr.Free == nil {
			continue
		}
		fr := simFragFree{Seed: sr.Seed, ArrivedPct: sr.Free.ArrivedPct, AllocPct: sr.Free.AllocPct,
			FreeMilli: sr.Free.FreeMilli, IdleGPUs: sr.Free.IdleGPUs, FullAtPct: sr.Free.FullAtPct,
			FullFreeMilli: sr.Free.FullFreeMilli, Groups: []simFragFreeGroup{}}
		for _, g := range sr.Free.Groups {
			fr.Groups = append(fr.Groups, simFragFreeGroup{Holds: g.Holds, GPUs: g.GPUs, FreeMilli: g.FreeMilli})
		}
		rep.Free = append(rep.Free, fr)
	}
	if f.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeSimFragTable(cmd.OutOrStdout(), rep, f.ceiling)
}

// workloadName is the pod list's file name without directory, "openb_pod_list_"
// and ".csv": "default" for openb_pod_list_default.csv.
func workloadName(path string) string {
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	return strings.TrimSuffix(strings.TrimPrefix(base, "openb_pod_list_"), ".csv")
}

func writeSimFragTable(w io.Writer, rep simFragReport, ceiling bool) error {
	fmt.Fprintf(w, "policy %s, workload %s, %d seeds, %.1fs\n", rep.Policy, rep.Workload, len(rep.Seeds), rep.WallSeconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "arrived %\talloc % median\tmin\tmax\t"
	if ceiling {
		head += "ceiling\tall placed\t"
	}
	fmt.Fprintln(tw, head)
	for _, p := range rep.Points {
		fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%.2f\t", p.ArrivedPct, p.Median, p.Min, p.Max)
		if ceiling {
			fmt.Fprintf(tw, "%.2f\t%.2f\t", p.Ceiling, p.CeilingAll)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, fr := range rep.Free {
		writeSimFragFree(w, fr)
	}
	return nil
}

// writeSimFragFree prints one seed's free-capacity report: a line, then
// the groups of partly used GPUs.
func writeSimFragFree(w io.Writer, fr simFragFree) {
	fmt.Fprintf(w, "\nseed %d at arrived %.3f %%: allocated %.3f %%, %d milli free, %d idle GPUs", fr.Seed,
		fr.ArrivedPct, fr.AllocPct, fr.FreeMilli, fr.IdleGPUs)
	if fr.FullAtPct > 0 {
		fmt.Fprintf(w, "; no GPU idle from arrived %.3f %% (%d milli free then)", fr.FullAtPct, fr.FullFreeMilli)
	}
	fmt.Fprintln(w)
	t := table{header: []string{"GPU HOLDS", "GPUS", "FREE MILLI"}}
	for _, g := range fr.Groups {
		holds := make([]string, len(g.Holds))
		for i, x := range g.Holds {
			holds[i] = strconv.FormatInt(x, 10)
		}
		t.add(strings.Join(holds, "+"), strconv.Itoa(g.GPUs), strconv.FormatInt(g.FreeMilli, 10))
	}
	t.print(w)
}
