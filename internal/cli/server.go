package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/agent"
	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/api"
	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/gateway"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/seal"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store/etcd"
)

// serveFlags are the flags shared by allot server and allot up.
type serveFlags struct {
	data, listen, fleet, tenants string
	policies                     string
	store                        string // --store; "" is bolt in --data
	tick                         time.Duration
	rate                         float64
	burst                        int
	logLevel                     string
	agents                       string
	checkpointRoot               string // of the virtual agents; "none" for each node's own disk
	nodeTimeout                  time.Duration
	limits                       api.Limits // of the HTTP API; zero fields take the defaults
	maxLost                      int
	maxGrace                     time.Duration
	retryBackoff                 time.Duration // --retry-backoff
	drainAfterFailures           int           // --drain-after-failures
	logMemoryMiB                 int64
	maxJobsPerTenant             int
	jobRetention                 time.Duration
	auditRetention               time.Duration // --audit-retention
	regionMoveAfter              time.Duration
	minRunTime                   time.Duration
	priorityGap                  int
	holdAfter                    time.Duration
	resizeInterval               time.Duration // --resize-interval
	reservationLead              time.Duration
	earmarkLead                  time.Duration
	regionWeights                forecast.Weights
	checkIncremental             bool   // hidden: plan from scratch too and stop on a difference (tests)
	cpuProfile                   string // hidden: a CPU profile of the whole run into this file
	alertWebhook                 string
	alertEvery, alertFor         time.Duration // hidden (tests): evaluation interval, `for` of every rule
	tls                          tlsFlags
	advertise                    string        // --advertise-url
	termTTL                      time.Duration // --leader-ttl (hidden)
	jobs                         jobLimitFlags // of the in-process agents (--agents virtual)
	containers                   runtimeFlags  // of the in-process agents (--agents virtual)
	gatewayURL                   string        // --gateway-url: where callers reach the gateways
	gatewayListen                string        // up's --gateway-listen: its in-process gateway ("none": no gateway)
	gatewayReport                time.Duration // up's --gateway-report-every (hidden, tests)
	secretKey                    string        // --secret-key-file: seals registry credentials ("": DATA/secret-key)
}

