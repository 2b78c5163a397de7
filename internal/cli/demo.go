package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/demo"
	servemodel "github.com/allot-dev/allot/internal/sim/serving"
	"github.com/allot-dev/allot/internal/trace/azurellm"
)

// exitError ends the command with its own exit status.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Stand-in workloads: an inference server, a load generator, a trainer",
		Long: `demo runs small programs that behave like the work allot schedules, so that
a fleet without GPUs (allot up, virtual agents) runs real processes: an
inference server with a service time and a fixed number of slots (serve), an
open-loop load generator to drive it (load), and a trainer that checkpoints
and resumes the way allot's agent expects (train).

They need nothing but the environment allot's agent gives every job, and the
agent runs a command named allot as its own executable, so a job file can say
command: [allot, demo, train, --steps, "100"] on any host.`,
	}
	cmd.AddCommand(newDemoServeCmd(), newDemoLoadCmd(), newDemoTrainCmd(), newDemoImageCmd(), newDemoGPUsCmd())
	return cmd
}

func newDemoServeCmd() *cobra.Command {
	var listen, report, gpu string
	cfg := demo.ServeConfig{}
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--service-time D] [--concurrency N] [--report URL]",
		Short: "Serve stand-in inference requests and report load, p95 and utilisation",
		Long: `serve answers HTTP on --listen: GET /healthz says ok, and GET / is the
"inference": the request waits for one of --concurrency slots (a GPU serves
a batch at a time; beyond that, requests queue), holds it for --service-time,
and answers with how long it queued and was served, as JSON.

Every --report-every the server prints what it measured over the interval:
requests/s (requests that arrived: the offered load), the p95 latency of the
requests it finished (queueing plus service) and the utilisation of its
slots. With --report URL, or $ALLOT_ENDPOINT_METRICS_URL, it also POSTs them
as JSON, with $ALLOT_ENDPOINT_TOKEN as a bearer token when set, checking an
https server's certificate against the PEM in $ALLOT_ENDPOINT_CA when set
(allot server on https gives its replicas its --tls-cert so):

  {"requests_per_sec": 212.5, "p95_ms": 48.2, "utilisation": 0.66, "replica": "JOB.ATTEMPT"}

The replica is named by $ALLOT_JOB_ID and $ALLOT_ATTEMPT. The first line
printed is the address it listens on. It stops on SIGTERM or Ctrl-C.
Capacity is concurrency / service time: 32 slots of 20 ms serve at most
1,600 requests/s.`,
		Example: `  allot demo serve --service-time 20ms --concurrency 32
  allot demo serve --listen 127.0.0.1:8000 --report http://127.0.0.1:9000/metrics --report-every 5s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.ReportURL, cfg.ReportToken = report, os.Getenv("ALLOT_ENDPOINT_TOKEN")
			if cfg.ReportURL == "" {
				cfg.ReportURL = os.Getenv("ALLOT_ENDPOINT_METRICS_URL")
			}
			cfg.ReportCA = os.Getenv("ALLOT_ENDPOINT_CA")
			cfg.Replica = replicaName()
			if gpu != "" {
				prof, err := servemodel.NewProfile(servemodel.DefaultModel, gpu, 1)
				if err != nil {
					return Usage(fmt.Errorf("--gpu: %w", err))
				}
				cfg.Tokens = func(context, generated float64, batch int) time.Duration {
					return time.Duration(prof.ServiceTime(context, generated, batch) * float64(time.Second))
				}
			}
			s, err := demo.NewServer(cfg)
			if err != nil {
				return Usage(err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("demo serve: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "listening on http://%s (replica %s, service time %s, concurrency %d, %s)\n",
				ln.Addr(), cfg.Replica, cfg.ServiceTime, cfg.Concurrency, gpuText())
			return s.Run(ctx, ln, out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on; port 0 picks a free one")
	f.DurationVar(&cfg.ServiceTime, "service-time", 20*time.Millisecond, "time one request holds a slot")
	f.IntVar(&cfg.Concurrency, "concurrency", 8, "requests served at once; more queue")
	f.StringVar(&report, "report", "", "URL to POST each interval's measurements to (default $ALLOT_ENDPOINT_METRICS_URL)")
	f.DurationVar(&cfg.ReportEvery, "report-every", 10*time.Second, "measurement and report interval")
	f.StringVar(&gpu, "gpu", "", "turn a request's token counts (?context=C&generated=G, as demo load --trace sends) into its service time by the simulator's serving model of an 8B model on one GPU of this model (H100, A100, T4, …; internal/sim/serving); a request without counts takes --service-time")
	return cmd
}

func newDemoLoadCmd() *cobra.Command {
	cfg := demo.LoadConfig{}
	var trace, traceDir string
	var rateScale float64
	cmd := &cobra.Command{
		Use:   "load --url URL (--rps R | --trace azure-code|azure-conv [--rate-scale X]) --duration D",
		Short: "Send requests at a rate (Poisson arrivals) and print latency percentiles",
		Long: `load sends GET requests to --url for --duration, arriving as a Poisson process
