package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/gateway"
)

func newBenchGatewayCmd() *cobra.Command {
	var rate float64
	var phase time.Duration
	var output, direct, through, cpuProfile string
	var inProcess bool
	var procs int
	cmd := &cobra.Command{
		Use:   "gateway [--rps 2000] [--duration 10s] [--in-process]",
		Short: "Measure the latency allot gateway adds to a request",
		Long: `gateway measures the latency a gateway adds to a request: the same load
sent straight to a replica and through a gateway in front of it, and the
difference. It starts, on loopback, a replica (allot demo serve without a
service time, 64 slots) and a gateway (the code and the server of allot
gateway, with a static route to that replica), then sends Poisson arrivals
at --rps (an open loop: an arrival does not wait for earlier answers) for
--duration straight to the replica, then through the gateway, then both
again. It prints each way's latency percentiles over its two phases, as the
load generator saw them (from before the request is sent to the end of the
answer), and what the gateway added: through minus direct, at p50 and p99.
Both ways are measured by the same generator in the same run, so what the
machine does besides costs both.

By default each of the three runs in a process of its own, as in
production, where the gateway has its process (and its garbage collector)
to itself: the gateway in this one, the replica and the load generator in
two processes of this executable (allot demo serve, and allot bench gateway
--direct --through). They still share this machine's cores, and every
hop wakes another process, as it does in production. It also prints the
processor time the gateway's process spent during the phases, per request
through it. --gateway-procs N runs the gateway on N threads at a time
(GOMAXPROCS), as a container limited to N cores would.

--in-process runs all three in this process (the figure of earlier
versions): they share its cores and its garbage collector, and a request
passes from one to the next without waking another process.

--direct URL --through URL measures two URLs that already serve (a replica
and a gateway's URL for it) with the same phases, starting nothing.`,
		Example: `  allot bench gateway --rps 2000 --duration 10s
  allot bench gateway --rps 2000 --duration 10s --gateway-procs 1
  allot bench gateway --rps 2000 --duration 10s --in-process
  allot bench gateway --direct http://10.0.0.7:9000/ --through http://10.0.0.2:8000/chat/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(rate > 0) || phase <= 0 {
				return Usage(errors.New("--rps and --duration must be above 0"))
			}
			if (direct == "") != (through == "") {
				return Usage(errors.New("--direct and --through go together"))
			}
			if direct != "" && inProcess {
				return Usage(errors.New("--in-process starts a replica and a gateway; --direct and --through measure running ones"))
			}
			if procs < 0 || (procs > 0 && (inProcess || direct != "")) {
				return Usage(errors.New("--gateway-procs is 0 or more, and only for a gateway in a process of its own (not with --in-process, --direct or --through)"))
			}
			f, err := parseFormat(output)
			if err != nil {
				return Usage(err)
			}
			stopProfile, err := startProfile(cpuProfile)
			if err != nil {
				return err
			}
			var res gateway.BenchResult
			switch {
			case direct != "":
				for _, u := range []string{direct, through} {
					if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
						return Usage(fmt.Errorf("%q: want an http or https URL", u))
					}
				}
				res, err = gateway.Compare(cmd.Context(), direct, through, rate, phase)
				res.Setup = "the load generator in this process, to the URLs given"
			case inProcess:
				res, err = gateway.Bench(cmd.Context(), gateway.BenchConfig{Rate: rate, Phase: phase})
				res.Setup = fmt.Sprintf("one process on %d cores: the load generator, the gateway and the replica (demo server, no service time, 64 slots) share its cores and its garbage collector", runtime.NumCPU())
			default:
				if procs > 0 {
					runtime.GOMAXPROCS(procs)
				}
				res, err = benchGatewaySplit(cmd.Context(), rate, phase, cmd.ErrOrStderr())
				res.Setup = fmt.Sprintf("three processes on %d cores: the gateway (this one, GOMAXPROCS %d), the replica (allot demo serve, no service time, 64 slots) and the load generator (allot bench gateway --direct --through)",
					runtime.NumCPU(), runtime.GOMAXPROCS(0))
			}
			stopProfile()
			if err != nil {
				return err
			}
			return show(cmd.OutOrStdout(), f, res, func() printer { return lines(res.String()) })
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&rate, "rps", 2000, "arrival rate, requests/s")
	fl.DurationVar(&phase, "duration", 10*time.Second, "length of each of the four phases")
	fl.BoolVar(&inProcess, "in-process", false, "run the replica and the load generator in this process, beside the gateway")
	fl.IntVar(&procs, "gateway-procs", 0, "GOMAXPROCS of the gateway's process, as a container's CPU limit would set it (0: Go's default, the cores this process may use)")
	fl.StringVar(&direct, "direct", "", "measure this running replica's URL against --through, starting nothing")
	fl.StringVar(&through, "through", "", "a running gateway's URL for the replica of --direct")
	fl.StringVarP(&output, "output", "o", "table", "output: table, json or yaml")
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the gateway's, by default) to this file")
	_ = fl.MarkHidden("cpuprofile")
	return cmd
}

// benchGatewaySplit is bench gateway with the replica and the load
// generator each in a process of its own (this executable), the gateway in
// this one. What the replica says on standard error goes to stderr; what
// the generator says there, to the error when it fails.
func benchGatewaySplit(ctx context.Context, rate float64, phase time.Duration, stderr io.Writer) (gateway.BenchResult, error) {
	self, err := os.Executable()
	if err != nil {
		return gateway.BenchResult{}, fmt.Errorf("bench gateway: find this executable: %w", err)
	}
	repCtx, stop := context.WithCancel(ctx)
	defer stop()
	rep := exec.CommandContext(repCtx, self, "demo", "serve", "--listen", "127.0.0.1:0", "--service-time", "0",
		"--concurrency", "64", "--report-every", "1h")
	rep.Cancel = func() error { return rep.Process.Signal(syscall.SIGTERM) }
	rep.WaitDelay = 10 * time.Second
	rep.Stderr = stderr
	out, err := rep.StdoutPipe()
	if err != nil {
		return gateway.BenchResult{}, err
	}
	if err := rep.Start(); err != nil {
		return gateway.BenchResult{}, fmt.Errorf("bench gateway: start the replica: %w", err)
	}
	defer func() { stop(); _ = rep.Wait() }()
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil {
		return gateway.BenchResult{}, fmt.Errorf("bench gateway: the replica said %q: %w", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	addr, ok := listeningOn(line)
	if !ok {
		return gateway.BenchResult{}, fmt.Errorf("bench gateway: the replica said %q, not where it listens", line)
	}
	load := func(ctx context.Context, direct, through string) (gateway.BenchResult, error) {
		gen := exec.CommandContext(ctx, self, "bench", "gateway", "--direct", direct, "--through", through,
			"--rps", strconv.FormatFloat(rate, 'g', -1, 64), "--duration", phase.String(), "-o", "json")
		cpu0 := cpuTime()
		data, err := gen.Output() // its stderr, kept, goes into the error
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) && len(exit.Stderr) > 0 {
				err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
			}
			return gateway.BenchResult{}, fmt.Errorf("bench gateway: the load generator: %w", err)
		}
		cpu := cpuTime() - cpu0
		var res gateway.BenchResult
		if err := json.Unmarshal(data, &res); err != nil {
			return gateway.BenchResult{}, fmt.Errorf("bench gateway: the load generator's result: %w", err)
		}
		if res.Through.Sent > 0 {
			res.GatewayCPU = cpu / time.Duration(res.Through.Sent)
		}
		return res, nil
	}
	return gateway.Bench(ctx, gateway.BenchConfig{Rate: rate, Phase: phase, Replica: addr, Load: load})
}

// listeningOn reads the address from allot demo serve's first line,
// "listening on http://ADDR (…)".
func listeningOn(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "listening on http://")
	if !ok {
		return "", false
	}
	addr, _, _ := strings.Cut(rest, " ")
	addr = strings.TrimSpace(addr)
	return addr, addr != ""
}

// lines is text printed as it is.
type lines string

func (l lines) print(w io.Writer) error {
	_, err := fmt.Fprintln(w, string(l))
	return err
}