func (f *serveFlags) register(cmd *cobra.Command, dataDefault string) {
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", dataDefault, "directory of the store and the admin token")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to serve the API on (port 0 picks a free one)")
	fl.StringVar(&f.secretKey, "secret-key-file", "", "key file (64 hex digits, mode 0600) the tenants' registry credentials are sealed with in the store, made when missing; servers sharing a store need the same one (default DATA/secret-key)")
	fl.StringVar(&f.fleet, "fleet", "examples/fleet.yaml", "fleet file")
	fl.StringVar(&f.tenants, "tenants", "examples/tenants.yaml", "tenants, partitions, quotas and reservations file")
	fl.StringVar(&f.policies, "policies", "", "operator policies file applied at start, unless it is the file applied at the previous start (docs/policies.md)")
	fl.DurationVar(&f.tick, "tick", server.DefaultTick, "interval of scheduling cycles when nothing happens")
	fl.Float64Var(&f.rate, "rate-limit", api.DefaultRate, "requests per second per tenant (0: no limit)")
	fl.IntVar(&f.burst, "rate-burst", api.DefaultBurst, "requests a tenant may make at once")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.Int64Var(&f.limits.MaxBody, "max-body", api.DefaultMaxBody, "largest request body, in bytes (413 over it)")
	fl.DurationVar(&f.limits.BodyTimeout, "body-timeout", api.DefaultBodyTimeout, "time a client may take to send a request body (408 after it)")
	fl.DurationVar(&f.limits.HeaderTimeout, "header-timeout", api.DefaultHeaderTimeout, "time a client may take to send a request's headers")
	fl.DurationVar(&f.limits.IdleTimeout, "idle-timeout", api.DefaultIdleTimeout, "time a kept-alive connection may wait for its next request")
	fl.IntVar(&f.limits.MaxHeaderBytes, "max-header-bytes", api.DefaultMaxHeaderBytes, "largest size of a request's headers, in bytes")
	fl.IntVar(&f.limits.MaxConns, "max-conns", 0, fmt.Sprintf("connections open at once; a new one past it takes the place of the one that has waited longest for its client (idle, or no request yet), or is closed at once when every one serves a request (0: %d, or half the open-file limit if lower)", api.DefaultMaxConns))
	fl.IntVar(&f.limits.MaxConnsPerAddr, "max-conns-per-addr", 0, "connections one source address (an IPv4 address, an IPv6 /64) may hold open before a request on them carries a valid token; a new one past it replaces the address's longest-waiting idle one, or is closed at once when none is idle (agents' and other authenticated connections are not counted; 0: half of --max-conns)")
	fl.DurationVar(&f.limits.MaxConnAge, "conn-max-age", api.DefaultMaxConnAge, "close a kept-alive connection after its first response once it is this old, so that requests cannot keep it open for ever (clients reconnect)")
	fl.Float64Var(&f.limits.UnauthRate, "unauth-rate", api.DefaultUnauthRate, "requests per second with a missing or unknown token per source address, 429 over it (0: no limit)")
	fl.IntVar(&f.limits.UnauthBurst, "unauth-burst", api.DefaultUnauthBurst, "requests with a missing or unknown token a source address may make at once")
	fl.Float64Var(&f.limits.JobRate, "job-rate", api.DefaultJobRate, "jobs per second a tenant may send in batches (POST /v1/jobs/batch, dry runs included): a batch takes one per job, 429 over it (0: no limit)")
	fl.IntVar(&f.limits.JobBurst, "job-burst", api.DefaultJobBurst, "jobs a tenant may send in batches at once; a larger batch waits until the budget is full")
	fl.Float64Var(&f.limits.AuditRate, "audit-rate", api.DefaultAuditRate, "requests per second a tenant may make that the audit log records (reservations created or deleted, quota requests), 429 over it (0: no limit)")
	fl.IntVar(&f.limits.AuditBurst, "audit-burst", api.DefaultAuditBurst, "requests that the audit log records a tenant may make at once")
	fl.DurationVar(&f.auditRetention, "audit-retention", server.DefaultAuditRetention, "delete audit records this long after they were written, e.g. 8760h (at least 24h; 0: keep them for ever)")
	fl.IntVar(&f.limits.MaxDryRuns, "max-dry-runs", api.DefaultMaxDryRuns, "dry runs (dry_run=true, of a job or a batch) one tenant may have running at once; more are 429")
	fl.DurationVar(&f.nodeTimeout, "node-timeout", server.DefaultNodeTimeout, "a node whose agent misses heartbeats this long becomes NotReady and its jobs are requeued")
	fl.DurationVar(&f.maxGrace, "max-grace", server.DefaultMaxGrace, "the longest checkpoint grace (time between SIGTERM and SIGKILL) a job or instance may ask for; a submit above it is refused, and processes that ignore SIGTERM are killed after it at the latest (1s to 1h)")
	fl.IntVar(&f.maxLost, "max-lost-attempts", server.DefaultMaxLost, "attempts of one job that may be lost with their node (with a doubling back-off from 10s between them) before the job fails")
	fl.IntVar(&f.drainAfterFailures, "drain-after-failures", server.DefaultDrainAfterFailures, "drain a node once attempts of this many jobs, of two tenants or more, failed on it within 10m and on no other node (a bad host, as a Slurm health check would find); one node in 10m and at most a tenth of the fleet is drained so; 'allot node resume' ends it (0: never)")
	fl.DurationVar(&f.retryBackoff, "retry-backoff", server.DefaultRetryBackoff, "hold a failed job this long before its first retry, twice as long before each next one, at most 5m (as a Kubernetes Job backs off; 0: retry at once)")
	fl.DurationVar(&f.jobRetention, "job-retention", 0, "delete jobs from the store this long after they ended, e.g. 2160h (at least 768h, 32 days: a month's budget reads the month's jobs); what they ran stays in per-day roll-ups that cost and usage reports by tenant, region or SKU read; reports by job then lack them and say so (0: keep them for ever)")
	fl.IntVar(&f.maxJobsPerTenant, "max-jobs-per-tenant", server.DefaultMaxJobsPerTenant, "jobs of one tenant that may be not ended at once (Slurm's MaxSubmitJobs); a tenant's submit past it is refused with QuotaExceeded, and its endpoints' replicas count too: a scale-out stops there (0: no bound)")
	fl.Int64Var(&f.logMemoryMiB, "log-memory-mib", server.DefaultLogMemory>>20, "MiB of job logs to keep in memory, all attempts together (the last MiB of each); over it the tenant holding the most loses its least recently written log first (the nodes keep the files)")
	fl.DurationVar(&f.regionMoveAfter, "region-move-after", server.DefaultRegionMoveAfter, "a queued job allowed in several regions that waited this long in the one chosen for it moves to another where it would start sooner (negative: never)")
	fl.Float64Var(&f.regionWeights.Price, "region-price-weight", forecast.DefaultWeights.Price, "hours of predicted wait one USD per GPU-hour is worth when ranking a job's regions")
	fl.Float64Var(&f.regionWeights.Distance, "region-distance-weight", forecast.DefaultWeights.Distance, "hours of predicted wait one step of distance from a job's data region is worth (1: same residency zone, 2: another)")
	fl.DurationVar(&f.minRunTime, "min-run-time", 0, "protect each attempt from preemption for this long after it starts, so that preemption cannot loop and resumed work makes progress (Slurm's PreemptExemptTime; 0: no protection; allot plan and allot sim use 10m)")
	fl.IntVar(&f.priorityGap, "priority-gap", 0, "let a queued job evict running work of its own tenant and priority class whose priority value is at least this much lower (reason BetterPriority; 0: off)")
	fl.DurationVar(&f.reservationLead, "max-reservation-lead", server.DefaultMaxReservationLead, "how far ahead a tenant's reservation may start: one a tenant creates to start later is refused (field start), so that no one buys capacity for the year 2999 (an administrator's is not bounded)")
	fl.DurationVar(&f.earmarkLead, "reservation-earmark", server.DefaultEarmarkLead, "how long before its start a reservation keeps its nodes from work that could not give them up in time; earlier, its nodes take any work, and work still on them at the start gives way as to an active reservation (0: from its creation)")
	fl.DurationVar(&f.holdAfter, "hold-after", 0, "let a queued job that has waited this long keep the nodes of one cluster where the least work stands in its way, until it starts, from work of its class or lower (spot work and other partitions' guaranteed work aside), so small jobs cannot starve a gang; work that checkpoints may use them meanwhile and is evicted when the job can start (0: off)")
	fl.DurationVar(&f.resizeInterval, "resize-interval", model.DefaultResizeInterval, "the least time between two resizes of an elastic job (elastic: in a job file, job run --instances A-B), counted from the start of its current attempt (an elastic job is protected from shrinks and eviction that long, if longer than --min-run-time); each resize restarts the job's ranks from its checkpoint")
	fl.BoolVar(&f.checkIncremental, "check-incremental", false, "also plan every cycle from scratch and exit if that Plan differs from the incremental one (tests; doubles a cycle's work)")
	_ = fl.MarkHidden("check-incremental")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the server's whole run to this file (benchmarks)")
	_ = fl.MarkHidden("cpuprofile")
	fl.StringVar(&f.alertWebhook, "alert-webhook", "", "URL to POST the built-in alerts to as JSON when they fire or resolve (docs/alerts.md); empty: log them only")
	fl.DurationVar(&f.alertEvery, "alert-every", server.DefaultAlertEvery, "interval of built-in alert evaluations")
	fl.DurationVar(&f.alertFor, "alert-for", 0, "replace the for duration of every alert rule that has one (tests; 0: the rules' own)")
	_ = fl.MarkHidden("alert-every")
	_ = fl.MarkHidden("alert-for")
	fl.StringVar(&f.checkpointRoot, "checkpoint-root", "", "with --agents virtual: the directory every virtual node shares for jobs' checkpoints (ROOT/JOB), as a fleet shares NFS or Lustre, so that a job resumes from its checkpoint on any node; 'none' keeps each node's on its own disk, so that a job resumes only where its parts lie (default: WORK/.checkpoints beside the virtual nodes' work directories)")
	f.jobs.register(cmd)
	f.containers.register(cmd)
	fl.StringVar(&f.gatewayURL, "gateway-url", "", "where callers reach the gateways in front of the endpoints (allot gateway, or a load balancer before several): an endpoint's URL is GATEWAY-URL/NAME/ (default with up: its own gateway's)")
}