of --rps requests per second. Arrivals do not wait for earlier answers (an
open loop, as users do), so an overloaded server shows a growing queue rather
than a slower client. At the end it prints the requests sent and the rate
achieved, how many were answered 2xx, failed or dropped (more than
--max-in-flight outstanding), and the latency percentiles of the answered
ones.

--trace azure-code or azure-conv replays the Azure LLM inference trace
that the repository ships (--trace-dir, data/traces/azure-llm; sources in
data/traces/SOURCES.md) instead of Poisson arrivals, the way the simulator
does (internal/sim/serving, Arrivals): the trace's gaps, normalised minute
by minute, at --rps, or at --rate-scale times the trace's own mean rate
(about 2.6 requests/s for code, 5.4 for conv), so that its bursts and token
counts stay and the rate is steady over minutes. Each request carries its
token counts in the query (?context=C&generated=G); allot demo serve --gpu
turns them into its service time by the simulator's serving model
(docs/serving-model.md).`,
		Example: `  allot demo load --url http://127.0.0.1:8000/ --rps 300 --duration 30s
  allot demo load --url http://127.0.0.1:8081/chat/ --trace azure-code --rps 60 --duration 5m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if trace != "" {
				reqs, err := readTrace(traceDir, trace, cfg.RPS, rateScale, cfg.Duration, cfg.Seed)
				if err != nil {
					return Usage(err)
				}
				cfg.Trace = reqs
			}
			if cfg.URL == "" || (cfg.RPS <= 0 && cfg.Trace == nil) || cfg.Duration <= 0 {
				return Usage(errors.New("demo load needs --url, --rps above 0 or --trace, and --duration above 0"))
			}
			res, err := demo.Load(cmd.Context(), cfg)
			fmt.Fprintln(cmd.OutOrStdout(), res)
			if err != nil {
				return fmt.Errorf("demo load: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.URL, "url", "", "URL to GET")
	f.Float64Var(&cfg.RPS, "rps", 0, "mean arrival rate, requests per second")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long requests arrive")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "limit of one request")
	f.IntVar(&cfg.MaxInFlight, "max-in-flight", 10_000, "requests outstanding at most; arrivals beyond are dropped")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the arrival times")
	f.StringVar(&trace, "trace", "", "replay a trace instead of Poisson arrivals: azure-code or azure-conv")
	f.StringVar(&traceDir, "trace-dir", "data/traces/azure-llm", "directory of the Azure LLM inference trace files")
	f.Float64Var(&rateScale, "rate-scale", 1, "with --trace and without --rps: replay at this times the trace's mean rate")
	return cmd
}

// traceFiles names the file of each trace demo load replays.
var traceFiles = map[string]string{
	"azure-code": "AzureLLMInferenceTrace_code.csv",
	"azure-conv": "AzureLLMInferenceTrace_conv.csv",
}

// readTrace returns the requests of a load that replays trace name (read
// from dir) for d at rps requests/s, or, when rps is 0, at scale times the
// trace's own mean rate. The arrivals are the simulator's
// (serving.Arrivals): the trace's gaps normalised minute by minute to a
// mean of one and read in blocks from random offsets drawn from seed, so
// the load keeps the trace's bursts and token counts at a rate that is
// steady over minutes, as the simulator replays it.
func readTrace(dir, name string, rps, scale float64, d time.Duration, seed uint64) ([]demo.TraceRequest, error) {
	file, ok := traceFiles[name]
	if !ok {
		return nil, fmt.Errorf("--trace %q: want azure-code or azure-conv", name)
	}
	if !(scale > 0) || scale > 1e6 {
		return nil, fmt.Errorf("--rate-scale %g: want a number above 0 and at most 1,000,000", scale)
	}
	reqs, err := azurellm.ReadRequestsFile(filepath.Join(dir, file))
	if err != nil {
		return nil, notHere(err, "--trace-dir")
	}
	p, err := azurellm.NewPattern(reqs, time.Minute)
	if err != nil {
		return nil, err
	}
	rate := rps
	if rate <= 0 {
		rate = scale * float64(len(reqs)-1) / (reqs[len(reqs)-1].At - reqs[0].At).Seconds()
	}
	if n := rate * d.Seconds(); n > maxTraceRequests {
		return nil, fmt.Errorf("--duration %s at %.0f requests/s is %.0f requests, over %d: shorten it", d, rate, n, maxTraceRequests)
	}
	var out []demo.TraceRequest
	prev := 0.0
	servemodel.NewArrivals(p, rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))).Span(0, d.Seconds(), rate, 1, func(at float64, ctx, gen int) {
		out = append(out, demo.TraceRequest{Gap: time.Duration((at - prev) * float64(time.Second)), Context: ctx, Generated: gen})
		prev = at
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("--trace %s: no request arrives in %s at %.2f requests/s", name, d, rate)
	}
	return out, nil
}

