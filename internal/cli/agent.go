package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/agent"
	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/agent/shim"
	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/server"
)

type agentFlags struct {
	nodes       []string
	gpus        string
	data        string
	work        string
	address     string
	heartbeat   time.Duration
	wait        time.Duration
	nodeTimeout time.Duration
	keepFiles   time.Duration
	tokenFile   string
	uidRange    string
	runAs       string
	logLevel    string
	// --health-check and its interval and timeout
	healthCheck        string
	healthCheckEvery   time.Duration
	healthCheckTimeout time.Duration
	gpuHealth          bool
	checkpointRoot     string
	jobEnv             []string // --job-env NAME[=VALUE]
	jobEnvMap          map[string]string
	onExit             string // --on-exit leave|stop
	jobs               jobLimitFlags
	containers         runtimeFlags
}

// errTokenInArgv is the answer to 'allot agent --token' and 'allot
// gateway --token'.
var errTokenInArgv = errors.New("--token is refused: a daemon runs for long, and its command line is world-readable " +
	"(/proc/PID/cmdline), jobs included; pass the token in $ALLOT_TOKEN or with --token-file FILE (mode 0600)")

// agentToken is the agent's token: from --token-file, else $ALLOT_TOKEN
// (then removed from the environment), else the CLI's config file.
func agentToken(conn *connection, f agentFlags) (server, token string, err error) {
	return daemonToken(conn, f.tokenFile, "a node token: allot token create --node NAME")
}

// daemonToken is the token of a long-running command (the agent, the
// gateway): from tokenFile, else $ALLOT_TOKEN (then removed from the
// environment, so that nothing it starts inherits it), else the CLI's
// config file; which names the token it needs in the error without one.
func daemonToken(conn *connection, tokenFile, which string) (server, token string, err error) {
	if conn.token != "" {
		return "", "", Usage(errTokenInArgv)
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", "", Usage(fmt.Errorf("--token-file: %w", err))
		}
		if conn.token = strings.TrimSpace(string(b)); conn.token == "" {
			return "", "", Usage(fmt.Errorf("--token-file %s is empty", tokenFile))
		}
	}
	server, token, err = conn.resolve(os.Getenv)
	_ = os.Unsetenv("ALLOT_TOKEN")
	if err == nil && token == "" {
		err = Usage(fmt.Errorf("no token: pass it in $ALLOT_TOKEN or with --token-file FILE (%s)", which))
	}
	return server, token, err
}

// jobUsers is how the agent runs its jobs, from --uid-range and --run-as.
func jobUsers(f agentFlags) (agent.UIDRange, *syscall.Credential, error) {
	r, err := agent.ParseUIDRange(f.uidRange)
	if err != nil {
		return r, nil, Usage(fmt.Errorf("--uid-range: %w", err))
	}
	if f.runAs == "" {
		return r, nil, nil
	}
	u, err := user.Lookup(f.runAs)
	if err != nil {
		return r, nil, Usage(fmt.Errorf("--run-as: %w", err))
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if uid == 0 {
		return r, nil, Usage(errors.New("--run-as: jobs may not run as root"))
	}
	c := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	gids, _ := u.GroupIds()
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil && n != gid {
			c.Groups = append(c.Groups, uint32(n))
		}
	}
	return r, c, nil
}