func newServerCmd() *cobra.Command {
	f := serveFlags{}
	cmd := &cobra.Command{
		Use:   "server --data DIR --listen ADDR --fleet F --tenants T",
		Short: "Run the allot control plane",
		Long: `server runs allot's control plane on an embedded store in --data (or the
store --store names): the HTTP API (docs/api.md), the scheduling loop and
/metrics. --store etcd://HOST:PORT[,HOST:PORT...][/prefix] keeps the state in
an etcd cluster instead, under /prefix/ (/allot/ by default), so that it
survives the loss of this machine. Several servers may share a prefix: they
elect a leader (an etcd lease of --leader-ttl) that runs the scheduling
loop; the others answer reads from their own cache and pass everything else
to the leader at its --advertise-url. A leader that loses its lease stops
committing at once: each Plan commit is fenced on its term. Clients and
agents take every server's URL, comma-separated, and fail over.

On its first start it creates an admin token and writes it to
DATA/admin-token (mode 0600); it prints the token too when its standard
output is a terminal, never into a log file or the journal. With --agents external (the default) each
fleet node is run by an 'allot agent' that registers it, heartbeats and runs
its jobs' commands; a node is NotReady until its agent registers and after it
misses heartbeats for --node-timeout. --agents virtual runs such agents
in-process with virtual GPUs; --agents simulated runs no processes: every
node is as healthy as the fleet file says and a running job with a duration
succeeds after it.

--tls-cert and --tls-key serve the API over https only (clients then name
the authority with --ca-file or $ALLOT_CA unless the system trusts it);
--etcd-ca, --etcd-cert and --etcd-key turn on TLS, with a client
certificate, to etcd. docs/deploy.md has a layout and how to back up.

It prints "listening on http://HOST:PORT" (https:// with TLS) once it
serves, and shuts down cleanly on SIGINT or SIGTERM.`,
		Example: `  allot server --data /var/lib/allot --listen 0.0.0.0:8080 \
      --fleet examples/fleet.yaml --tenants examples/tenants.yaml
  allot server --data /var/lib/allot --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/allot \
      --fleet examples/fleet.yaml --tenants examples/tenants.yaml
  allot server --data /var/lib/allot --listen 0.0.0.0:8443 --tls-cert /etc/allot/tls/api.pem --tls-key /etc/allot/tls/api-key.pem \
      --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 --etcd-ca /etc/allot/tls/etcd-ca.pem \
      --etcd-cert /etc/allot/tls/etcd-client.pem --etcd-key /etc/allot/tls/etcd-client-key.pem \
      --fleet /etc/allot/fleet.yaml --tenants /etc/allot/tenants.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, false)
		},
	}
	f.register(cmd, "")
	f.tls.register(cmd)
	cmd.Flags().StringVar(&f.advertise, "advertise-url", "", "URL at which the other servers on the same etcd prefix reach this one's API (default: the --listen address, loopback for a wildcard)")
	cmd.Flags().DurationVar(&f.termTTL, "leader-ttl", etcd.DefaultTermTTL, "how long a leader that stopped renewing its etcd lease keeps leading (a crash, a partition) before another server takes over; at least 1s, rounded up to whole seconds")
	cmd.Flags().StringVar(&f.store, "store", "", "where the state lives: bolt:DIR (the file DIR/allot.db; empty: bolt in --data) or etcd://HOST:PORT[,HOST:PORT...][/prefix] (an etcd cluster, keys under /prefix/, default /allot/; several servers on one prefix elect a leader)")
	cmd.Flags().StringVar(&f.agents, "agents", "external", "node layer: external (allot agent processes report facts), virtual (in-process agents with virtual GPUs for every fleet node) or simulated (no processes; jobs end after their duration)")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

// schedConfig is what the flags ask of the scheduling core.
func (f serveFlags) schedConfig() sched.Config {
	return sched.Config{MinRunTime: f.minRunTime, PriorityGap: f.priorityGap, HoldAfter: f.holdAfter, EarmarkLead: f.earmarkLead,
		ResizeInterval: f.resizeInterval}
}

// serve runs the control plane until ctx ends. With up set it also prints
// what to try next.
func serve(ctx context.Context, out, errOut io.Writer, f serveFlags, up bool) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return Usage(fmt.Errorf("--log-level: %w", err))
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))
	if f.maxGrace < time.Second || f.maxGrace > model.MaxEvictionGrace {
		return Usage(fmt.Errorf("--max-grace %s: want 1s to %s", f.maxGrace, model.MaxEvictionGrace))
	}
	if f.reservationLead <= 0 {
		return Usage(fmt.Errorf("--max-reservation-lead %s: want a positive duration, e.g. 2160h", f.reservationLead))
	}
	if f.earmarkLead < 0 {
		return Usage(fmt.Errorf("--reservation-earmark %s: want 0 (from creation) or a positive duration", f.earmarkLead))
	}
	if f.maxLost < 1 {
		return Usage(fmt.Errorf("--max-lost-attempts %d: want at least 1", f.maxLost))
	}
	if f.drainAfterFailures < 0 || f.drainAfterFailures == 1 || f.drainAfterFailures > server.MaxDrainAfterFailures {
		return Usage(fmt.Errorf("--drain-after-failures %d: want 0 (never) or 2 to %d", f.drainAfterFailures, server.MaxDrainAfterFailures))
	}
	if f.retryBackoff < 0 {
		return Usage(fmt.Errorf("--retry-backoff %s: want 0 (retry at once) or more", f.retryBackoff))
	}
	if f.jobRetention < 0 || (f.jobRetention > 0 && f.jobRetention < server.MinJobRetention) {
		return Usage(fmt.Errorf("--job-retention %s: want 0 (keep for ever) or at least %s (a month's budget reads the month's jobs)",
			f.jobRetention, server.MinJobRetention))
	}
	if f.limits.MaxConnsPerAddr < 0 {
		return Usage(fmt.Errorf("--max-conns-per-addr %d: want 0 (half of --max-conns) or more", f.limits.MaxConnsPerAddr))
	}
	if f.limits.MaxConnAge < time.Second {
		return Usage(fmt.Errorf("--conn-max-age %s: want at least 1s", f.limits.MaxConnAge))
	}
	if f.limits.AuditRate < 0 || f.limits.AuditBurst < 1 {
		return Usage(fmt.Errorf("--audit-rate %g, --audit-burst %d: want a rate of 0 (no limit) or more and a burst of at least 1",
			f.limits.AuditRate, f.limits.AuditBurst))
	}
	if f.auditRetention < 0 || (f.auditRetention > 0 && f.auditRetention < server.MinAuditRetention) {
		return Usage(fmt.Errorf("--audit-retention %s: want 0 (keep for ever) or at least %s", f.auditRetention, server.MinAuditRetention))
	}
	if f.limits.JobRate < 0 || f.limits.JobBurst < 1 || f.limits.MaxDryRuns < 1 {
		return Usage(fmt.Errorf("--job-rate %g, --job-burst %d, --max-dry-runs %d: want a rate of 0 (no limit) or more, a burst and dry runs of at least 1",
			f.limits.JobRate, f.limits.JobBurst, f.limits.MaxDryRuns))
	}
	if f.maxJobsPerTenant < 0 {
		return Usage(fmt.Errorf("--max-jobs-per-tenant %d: want 0 (no bound) or more", f.maxJobsPerTenant))
	}
	if f.logMemoryMiB < 2 || f.logMemoryMiB > 1<<20 {
		return Usage(fmt.Errorf("--log-memory-mib %d: want 2 to 1048576 (a log keeps up to 1 MiB)", f.logMemoryMiB))
	}
	if f.checkpointRoot != "" && f.agents != "virtual" {
		return Usage(fmt.Errorf("--checkpoint-root is for --agents virtual; an external agent takes its own (allot agent --checkpoint-root)"))
	}
	if err := f.jobs.check(); err != nil {
		return err
	}
	if !up && f.termTTL < time.Second {
		// etcd leases count whole seconds; 0 would silently mean the default.
		return Usage(fmt.Errorf("--leader-ttl %s: want at least 1s", f.termTTL))
	}
	if f.minRunTime < 0 || f.priorityGap < 0 {
		return Usage(fmt.Errorf("--min-run-time %s, --priority-gap %d: want 0 (off) or more", f.minRunTime, f.priorityGap))
	}
	if f.holdAfter < 0 {
		return Usage(fmt.Errorf("--hold-after %s: want 0 (off) or more", f.holdAfter))
	}
	if f.resizeInterval < time.Second {
		return Usage(fmt.Errorf("--resize-interval %s: want at least 1s (every resize restarts an elastic job's ranks from its checkpoint)", f.resizeInterval))
	}
	fleet, err := spec.ReadFleet(f.fleet)
	if err != nil {
		return Usage(notHere(err, "--fleet"))
	}
	tenancy, err := spec.ReadTenancy(f.tenants, fleet)
	if err != nil {
		return Usage(notHere(err, "--tenants"))
	}
	var policies *server.PolicyFile
	if f.policies != "" {
		text, err := os.ReadFile(f.policies)
		if err != nil {
			return Usage(fmt.Errorf("read policies: %w", err))
		}
		if _, err := spec.ParsePolicies(f.policies, text); err != nil {
			return Usage(err)
		}
		policies = &server.PolicyFile{Name: f.policies, Text: text}
	}
	where, err := parseStoreFlag(f.store, f.data)
	if err != nil {
		return Usage(err)
	}
	apiTLS, ownCerts, err := f.tls.api()
	if err != nil {
		return Usage(err)
	}
	etcdTLS, err := f.tls.etcd()
	switch {
	case err != nil:
		return Usage(err)
	case etcdTLS != nil && where.etcd == nil:
		return Usage(errors.New("--etcd-ca, --etcd-cert and --etcd-key need --store etcd://…"))
	case etcdTLS != nil:
		where.etcd.TLS = etcdTLS
	}
	hook, err := parseWebhookURL(f.alertWebhook)
	if err != nil {
		return Usage(err)
	}
	stopProfile, err := startProfile(f.cpuProfile)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	defer stopProfile()
	if err := os.MkdirAll(f.data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	// The admin token and the store are the server's alone, even in a
	// directory an older version or a person made wider.
	if err := os.Chmod(f.data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	st, err := where.open(ctx, log)
	if err != nil {
		return err
	}
	defer st.Close()
	var nodes server.Nodes
	switch f.agents {
	case "simulated":
		nodes = server.Simulated{}
	case "external", "virtual":
		nodes = server.Agents{Timeout: f.nodeTimeout}
	default:
		return Usage(fmt.Errorf("--agents %q: want external, virtual or simulated", f.agents))
	}
	// Listen first: the server tells endpoint replicas its own URL, and
	// endpoints the gateway's.
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	gatewayURL := f.gatewayURL
	var gwLn net.Listener
	if up && f.gatewayListen != "none" {
		at := f.gatewayListen
		if at == "" {
			at = nextPort(f.listen)
		}
		if gwLn, err = net.Listen("tcp", at); err != nil {
			return fmt.Errorf("gateway: listen: %w", err)
		}
		defer gwLn.Close()
		if gatewayURL == "" {
			gatewayURL = selfURL(gwLn.Addr(), false)
		}
	}
	advertise := f.advertise
	if advertise == "" {
		advertise = selfURL(ln.Addr(), apiTLS != nil)
	}
	var election server.Election
	if es, ok := st.(*etcd.Store); ok {
		election = etcdElection{es.Election(f.termTTL)}
	}
	forward, err := f.tls.forwardTransport()
	if err != nil {
		return Usage(err)
	}
	keyPath := f.secretKey
	if keyPath == "" {
		keyPath = filepath.Join(f.data, "secret-key")
	}
	secretKey, made, err := seal.LoadOrCreate(keyPath)
	if err != nil {
		return err
	}
	if made {
		log.Info("secret key created: it seals the tenants' registry credentials in the store; servers sharing the store need a copy (--secret-key-file)", "file", keyPath)
	}
	srv, err := server.New(ctx, server.Config{Store: st, Election: election, Fleet: fleet, Tenancy: tenancy, Tick: f.tick, Logger: log, Nodes: nodes,
		Sched:   f.schedConfig(),
		MaxLost: f.maxLost, MaxGrace: f.maxGrace, MaxReservationLead: f.reservationLead, RetryBackoff: off(f.retryBackoff), DrainAfterFailures: off(f.drainAfterFailures), LogMemory: f.logMemoryMiB << 20, MaxJobsPerTenant: off(f.maxJobsPerTenant), JobRetention: f.jobRetention, AuditRetention: f.auditRetention, URL: advertise, CA: certPEM(ownCerts), Policies: policies,
		RegionMoveAfter: f.regionMoveAfter, RegionWeights: f.regionWeights, CheckIncremental: f.checkIncremental,
		AlertWebhook: hook, AlertEvery: f.alertEvery, AlertFor: f.alertFor, GatewayURL: gatewayURL, SecretKey: secretKey})
	if err != nil {
		return err
	}
	tokenPath := filepath.Join(f.data, "admin-token")
	token, created, err := srv.EnsureAdminToken(ctx, tokenPath)
	if err != nil {
		return err
	}
	removePID, err := writePIDFile(f.data)
	if err != nil {
		return err
	}
	defer removePID()
	rate := f.rate
	if rate == 0 {
		rate = -1 // no limit
	}
	limits := f.limits
	if limits.UnauthRate == 0 {
		limits.UnauthRate = -1 // no limit
	}
	if limits.JobRate == 0 {
		limits.JobRate = -1 // no limit
	}
	if limits.AuditRate == 0 {
		limits.AuditRate = -1 // no limit
	}
	hs, ln := api.NewServer(api.Config{Server: srv, Rate: rate, Burst: f.burst, Logger: log, Limits: limits,
		ForwardTransport: forward}, ln)
	if apiTLS != nil {
		ln = tls.NewListener(ln, apiTLS)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	// Requests that stream (job logs -f, long polls) end when shutdown
	// begins, instead of holding it for its whole timeout.
	reqCtx, endRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer endRequests()
	hs.BaseContext = func(net.Listener) context.Context { return reqCtx }
	hs.RegisterOnShutdown(endRequests)
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(runCtx) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	url := selfURL(ln.Addr(), apiTLS != nil)
	agentsErr := make(chan error, 1)
	agentsCtx, stopAgents := context.WithCancel(runCtx)
	defer stopAgents()
	if f.agents == "virtual" {
		go func() {
			agentsErr <- runVirtualAgents(agentsCtx, url, token, certPool(ownCerts), fleet, filepath.Join(f.data, "agents"), agent.DefaultWork(f.data),
				f.checkpointRoot, f.nodeTimeout, f.jobs, f.containers, log)
		}()
	}
	gwErr := make(chan error, 1)
	gwCtx, stopGateway := context.WithCancel(runCtx)
	defer stopGateway()
	if gwLn != nil {
		// up's gateway runs in this process with the admin token, as its
		// virtual agents do; 'allot gateway' elsewhere takes a gateway token.
		g, err := newLocalGateway(url, token, certPool(ownCerts), f.gatewayReport, log)
		if err != nil {
			return err
		}
		go func() { gwErr <- g.Serve(gwCtx, gwLn) }()
	}
	fmt.Fprintf(out, "listening on %s\n", url)
	if gwLn != nil {
		fmt.Fprintf(out, "gateway on %s (an endpoint is at %s/NAME/)\n", gatewayURL, gatewayURL)
	}
	switch {
	case created && (up || isTerminal(out)):
		fmt.Fprintf(out, "admin token (shown once; also in %s): %s\n", tokenPath, token)
	case created: // a log file or the journal, which others may read
		fmt.Fprintf(out, "admin token created in %s (printed only to a terminal)\n", tokenPath)
	default:
		fmt.Fprintf(out, "admin token: in %s\n", tokenPath)
	}
	if up {
		fmt.Fprintf(out, `
Try next, in another shell:
  export ALLOT_SERVER=%s ALLOT_TOKEN=$(cat %s)
  %[3]s job submit -f examples/jobs/copilot-chat.yaml
  %[3]s job list
  %[3]s job why <id>
  %[3]s job logs <id> -f        # with the in-process agents (the default) the command really runs
Dashboard: %[1]s/ui/ (asks for the token)
Metrics: %[1]s/metrics   API: %[1]s/v1/openapi.json   Stop: Ctrl-C
`, url, shellQuote(tokenPath), selfCommand())
	}

	var failed error
	select {
	case <-ctx.Done():
	case err := <-runErr:
		failed = err
		runErr <- nil
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			failed = fmt.Errorf("serve: %w", err)
		}
	case err := <-agentsErr:
		if err != nil {
			failed = fmt.Errorf("virtual agents: %w", err)
		}
		agentsErr <- nil
	case err := <-gwErr:
		failed = fmt.Errorf("gateway: %w", err)
		gwErr <- nil
	}
	// Shut down from the edge in: the in-process agents first (they stop
	// their jobs' processes while the API still hears their reports),
	// then the API, the scheduling loop and the store.
	log.Info("shutting down")
	stopGateway()
	if gwLn != nil {
		<-gwErr
	}
	stopAgents()
	if f.agents == "virtual" {
		select {
		case err := <-agentsErr:
			if err != nil && failed == nil {
				failed = fmt.Errorf("virtual agents: %w", err)
			}
		case <-time.After(f.jobs.stopTimeout + 15*time.Second):
			log.Warn("virtual agents did not stop within the stop timeout and 15s more", "stop_timeout", f.jobs.stopTimeout)
		}
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutCtx)
	stop()
	if err := <-runErr; err != nil && failed == nil {
		failed = err
	}
	if err := st.Close(); err != nil && failed == nil {
		failed = fmt.Errorf("close store: %w", err)
	}
	return failed
}

// newLocalGateway returns up's in-process gateway, talking to the API at
// url with token.
//
// runVirtualAgents runs an in-process agent with virtual GPUs of its SKU
// for every fleet node the fleet file does not mark down, keeping their
// state in dir/NODE and their jobs' files in work/NODE (outside the
// server's data directory: jobs must not reach the admin token). Their
// jobs' checkpoints go to ckptRoot, which they share as the hosts of a
// fleet share a file system (default work/.checkpoints; "none" for each
// node's own work directory).
func newLocalGateway(url, token string, trust *x509.CertPool, reportEvery time.Duration, log *slog.Logger) (*gateway.Gateway, error) {
	cl, err := client.New(url, token)
	if err != nil {
		return nil, err
	}
	cl.HTTP.Timeout = gateway.DefaultWait + 15*time.Second
	if trust != nil {
		cl.Trust(trust)
	}
	return gateway.New(gateway.Config{Source: cl, Name: "up", ReportEvery: reportEvery, Logger: log.With("gateway", "up")})
}

func runVirtualAgents(ctx context.Context, url, token string, trust *x509.CertPool, fleet *model.Fleet, dir, work, ckptRoot string,
	nodeTimeout time.Duration, jobs jobLimitFlags, containers runtimeFlags, log *slog.Logger) error {
	switch ckptRoot {
	case "none":
		ckptRoot = ""
	case "":
		ckptRoot = filepath.Join(work, ".checkpoints")
		if err := os.MkdirAll(ckptRoot, 0o711); err != nil {
			return fmt.Errorf("checkpoint root: %w", err)
		}
		if err := os.Chmod(ckptRoot, 0o711); err != nil {
			return fmt.Errorf("checkpoint root: %w", err)
		}
	}
	log.Info("virtual agents", "data", dir, "work", work, "checkpoint_root", ckptRoot)
	rt, err := agentRuntime(containers, runtime.FindPodman, log)
	if err != nil {
		return err
	}
	cl, err := client.New(url, token)
	if err != nil {
		return err
	}
	cl.HTTP.Timeout = agent.DefaultWait + 15*time.Second
	if trust != nil {
		cl.Trust(trust)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(fleet.Nodes))
	for _, n := range fleet.Nodes {
		if n.Health != "" && n.Health != model.NodeReady {
			continue // the fleet file says the node is down: no agent
		}
		sku := fleet.Catalog[n.SKU]
		v, err := gpu.ParseVirtual(fmt.Sprintf("virtual:%dx%s-%dGB", sku.GPUs, sku.GPUModel, max(sku.GPUMemoryGiB, 1)), n.Name)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := agent.Config{Client: cl, Node: n.Name, GPUs: v, Data: filepath.Join(dir, n.Name),
				Work: filepath.Join(work, n.Name), Address: "127.0.0.1", NodeTimeout: nodeTimeout, CheckpointRoot: ckptRoot,
				// The whole system goes down with the process: its
				// jobs stop with it, supervised inside it (a shim
				// process per job would cost more than a demo's jobs).
				OnExit: agent.OnExitStop, InProcess: true, Runtime: rt, MountAllow: containers.mountAllow, ImageDirs: containers.imageDirs,
				ImageCacheBytes: containers.cacheBytes(), Logger: log.With("agent", "virtual")}
			jobs.apply(&cfg)
			err := agent.Run(ctx, cfg)
			if err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// nextPort is the address after listen's port on its host (port 0 stays
// 0: a free one), where up's gateway listens by default.
func nextPort(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n == 0 || n >= 65535 {
		return net.JoinHostPort(host, "0")
	}
	return net.JoinHostPort(host, strconv.Itoa(n+1))
}

// selfURL is the URL under which processes on this host reach the API
// listening at addr: a wildcard address is reached on loopback.
func selfURL(addr net.Addr, https bool) string {
	scheme := "http://"
	if https {
		scheme = "https://"
	}
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		return scheme + net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return scheme + addr.String()
}

func shellQuote(s string) string {
	for _, r := range s {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return "'" + s + "'"
		}
	}
	return s
}

// selfCommand is how a person runs this CLI from a shell: allot when one
// is on PATH, else through go run from the repository.
func selfCommand() string {
	if _, err := exec.LookPath("allot"); err == nil {
		return "allot"
	}
	return "go run ./cmd/allot"
}

// notHere adds to a missing file's error how paths are read and which flag
// names another file: the defaults are the repository's examples.
func notHere(err error, flag string) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fmt.Errorf("%w (paths are relative to the current directory, and the defaults are the repository's examples/: run from its root, or pass %s FILE)", err, flag)
}

// off maps a flag's 0, which turns a setting off (--retry-backoff 0: retry
// at once; --max-jobs-per-tenant 0: no bound; --drain-after-failures 0:
// never; the agent's --keep-job-files 0: for ever), to the negative of the
// server's or agent's Config, for which 0 is the default.
func off[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
