package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/trace/openb"
)

func newTraceCmd() *cobra.Command {
	t := &cobra.Command{
		Use:   "trace",
		Short: "Derive workloads from the traces allot ships",
		Args:  noArgs,
	}
	t.AddCommand(newTraceOpenbVariantCmd())
	return t
}

type openbVariantFlags struct {
	kind, pods, nodes, output string
	pct                       float64
	seed                      uint64
}

func newTraceOpenbVariantCmd() *cobra.Command {
	f := openbVariantFlags{}
	cmd := &cobra.Command{
		Use:   "openb-variant --kind gpushare|gpuspec|multigpu|cpu --pct P --seed S -o FILE",
		Short: "Derive an openb pod list of one FGD workload family",
		Long: `openb-variant derives a variant of an openb pod list (by default the FGD
paper's default workload) the way the paper builds its workload families,
and writes it as an openb pod list that 'allot sim frag --pods FILE' runs.
The same inputs and seed give the same file. P is:

  gpushare  the share of the GPU milli requested (num_gpu × gpu_milli) that
            shared-GPU pods (one GPU, gpu_milli < 1000) ask for, 0-100.
            Every GPU pod is replaced in place by a copy of a GPU pod of the
            trace, drawn uniformly from the shared-GPU pods while the shared
            share so far is below P, else from the whole-GPU pods; CPU-only
            pods stay. (The shipped gpushare20/40 files measure 20.0/40.1 %.)
  gpuspec   the share of GPU pods that require one GPU model, 0-100. Every
            GPU pod's gpu_spec is cleared; then round(P % of GPU pods), chosen
            uniformly, each get one model drawn in proportion to the GPUs of
            that model on the nodes (--nodes) with enough GPUs, CPU and
            memory for the pod: the trace's own model distribution.
  multigpu  the share of the GPU milli requested that pods of 2 or more GPUs
            ask for, 0-95. Below P, copies of the trace's multi-GPU pods,
            drawn uniformly, are appended until it is reached; above P,
            multi-GPU pods chosen uniformly are removed until it is not
            passed. (The shipped multigpu20 file measures 20.4 %.)
  cpu       the CPU milli of CPU-only pods as a percentage of the GPU pods'
            CPU milli, 0-1000: CPU-only pods are added (copies drawn
            uniformly) or removed (chosen uniformly) the same way; GPU pods
            stay. (Shipped: default 29.0 %; cpu050 9.8 %, whose name counts
            on another base.)

Each share lands within one pod's contribution of P (gpuspec: within
rounding). Pods are renamed openb-pod-NNNN in file order. The line printed
gives the pod count and the share reached.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTraceOpenbVariant(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kind, "kind", "", "workload family: gpushare, gpuspec, multigpu or cpu (required)")
	fl.Float64Var(&f.pct, "pct", 0, "the family's share in percent (required; see above)")
	fl.Uint64Var(&f.seed, "seed", 42, "seed of the draws")
	fl.StringVar(&f.pods, "pods", "data/traces/openb/openb_pod_list_default.csv", "openb pod list CSV to derive from")
	fl.StringVar(&f.nodes, "nodes", "data/traces/openb/openb_node_list_gpu_node.csv", "openb node list CSV (gpuspec draws models from it)")
	fl.StringVarP(&f.output, "output", "o", "", "file to write the pod list to, - for standard output (required)")
	return cmd
}

func runTraceOpenbVariant(cmd *cobra.Command, f openbVariantFlags) error {
	switch {
	case f.kind == "":
		return Usage(errors.New("--kind is required: gpushare, gpuspec, multigpu or cpu"))
	case !cmd.Flags().Changed("pct"):
		return Usage(errors.New("--pct is required"))
	case f.output == "":
		return Usage(errors.New("-o FILE is required (- for standard output)"))
	}
	pods, err := openb.ReadPodsFile(f.pods)
	if err != nil {
		return Usage(fmt.Errorf("load pods: %w", err))
	}
	nodes, err := openb.ReadNodesFile(f.nodes)
	if err != nil {
		return Usage(fmt.Errorf("load nodes: %w", err))
	}
	kind := openb.VariantKind(f.kind)
	out, err := openb.Variant(pods, nodes, openb.VariantSpec{Kind: kind, Pct: f.pct, Seed: f.seed})
	if err != nil {
		return Usage(fmt.Errorf("--kind %s --pct %g: %w", f.kind, f.pct, err))
	}
	var buf bytes.Buffer
	if err := openb.WritePods(&buf, out); err != nil {
		return err
	}
	summary := fmt.Sprintf("%d pods, %s %.2f %% (asked %g %%), seed %d", len(out), kind, openb.Share(kind, out), f.pct, f.seed)
	if f.output == "-" {
		_, err := cmd.OutOrStdout().Write(buf.Bytes())
		fmt.Fprintln(cmd.ErrOrStderr(), summary)
		return err
	}
	if err := os.WriteFile(f.output, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", f.output, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s\n", f.output, summary)
	return nil
}