// maxTraceRequests bounds the requests a traced load holds.
const maxTraceRequests = 20_000_000

func newDemoTrainCmd() *cobra.Command {
	cfg := demo.TrainConfig{}
	cmd := &cobra.Command{
		Use:   "train [--steps N] [--step-time D] [--checkpoint-every K] [--elastic]",
		Short: "Run stand-in training steps that checkpoint and resume",
		Long: `train runs --steps steps of --step-time each, printing a made-up loss, and
exits 0 after the last. It checkpoints the way allot's agent expects: every
--checkpoint-every steps it writes step-NNNNNNNN.json into
$ALLOT_CHECKPOINT_DIR and that file's name into $ALLOT_CHECKPOINT_DIR/
CHECKPOINT, which the agent reports as the job's checkpoint; the next attempt
gets it as $ALLOT_RESUME_FROM, and train starts from the step it holds.

On SIGTERM (a preemption, a cancel) it writes a checkpoint of its last
finished step and exits 143, so a preempted job loses at most one step. On
Ctrl-C it does the same and exits 130.

In a gang ($ALLOT_WORLD_SIZE > 1) the ranks take their steps in lockstep, as
data-parallel training does: rank 0 listens on $ALLOT_MASTER_ADDR:
$ALLOT_MASTER_PORT, and a step counts only when every rank finished it. So
every rank stops at the same step and saves its own part of the same
checkpoint into its own $ALLOT_CHECKPOINT_DIR, the agent reports each part,
and the job's next attempt resumes every rank from that step. Rank 0 refuses
to start a gang whose ranks would resume from different steps.

--elastic is for an elastic job (elastic: in a job file, or job run
--instances A-B), which a resize restarts with another $ALLOT_WORLD_SIZE:
rank 0 alone saves the whole job's checkpoint into $ALLOT_JOB_CHECKPOINT_DIR
(on a shared checkpoint root, as allot up has), which an attempt of any world
size resumes from, and a step, a fixed amount of work, goes faster with more
instances: W instances take --step-time / (W / (1 + 0.05 (W-1))) a step,
95% efficiency per instance added. Every step's line says the world size:
"step 120/1000 loss 0.4132 world 4".`,
		Example: `  allot demo train --steps 100 --step-time 1s --checkpoint-every 10
  ALLOT_CHECKPOINT_DIR=/tmp/ck allot demo train --steps 20 --step-time 100ms
  allot job run --instances 2-6 --gpus 8 -- allot demo train --elastic --steps 10000   # grows and shrinks`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Steps < 0 || cfg.CheckpointEvery < 0 || cfg.StepTime < 0 {
				return Usage(errors.New("--steps, --step-time and --checkpoint-every must not be negative"))
			}
			cfg.CheckpointDir, cfg.ResumeFrom = os.Getenv("ALLOT_CHECKPOINT_DIR"), os.Getenv("ALLOT_RESUME_FROM")
			cfg.JobID, cfg.Attempt = os.Getenv("ALLOT_JOB_ID"), os.Getenv("ALLOT_ATTEMPT")
			cfg.JobCheckpointDir = os.Getenv("ALLOT_JOB_CHECKPOINT_DIR")
			if world, _ := strconv.Atoi(os.Getenv("ALLOT_WORLD_SIZE")); world > 1 {
				cfg.WorldSize = world
				cfg.Rank, _ = strconv.Atoi(os.Getenv("ALLOT_RANK"))
				cfg.Master = net.JoinHostPort(os.Getenv("ALLOT_MASTER_ADDR"), os.Getenv("ALLOT_MASTER_PORT"))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "training %s: %d steps of %s (%s)\n", replicaName(), cfg.Steps, cfg.StepTime, gpuText())

			// Tell SIGTERM from Ctrl-C: the first is a preemption (143), the
			// second a person (130). The signal is also checked after the run,
			// as the parent context (main's) may end first.
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGTERM)
			defer signal.Stop(sigs)
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			var termed atomic.Bool
			go func() {
				select {
				case <-sigs:
					termed.Store(true)
					cancel()
				case <-ctx.Done():
				}
			}()
			step, err := demo.Train(ctx, cfg, out)
			if !errors.Is(err, demo.ErrStopped) {
				return err
			}
			select {
			case <-sigs:
				termed.Store(true)
			default:
			}
			if termed.Load() {
				return exitError{code: 128 + int(syscall.SIGTERM), err: fmt.Errorf("demo train: stopped by SIGTERM after step %d", step)}
			}
			return exitError{code: 128 + int(syscall.SIGINT), err: fmt.Errorf("demo train: interrupted after step %d", step)}
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Steps, "steps", 100, "steps in all, counting those before a resume")
	f.DurationVar(&cfg.StepTime, "step-time", time.Second, "time one step takes")
	f.IntVar(&cfg.CheckpointEvery, "checkpoint-every", 10, "steps between checkpoints; 0 checkpoints only when stopped")
	f.BoolVar(&cfg.Elastic, "elastic", false, "run as an elastic job: rank 0 saves the job's checkpoint in $ALLOT_JOB_CHECKPOINT_DIR for any world size, and more instances take more steps per second")
	return cmd
}