func newAgentCmd() *cobra.Command {
	conn := &connection{}
	f := agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent --server URL --token-file FILE --node NAME [--gpus auto|virtual:8xH100-80GB] [--data DIR] [--work DIR]",
		Short: "Run the node agent of a GPU host",
		Long: `agent runs a fleet node for an allot server started with --agents external:
it discovers the node's GPUs, registers them (the node must be in the fleet
file and its GPUs must match the node's SKU), heartbeats, and runs the
attempts the server assigns with CUDA_VISIBLE_DEVICES and allot's ALLOT_*
variables. It reports starts, exits, checkpoints (a path written to
$ALLOT_CHECKPOINT_DIR/CHECKPOINT) and ships the logs.

The token comes from --token-file or $ALLOT_TOKEN, never the command line
(/proc/PID/cmdline is world-readable). Give each host its node's token
(allot token create --node NAME): it can act for that node only, where the
admin token can do anything.

Jobs are hostile code to the agent. They get a fresh environment (PATH,
LANG, HOME, the --job-env variables and their own env, never the rest of
the agent's), run in WORK/jobs/NAME
(their checkpoints/ and a fresh attempt-N directory; NAME is a hash of the
job's ID, and each instance's cgroup a random token, so that other users
of the host see no job names), and cannot reach DATA (0700: the agent's
state records and logs). Run as root, the agent
runs each job under a uid of its own from --uid-range (no passwd entry
needed) and tracks its processes in a cgroup v2 where the host has one;
not root, jobs run as the agent's user and can read its files and signal
it. Each job runs under a small supervisor of its own (the agent's
executable, as slurmstepd runs for slurmd and containerd-shim for kubelet)
that holds its log and learns its exit, so the job does not depend on the
agent process. An agent that cannot reach the server for --node-timeout stops
its jobs: the server runs them elsewhere.

An agent that exits (SIGINT, SIGTERM) leaves its jobs running by default
(--on-exit leave), and its next run with the same --data adopts them: it
registers, then takes back every job the server still runs here (its log
goes on from where the server has it, its exit is reported), and kills
those the server gave up meanwhile. So restart or upgrade an agent
(stop it, replace the binary, start it) within --node-timeout, and no job
notices. A job whose agent stays away longer is stopped by its supervisor
(SIGTERM, its grace, SIGKILL) when --node-timeout passes, as the server
then requeues it elsewhere; with --node-timeout 0 it runs on until an
agent comes back. --on-exit stop stops every job before the agent exits
instead (a host being retired, a test): SIGTERM, then SIGKILL of all their
processes after each job's grace or --stop-timeout, whichever is shorter,
so that none outlives it; what they report while stopping (their last
output, a checkpoint saved on SIGTERM, their end) reaches the server
before the agent exits, and each job is requeued without a retry counted.

A job may have --job-pids processes and threads on the host at once (its
cgroup's pids.max; where the cgroup has no pids controller and the agent
is root, RLIMIT_NPROC of the job's own uid): a fork past it fails in the
job. Its logs may hold --job-log-mib MiB on the host, all attempts
together: past it the log says so, and the rest of its output here is
dropped while the job runs on.

--gpus auto asks NVML for the GPUs, falling back to nvidia-smi ('allot
agent discover' shows what it finds, and the SKUs it fits, before the host
joins); virtual:COUNTxMODEL[-MEMGB] declares GPUs for hosts without them
(tests, demos). --node may be repeated to run several virtual nodes in one
process; each then keeps its files in DATA/NODE and WORK/NODE.

A job's files (WORK/jobs/NAME, its checkpoints there) and its logs
(DATA/logs/JOB) are removed --keep-job-files (7 days) after its last
instance on the host ended, so that the disk does not fill with the
leftovers of every job the host ran. Before it removes any, the agent asks
the server, and keeps the files of jobs that have not ended and ran here:
a preempted job queued for longer still finds its checkpoint when it comes
back (the scheduler sends it back to the node of its checkpoint when it
can). A checkpoint on another node's disk is not handed to an attempt
here: the attempt starts without ALLOT_RESUME_FROM, and its log says why.

--checkpoint-root DIR, a directory every host mounts at the same path (NFS,
Lustre; owned by the agent's user, mode 0711), puts each job's checkpoint
directory at DIR/NAME instead: its checkpoints are reported without a node,
and a job resumes from its last one on whichever host runs it next.

--health-check CMD runs CMD (with sh -c, ALLOT_NODE set) when the agent
starts and every --health-check-every, as Slurm's HealthCheckProgram: exit 0
means the host is fit for work. A failure, or no answer within
--health-check-timeout, drains the node with the command's output as the
reason ('allot node list' shows it, by health-check); the work on it runs
on, nothing new lands there, and the next passing check resumes it. A drain
of anyone else is left alone. Check what jobs cannot see: a full disk, a
missing mount, a failing DCGM diagnostic.

--gpu-health (on with --gpus auto) reads the GPUs through NVML at the same
times, with or without --health-check: a GPU gone, uncorrectable ECC errors,
pages or rows waiting for a reset, a failed row remap, or a critical XID
since the agent started (the XIDs an application causes, 13, 31, 43, 45, 68
and 109, aside) drain the node as a failing check does, naming the GPU.
Restart the agent after resetting a GPU that reported an XID.

A job that names an image (image: in its file, job run --image) runs in a
container of --runtime: podman as root (auto: where it is installed;
crun or runc: podman with that OCI runtime, as --oci-runtime sets), one
'podman run' per instance, pulled before it starts. The container runs as
the job's own uid, gets the instance's GPUs alone (their CDI names where
the host has an NVIDIA CDI spec, else their device nodes), its CPU, memory
and process limits, the host's network, no capabilities, the job's work
directory at /allot/work and its checkpoints at /allot/checkpoints, and
the host directories its mounts name only under a --mount-allow
directory; a local image (oci:/PATH) only under an --image-dir. A pull
that fails is reported as ImagePullFailed with the registry's message
('allot job why'); the server retries it after a back-off.`,
		Example: `  allot token create --node eastus-h100-01 > /etc/allot/node-token   # on the control plane; copy it over, mode 0600
  sudo allot agent --server http://10.0.0.1:8080 --token-file /etc/allot/node-token --node eastus-h100-01 \
      --gpus auto --data /var/lib/allot-agent --work /var/lib/allot-work
  ALLOT_TOKEN=$(cat admin-token) allot agent --node n1 --node n2 --gpus virtual:8xH100-80GB --data /tmp/agents
  sudo allot agent ... --health-check 'dcgmi diag -r 1 >/dev/null && test "$(df --output=pcent /scratch | tail -1 | tr -dc 0-9)" -lt 95'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.jobs.check(); err != nil {
				return err
			}
			server, token, err := agentToken(conn, f)
			if err != nil {
				return err
			}
			uids, runAs, err := jobUsers(f)
			if err != nil {
				return err
			}
			cl, err := conn.newClient(server, token, os.Getenv)
			if err != nil {
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
				return Usage(fmt.Errorf("--log-level: %w", err))
			}
			if f.keepFiles < 0 {
				return Usage(fmt.Errorf("--keep-job-files %s: want 0 (for ever) or more", f.keepFiles))
			}
			if f.healthCheckEvery <= 0 || f.healthCheckTimeout <= 0 {
				return Usage(fmt.Errorf("--health-check-every %s, --health-check-timeout %s: want durations above 0", f.healthCheckEvery, f.healthCheckTimeout))
			}
			if f.jobEnvMap, err = parseJobEnv(f.jobEnv, os.LookupEnv); err != nil {
				return Usage(err)
			}
			if f.onExit != string(agent.OnExitLeave) && f.onExit != string(agent.OnExitStop) {
				return Usage(fmt.Errorf("--on-exit %q: want leave or stop", f.onExit))
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			rt, err := agentRuntime(f.containers, runtime.FindPodman, log)
			if err != nil {
				return Usage(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runAgents(ctx, cl, f, uids, runAs, rt, log)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&conn.server, "server", "", "API server URL, or several comma-separated, tried in turn (default $ALLOT_SERVER, else "+DefaultServer+")")
	fl.StringVar(&conn.token, "token", "", "refused: use $ALLOT_TOKEN or --token-file")
	_ = fl.MarkHidden("token")
	fl.StringVar(&conn.ca, "ca-file", "", "PEM file of the authority an https server's certificate must chain to (default $ALLOT_CA, else the system's)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the agent's token, best a node token (default $ALLOT_TOKEN)")
	fl.StringArrayVar(&f.nodes, "node", nil, "fleet node this agent runs (required; repeatable)")
	fl.StringVar(&f.gpus, "gpus", "auto", "auto (NVML, else nvidia-smi) or virtual:COUNTxMODEL[-MEMGB]")
	fl.StringVar(&f.data, "data", "./allot-agent", "the agent's own directory (made 0700): state records and logs")
	fl.StringVar(&f.work, "work", "", "directory of the jobs' checkpoints and working directories, outside --data (default: allot-work-HASH of --data in $TMPDIR)")
	fl.StringVar(&f.uidRange, "uid-range", fmt.Sprintf("%d-%d", agent.DefaultUIDRange.First, agent.DefaultUIDRange.Last), "as root: dynamic uids jobs run as, one per job")
	fl.StringVar(&f.runAs, "run-as", "", "as root: run every job as this user instead of a uid of its own (weaker: jobs share a uid)")
	fl.DurationVar(&f.nodeTimeout, "node-timeout", server.DefaultNodeTimeout, "must match the server's --node-timeout: unable to reach the server this long, the agent stops its jobs, and a job whose agent is gone this long is stopped by its supervisor (0: neither)")
	fl.StringVar(&f.address, "address", "", "address gangs' rank 0 listens on (default: the host name)")
	fl.DurationVar(&f.heartbeat, "heartbeat", agent.DefaultHeartbeat, "interval of heartbeats (keep it well under the server's --node-timeout)")
	fl.DurationVar(&f.wait, "wait", agent.DefaultWait, "how long one assignments long-poll waits")
	fl.DurationVar(&f.keepFiles, "keep-job-files", agent.DefaultKeepJobFiles, "how long a job's files, checkpoints and logs stay on the host after it last ran here, once the job ended (checked hourly; 0: for ever)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringArrayVar(&f.jobEnv, "job-env", nil, "NAME=VALUE, or NAME for the agent's own value: a variable every job starts with, under its own env (repeatable; e.g. LD_LIBRARY_PATH where the driver's libraries are not in the loader's cache)")
	fl.StringVar(&f.checkpointRoot, "checkpoint-root", "", "a directory every host mounts at the same path (NFS, Lustre): jobs' checkpoint directories go there (ROOT/NAME), so a job resumes from its last checkpoint on any host (must be the agent's user's, mode 0711)")
	fl.StringVar(&f.onExit, "on-exit", string(agent.OnExitLeave), "what the agent's exit does to its jobs: leave (they run on, and its next run adopts them) or stop (SIGTERM, SIGKILL after their grace or --stop-timeout)")
	fl.BoolVar(&f.gpuHealth, "gpu-health", true, "with --gpus auto, also drain the node while NVML reports a GPU gone, uncorrectable ECC errors, pages or rows waiting for a GPU reset, a failed row remap, or a critical XID since the agent started (checked every --health-check-every)")
	fl.StringVar(&f.healthCheck, "health-check", "", "command (sh -c) that exits 0 when the host is fit for work; a failure drains the node, the next pass resumes it (as Slurm's HealthCheckProgram)")
	fl.DurationVar(&f.healthCheckEvery, "health-check-every", agent.DefaultHealthCheckEvery, "interval of --health-check")
	fl.DurationVar(&f.healthCheckTimeout, "health-check-timeout", agent.DefaultHealthCheckTimeout, "a --health-check that has not ended this long fails")
	f.containers.register(cmd)
	f.jobs.register(cmd)
	_ = cmd.MarkFlagRequired("node")
	cmd.AddCommand(newAgentDiscoverCmd(), newAgentShimCmd())
	return cmd
}

// newAgentShimCmd is the supervisor the agent runs each job under
// (package shim): the agent starts it, never a person, so it is hidden.
func newAgentShimCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "shim",
		Short:  "Supervise one job for the agent (started by the agent)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(*cobra.Command, []string) error {
			return shim.Main()
		},
	}
}

// parseJobEnv reads --job-env values: NAME=VALUE, or NAME for the value
// lookup (the agent's environment) gives it. allot's own variables are
// refused: it sets them per attempt, and ALLOT_TOKEN must never reach a job.
func parseJobEnv(list []string, lookup func(string) (string, bool)) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range list {
		name, value, set := strings.Cut(kv, "=")
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("--job-env %q: want NAME=VALUE or NAME, NAME of letters, digits and _", kv)
		}
		if strings.HasPrefix(name, "ALLOT_") || name == "CUDA_VISIBLE_DEVICES" || name == "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" ||
			name == "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" {
			return nil, fmt.Errorf("--job-env %s: allot sets it for each attempt", name)
		}
		if !set {
			if value, set = lookup(name); !set {
				return nil, fmt.Errorf("--job-env %s: not set in the agent's environment; give NAME=VALUE", name)
			}
		}
		env[name] = value
	}
	return env, nil
}

// envName is a variable's name as a shell writes it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// runAgents runs one agent per node until ctx ends.
func runAgents(ctx context.Context, cl *client.Client, f agentFlags, uids agent.UIDRange, runAs *syscall.Credential, rt runtime.Runtime, log *slog.Logger) error {
	if f.address == "" {
		f.address, _ = os.Hostname()
	}
	if cl.HTTP.Timeout > 0 && cl.HTTP.Timeout < f.wait+15*time.Second {
		cl.HTTP.Timeout = f.wait + 15*time.Second
	}
	type node struct {
		name   string
		gpus   gpu.Discoverer
		health gpu.Health
		data   string
		work   string
	}
	if f.work == "" {
		f.work = agent.DefaultWork(f.data)
	}
	var nodes []node
	for _, n := range f.nodes {
		var d gpu.Discoverer = gpu.DefaultAuto()
		var health gpu.Health
		if f.gpuHealth && f.gpus == "auto" {
			health = &gpu.NVMLHealth{}
		}
		if f.gpus != "auto" {
			v, err := gpu.ParseVirtual(f.gpus, n)
			if err != nil {
				return Usage(err)
			}
			d = v
		}
		data, work := f.data, f.work
		if len(f.nodes) > 1 {
			data, work = filepath.Join(f.data, n), filepath.Join(f.work, n)
		}
		nodes = append(nodes, node{n, d, health, data, work})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := agent.Config{Client: cl, Node: n.name, GPUs: n.gpus, Data: n.data, Work: n.work,
				UIDs: uids, RunAs: runAs, Address: f.address, Heartbeat: f.heartbeat, Wait: f.wait,
				NodeTimeout: f.nodeTimeout, KeepJobFiles: off(f.keepFiles), HealthCheck: f.healthCheck,
				HealthCheckEvery: f.healthCheckEvery, HealthCheckTimeout: f.healthCheckTimeout, GPUHealth: n.health, CheckpointRoot: f.checkpointRoot, JobEnv: f.jobEnvMap,
				OnExit: agent.OnExit(f.onExit), Runtime: rt, MountAllow: f.containers.mountAllow, ImageDirs: f.containers.imageDirs,
				ImageCacheBytes: f.containers.cacheBytes(), Logger: log}
			f.jobs.apply(&cfg)
			err := agent.Run(ctx, cfg)
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
