package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/agent"
	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/client"
)

type agentFlags struct {
	nodes     []string
	gpus      string
	data      string
	address   string
	heartbeat time.Duration
	wait      time.Duration
	logLevel  string
}

func newAgentCmd() *cobra.Command {
	conn := &connection{}
	f := agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent --server URL --token T --node NAME [--gpus auto|virtual:8xH100-80GB] [--data DIR]",
		Short: "Run the node agent of a GPU host",
		Long: `agent runs a fleet node for an allot server started with --agents external:
it discovers the node's GPUs, registers them (the node must be in the fleet
file and its GPUs must match the node's SKU), heartbeats, and runs the
attempts the server assigns as process groups with CUDA_VISIBLE_DEVICES and
allot's ALLOT_* variables. It reports starts, exits, checkpoints (a path
written to $ALLOT_CHECKPOINT_DIR/CHECKPOINT) and ships the logs.

--gpus auto asks NVML for the GPUs, falling back to nvidia-smi;
virtual:COUNTxMODEL[-MEMGB] declares GPUs for hosts without them (tests,
demos). --node may be repeated to run several virtual nodes in one process;
each then keeps its files in DATA/NODE. The agent needs the admin token.`,
		Example: `  allot agent --server http://10.0.0.1:8080 --token "$ADMIN" --node eastus-h100-01 --gpus auto
  allot agent --node n1 --node n2 --gpus virtual:8xH100-80GB --data /tmp/agents`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server, token, err := conn.resolve(os.Getenv)
			if err != nil {
				return err
			}
			cl, err := client.New(server, token)
			if err != nil {
				return Usage(err)
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
				return Usage(fmt.Errorf("--log-level: %w", err))
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runAgents(ctx, cl, f, log)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&conn.server, "server", "", "API server URL (default $ALLOT_SERVER, else "+DefaultServer+")")
	fl.StringVar(&conn.token, "token", "", "the admin token (default $ALLOT_TOKEN)")
	fl.StringArrayVar(&f.nodes, "node", nil, "fleet node this agent runs (required; repeatable)")
	fl.StringVar(&f.gpus, "gpus", "auto", "auto (NVML, else nvidia-smi) or virtual:COUNTxMODEL[-MEMGB]")
	fl.StringVar(&f.data, "data", "./allot-agent", "directory of checkpoints, logs and pid files")
	fl.StringVar(&f.address, "address", "", "address gangs' rank 0 listens on (default: the host name)")
	fl.DurationVar(&f.heartbeat, "heartbeat", agent.DefaultHeartbeat, "interval of heartbeats (keep it well under the server's --node-timeout)")
	fl.DurationVar(&f.wait, "wait", agent.DefaultWait, "how long one assignments long-poll waits")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}

// runAgents runs one agent per node until ctx ends.
func runAgents(ctx context.Context, cl *client.Client, f agentFlags, log *slog.Logger) error {
	if f.address == "" {
		f.address, _ = os.Hostname()
	}
	if cl.HTTP.Timeout > 0 && cl.HTTP.Timeout < f.wait+15*time.Second {
		cl.HTTP.Timeout = f.wait + 15*time.Second
	}
	type node struct {
		name string
		gpus gpu.Discoverer
		data string
	}
	var nodes []node
	for _, n := range f.nodes {
		var d gpu.Discoverer = gpu.DefaultAuto()
		if f.gpus != "auto" {
			v, err := gpu.ParseVirtual(f.gpus, n)
			if err != nil {
				return Usage(err)
			}
			d = v
		}
		data := f.data
		if len(f.nodes) > 1 {
			data = filepath.Join(f.data, n)
		}
		nodes = append(nodes, node{n, d, data})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := agent.Run(ctx, agent.Config{Client: cl, Node: n.name, GPUs: n.gpus, Data: n.data, Address: f.address,
				Heartbeat: f.heartbeat, Wait: f.wait, Logger: log})
			if err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