// replicaName names this process by its job and attempt, "local" outside
// allot.
func replicaName() string {
	job, attempt := os.Getenv("ALLOT_JOB_ID"), os.Getenv("ALLOT_ATTEMPT")
	switch {
	case job == "":
		return "local"
	case attempt == "":
		return job
	}
	return job + "." + attempt
}

// gpuText says which GPUs allot gave the process.
func gpuText() string {
	gpus := os.Getenv("CUDA_VISIBLE_DEVICES")
	if gpus == "" {
		return "no GPUs"
	}
	s := "GPUs " + strings.ReplaceAll(gpus, ",", ", ")
	if milli := os.Getenv("ALLOT_GPU_MILLI"); milli != "" {
		s += " at " + milli + "/1000 each"
	}
	return s
}

func newDemoGPUsCmd() *cobra.Command {
	var dev string
	var gpus, devices int
	cmd := &cobra.Command{
		Use:   "gpus [--gpus N] [--devices N]",
		Short: "Print the GPUs this process sees, and check how many",
		Long: `gpus prints what this process sees of the host's GPUs, in two lines:
CUDA_VISIBLE_DEVICES=… (the GPUs allot gave the job, by UUID), and
gpu-devices=nvidia0,nvidia2 control=nvidiactl,… (the GPU device nodes in
/dev, one per GPU, by the driver's minor number, and the driver's other
nodes). In a container allot gives only the instance's GPUs, so both name
the instance's GPUs and no other: scripts/gpu-check.sh --image runs it from
the demo image (which has no shell) and compares it with the host's GPUs.

With --gpus N it exits 1 unless CUDA_VISIBLE_DEVICES names N distinct
GPUs, with --devices N unless /dev holds N GPU device nodes.`,
		Example: `  allot job run --image "$(allot demo image build --dir /var/lib/allot/images/demo)" --gpus 2 -- allot demo gpus --gpus 2 --devices 2`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := demo.SeeGPUs(dev, os.Getenv("CUDA_VISIBLE_DEVICES"))
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), v)
			if err := v.Check(gpus, devices); err != nil {
				return exitError{code: 1, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dev, "dev", "/dev", "where the device nodes lie")
	cmd.Flags().IntVar(&gpus, "gpus", -1, "how many GPUs CUDA_VISIBLE_DEVICES must name (-1: not checked)")
	cmd.Flags().IntVar(&devices, "devices", -1, "how many GPU device nodes /dev must hold (-1: not checked)")
	return cmd
}
