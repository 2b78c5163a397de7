package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/agent/shim"
	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/client"
)

// Defaults of Config.
const (
	DefaultHeartbeat = 5 * time.Second
	DefaultWait      = 30 * time.Second
	// DefaultShipEvery keeps a line's way to 'allot job logs -f' under a
	// second: a quarter of it waiting here, the rest on the wire.
	DefaultShipEvery = 250 * time.Millisecond
	// DefaultJobLogLimit bounds what one job's output may take of the
	// agent's disk: its logs on the host, all attempts together.
	DefaultJobLogLimit = 1 << 30
	// DefaultStopTimeout bounds how long an agent that exits gives its
	// instances, whatever their grace.
	DefaultStopTimeout = 30 * time.Second
)

// Config is what one node's agent runs on. Client, Node, GPUs, Data and
// Work are required.
type Config struct {
	Client *client.Client
	Node   string
	GPUs   gpu.Discoverer
	// Data holds the agent's state records and the jobs' logs; it is made
	// 0700: no job may read or write it.
	Data string
	// Work holds the jobs' directories (jobs/JOB); it must be outside Data.
	Work string
	// UIDs is the range of dynamic uids jobs run as when the agent is root
	// and RunAs is nil; zero means DefaultUIDRange.
	UIDs UIDRange
	// RunAs runs every job as this user instead of a uid of its own
	// (weaker: jobs then share a uid and can reach each other's files and
	// processes). Needs root.
	RunAs *syscall.Credential
	// Cgroups is the cgroup v2 mount the agent tracks processes in: ""
	// finds it in /proc/self/mountinfo, "none" tracks by process group.
	Cgroups string
	// NodeTimeout is the server's node timeout: an agent that has not
	// reached the server for that long stops its instances, which the
	// server requeues elsewhere. 0 never stops them.
	NodeTimeout time.Duration
	// Address is where the node's rank-0 processes listen (ALLOT_MASTER_ADDR
	// of its gangs); empty means the node's name.
	Address string
	// Heartbeat is the interval of heartbeats; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// Wait is how long one assignments long-poll waits; 0 means DefaultWait.
	Wait time.Duration
	// ShipEvery is the interval of log shipping and checkpoint checks; 0
	// means DefaultShipEvery.
	ShipEvery time.Duration
	// KeepJobFiles is how long a job's files (WORK/jobs/JOB, its
	// checkpoints there, and its logs in DATA) stay after its last
	// instance here ended (sweep.go); 0 means DefaultKeepJobFiles, negative
	// for ever.
	KeepJobFiles time.Duration
	// HealthCheck, when set, is a command (run with sh -c, as root when the
	// agent is) that tells whether the host is fit for work, as Slurm's
	// HealthCheckProgram: exit 0 for yes. The agent runs it at start and
	// every HealthCheckEvery and reports each result; a failure drains the
	// node (its output is the reason), the next pass resumes it (health.go).
	HealthCheck string
	// HealthCheckEvery is the interval of health checks; 0 means
	// DefaultHealthCheckEvery.
	HealthCheckEvery time.Duration
	// HealthCheckTimeout bounds one health check, which fails past it; 0
	// means DefaultHealthCheckTimeout.
	HealthCheckTimeout time.Duration
	// GPUHealth, when set, reads the health of the node's GPUs beside the
	// HealthCheck command, at the same times and with the same effect: a
	// node whose GPUs have problems is drained until they are gone
	// (health.go).
	GPUHealth gpu.Health
	// CheckpointRoot, when set, is a directory every host of the fleet
	// mounts at the same path (NFS, Lustre, a cluster file system): each
	// job's checkpoint directory is CheckpointRoot/JOB instead of one on
	// this host's disk under Work, so that a job resumes from its last
	// checkpoint wherever it runs next. Its checkpoints are reported without
	// a node (placement need not send the job back), and the sweep removes
	// CheckpointRoot/JOB with the job's other files. It must belong to the
	// agent's user and be writable by no one else.
	CheckpointRoot string
	// JobEnv are variables every job starts with, under its own env (which
	// wins): what jobs need of the host that allot's fresh environment
	// leaves out, such as the driver's library path on hosts that keep it
	// in LD_LIBRARY_PATH rather than the loader's cache. allot's own
	// variables still win over both.
	JobEnv map[string]string
	// JobLogLimit is how many bytes of output one job's logs may hold on
	// this host, its attempts and ranks together; past it the log says so
	// and the rest of the job's output here is dropped (the job runs on).
	// 0 means DefaultJobLogLimit, negative no limit.
	JobLogLimit int64
	// PidsLimit bounds the processes and threads of one job on this host
	// (limits.go): a fork past it fails. 0 means DefaultPidsLimit,
	// negative no bound.
	PidsLimit int64
	// StopTimeout bounds the grace of the instances still running when
	// the agent exits (Run's ctx ends) with OnExitStop: past it, or past
	// an instance's own shorter grace, each is killed with all its
	// processes. 0 means DefaultStopTimeout.
	StopTimeout time.Duration
	// OnExit is what becomes of the instances when Run's ctx ends: ""
	// means OnExitStop, what an agent run inside another program (allot
	// up) wants; 'allot agent' leaves them by default.
	OnExit OnExit
	// InProcess supervises each instance inside the agent's process (a
	// goroutine: shim.Supervise) rather than under a shim process of its
	// own: for an agent inside a program whose jobs end with it (allot
	// up), where starting a shim, an exec of the whole program, would cost
	// more than many jobs do. Its instances end with the process, and a
	// later run fences what a crash left instead of adopting it. It needs
	// OnExitStop.
	InProcess bool
	// Runtime runs the instances of jobs that name an image (package
	// runtime, container.go); nil: such an instance fails to start, and
	// says why.
	Runtime runtime.Runtime
	// MountAllow are the host directories a job's mounts may name (their
	// subtrees); none allows no mount but the job's own directories.
	MountAllow []string
	// ImageDirs are the directories whose local images (oci:/PATH,
	// oci-archive:/PATH) jobs may run.
	ImageDirs []string
	// PullProgressEvery is how often, at most, the agent reports how far
	// the pull of an instance's image has come; 0 means
	// DefaultPullProgressEvery.
	PullProgressEvery time.Duration
	// ImageCacheBytes, when above 0, bounds the images the host holds: past
	// it, images the agent pulled and no instance uses are removed, least
	// recently used first (imagecache.go).
	ImageCacheBytes int64
	// Logger receives one line per start, stop and exit; nil discards.
	Logger *slog.Logger
}

// OnExit is what an agent does with its instances as it exits.
type OnExit string

const (
	// OnExitStop stops every instance (SIGTERM, SIGKILL after its grace or
	// Config.StopTimeout) and delivers every report of their ends before
	// Run returns: the agent's exit ends its work.
	OnExitStop OnExit = "stop"
	// OnExitLeave leaves every instance running under its shim, as slurmd
	// and kubelet do: the agent's next run with the same Data adopts them
	// (adopt.go), so a restart or an upgrade of the agent kills nothing.
	OnExitLeave OnExit = "leave"
)

// reportSlack is how long, past Config.StopTimeout, an agent that stops
// its instances as it exits still gives their last reports.
const reportSlack = 5 * time.Second

// key names one instance of one attempt.
type key struct {
	job     string
	attempt int
	rank    int
}

// proc is an instance this agent started, is about to start, or adopted.
type proc struct {
	a        client.Assignment
	sb       sandbox
	rec      record // as written in DATA/state; watch updates its marker
	grace    time.Duration
	h        *shim.Handle // nil until started
	adopted  bool         // a previous run of the agent started it
	stopping bool
	killed   bool               // killed at once by a stop order without grace
	cancel   context.CancelFunc // abandons a start that waits for GPUs
	done     chan struct{}      // closed once the exit is reported
	noResume string             // why the instance did not resume (spec), for its log
	markers  *markers           // the checkpoint markers the instance may write (watch)
	image    string             // the runtime's name of the pulled image, for an instance run from one
}

// Agent runs one node.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	devs   []gpu.Device
	ident  identity
	cgroup string    // the agent's cgroup, parent of its instances'; "" without cgroups
	shims  string    // the cgroup of the instances' shims, in cgroup; "" leaves them in the agent's
	pids   pidsBound // how jobs' processes are bounded
	allot  string    // the agent's executable where jobs can run it (WORK/bin/allot)
	// virtual is set when the GPUs are declared (gpu.Virtual): a
	// container gets no device of them.
	virtual bool

	imagesMu   sync.Mutex           // guards imagesUsed and imageRefs
	imagesUsed map[string]time.Time // images this agent pulled, by ID, when an instance last started from each
	imageRefs  map[string]string    // the references jobs named the images of imagesUsed by -> their IDs

	mu        sync.Mutex // guards procs, left, finished and firstSeen
	procs     map[key]*proc
	left      map[key]*leftover    // what a previous run left, until the first assignments settle it
	finished  map[key]bool         // instances this agent ran to their end
	firstSeen map[string]time.Time // jobs with files but no logs, when a sweep first saw them

	// reports is the context of the instances' reports (events, log,
	// checkpoints): it outlives Run's ctx, so that an agent that stops its
	// instances as it exits still reports how they ended, until
	// endReports (reportSlack past the stop timeout at most).
	reports    context.Context
	endReports context.CancelFunc
	// leaving is closed as an agent that leaves its instances running
	// exits: their watchers return without a word.
	leaving chan struct{}
	// instances counts the goroutines that start, watch, fence or report
	// an instance.
	instances sync.WaitGroup

	// askKeep, when set, answers in place of the server which jobs'
	// files to keep (sweep.go; tests).
	askKeep func(ctx context.Context, jobs []string) ([]string, error)
}

// Run runs the node's agent until ctx ends: discover, survey what a
// previous run left, register, then heartbeat and follow the assignments
// (the first ones settle what the previous run left); at the end, leave
// the instances running or stop them, as Config.OnExit says. It returns
// an error when the GPUs cannot be discovered or the server refuses the
// registration.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Client == nil || cfg.Node == "" || cfg.GPUs == nil || cfg.Data == "" || cfg.Work == "" {
		return errors.New("agent: Client, Node, GPUs, Data and Work are required")
	}
	if cfg.UIDs == (UIDRange{}) {
		cfg.UIDs = DefaultUIDRange
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.ShipEvery <= 0 {
		cfg.ShipEvery = DefaultShipEvery
	}
	if cfg.HealthCheckEvery <= 0 {
		cfg.HealthCheckEvery = DefaultHealthCheckEvery
	}
	if cfg.HealthCheckTimeout <= 0 {
		cfg.HealthCheckTimeout = DefaultHealthCheckTimeout
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	switch cfg.OnExit {
	case "":
		cfg.OnExit = OnExitStop
	case OnExitStop, OnExitLeave:
	default:
		return fmt.Errorf("agent: OnExit %q: want %q or %q", cfg.OnExit, OnExitStop, OnExitLeave)
	}
	if cfg.InProcess && cfg.OnExit != OnExitStop {
		return errors.New("agent: InProcess needs OnExit stop: instances supervised in the agent's process end with it")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.With("node", cfg.Node), procs: map[key]*proc{}, finished: map[key]bool{},
		leaving: make(chan struct{}), imagesUsed: map[string]time.Time{}, imageRefs: map[string]string{}}
	a.reports, a.endReports = context.WithCancel(context.WithoutCancel(ctx))
	defer a.endReports()
	if err := a.isolate(); err != nil {
		return fmt.Errorf("agent %s: %w", cfg.Node, err)
	}
	devs, err := cfg.GPUs.Discover(ctx)
	if err != nil {
		return fmt.Errorf("agent %s: discover GPUs: %w", cfg.Node, err)
	}
	a.devs = devs
	switch cfg.GPUs.(type) {
	case gpu.Virtual, *gpu.Virtual:
		a.virtual = true
	}
	a.survey()
	if err := a.register(ctx); err != nil {
		a.mu.Lock()
		for _, lo := range a.left {
			lo.h.Close() // they run on; their shims fence them past the node timeout
			if lo.rec.Dynamic {
				releaseUID(lo.rec.Job)
			}
		}
		a.mu.Unlock()
		return err
	}
	a.renewLease()
	go a.heartbeats(ctx)
	if cfg.GPUHealth != nil {
		go func() {
			if err := cfg.GPUHealth.Watch(ctx, devs); err != nil {
				a.log.Warn("GPU events (XIDs) not watched; the health checks read the GPUs' counters alone", "err", err)
			}
		}()
	}
	go a.healthChecks(ctx)
	go a.sweepEveryHour(ctx)
	a.follow(ctx)
	if cfg.OnExit == OnExitLeave {
		a.leaveAll()
		return nil
	}
	a.shutdown()
	if a.cgroup != "" {
		// Empty now, unless an instance outlived its minute.
		_ = syscall.Rmdir(a.shims)
		_ = syscall.Rmdir(a.cgroup)
	}
	return nil
}

// register registers the node, retrying while the server is unreachable.
func (a *Agent) register(ctx context.Context) error {
	gpus := make([]client.GPU, len(a.devs))
	for i, d := range a.devs {
		gpus[i] = client.GPU{Index: d.Index, UUID: d.UUID, Model: d.Model, MemoryMiB: d.MemoryMiB}
	}
	for {
		err := a.cfg.Client.Register(ctx, a.cfg.Node, gpus, a.cfg.Address)
		if err == nil {
			a.log.Info("registered", "gpus", len(gpus))
			return nil
		}
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Status/100 == 4 {
			return fmt.Errorf("agent %s: register: %w", a.cfg.Node, err)
		}
		a.log.Warn("register failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// heartbeats tells the server the node is alive. When the server has not
// been reached (network errors, 5xx) for the node timeout, the server has
// given the node up and requeues its work elsewhere: the agent stops every
// instance so that no attempt runs twice. When the server answers that it
// does not know the node (409), it has forgotten the node's work: the agent
// stops every instance, then registers again.
func (a *Agent) heartbeats(ctx context.Context) {
	t := time.NewTicker(a.cfg.Heartbeat)
	defer t.Stop()
	lastOK, fenced := time.Now(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, a.heartbeatTimeout())
		err := a.cfg.Client.Heartbeat(hctx, a.cfg.Node, a.heldImages())
		cancel()
		if ctx.Err() != nil {
			return
		}
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Status == 409 {
			a.log.Warn("the server does not know this node: stopping every instance before registering again")
			a.waitAll(a.stopEvery())
			err = a.register(ctx)
		}
		switch {
		case err == nil:
			lastOK, fenced = time.Now(), false
			a.renewLease()
		case errors.As(err, &ae) && ae.Status < 500:
			a.log.Warn("heartbeat refused", "err", err)
		default:
			a.log.Warn("heartbeat failed", "err", err, "unreachable_for", time.Since(lastOK).Round(time.Millisecond))
			if a.cfg.NodeTimeout > 0 && !fenced && time.Since(lastOK) > a.cfg.NodeTimeout {
				fenced = true
				a.log.Error("server unreachable for longer than the node timeout: stopping every instance; the server requeues them elsewhere",
					"unreachable_for", time.Since(lastOK).Round(time.Millisecond), "node_timeout", a.cfg.NodeTimeout)
				a.stopEvery()
			}
		}
	}
}

// bounded bounds ctx for one report to the server (an event, a log chunk,
// a checkpoint, a health check's result) as a heartbeat is bounded, at
// least 5 s: a server that accepts and never answers (stopped, or a
// follower passing the report to a leader that is) then delays the report
// by that much before the client asks the next server, not by the
// client's timeout, which a long poll needs long. An exit report held up
// so holds the instance's GPUs in the server's view.
func (a *Agent) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(a.heartbeatTimeout(), 5*time.Second))
}

// heartbeatTimeout bounds one heartbeat: twice the interval, at least a
// second, and at most a third of the node timeout, so that a server that
// accepts and never answers (stopped, cut off from its store) costs a
// heartbeat or two, and the client tries the next server (several given)
// well before the node times out.
func (a *Agent) heartbeatTimeout() time.Duration {
	d := max(2*a.cfg.Heartbeat, time.Second)
	if a.cfg.NodeTimeout > 0 {
		d = min(d, max(a.cfg.NodeTimeout/3, 100*time.Millisecond))
	}
	return d
}

// follow long-polls the assignments and reconciles until ctx ends.
func (a *Agent) follow(ctx context.Context) {
	var rev int64
	for ctx.Err() == nil {
		as, err := a.cfg.Client.Assignments(ctx, a.cfg.Node, rev, a.cfg.Wait)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("poll assignments failed", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
			continue
		}
		rev = as.Rev
		a.reconcile(ctx, as)
	}
}

// reconcile makes what runs match as: it stops what is no longer assigned,
// reports assignments it lost, and starts the new ones.
func (a *Agent) reconcile(ctx context.Context, as client.Assignments) {
	want := map[key]client.Assignment{}
	for _, x := range as.Run {
		want[key{x.Job, x.Attempt, x.Rank}] = x
	}
	orders := map[key]client.StopOrder{}
	for _, s := range as.Stop {
		orders[key{s.Job, s.Attempt, s.Rank}] = s
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settleLeftovers(want, orders)
	for k, p := range a.procs {
		if _, ok := want[k]; ok || (p.h != nil && ended(p.h)) {
			continue
		}
		if p.stopping {
			// A stop order without grace (a forced cancel) kills what
			// is still within its grace.
			if o, ok := orders[k]; ok && noGrace(o) && p.h != nil && !p.killed {
				p.killed = true
				a.log.Info("killing instance", "job", k.job, "attempt", k.attempt, "rank", k.rank, "why", o.Reason)
				a.order(k, p.h.Kill(false))
			}
			continue
		}
		grace := p.grace
		why := "no longer assigned"
		if o, ok := orders[k]; ok {
			if g, err := time.ParseDuration(o.Grace); err == nil {
				grace = g
			}
			why = o.Reason
		}
		p.stopping = true
		if p.h == nil {
			p.cancel()
			continue
		}
		a.log.Info("stopping instance", "job", k.job, "attempt", k.attempt, "rank", k.rank, "why", why, "grace", grace)
		a.order(k, p.h.Stop(grace, false))
	}
	for k, x := range want {
		if _, ok := a.procs[k]; ok || a.finished[k] {
			continue
		}
		if x.Started {
			// The server says it runs here, but nothing of it does: lost
			// (the host restarted, or its shim was killed).
			a.finished[k] = true
			a.log.Warn("assignment lost (nothing of it runs here); reporting", "job", k.job, "attempt", k.attempt, "rank", k.rank)
			a.instances.Add(1)
			go func() {
				defer a.instances.Done()
				a.report(a.reports, k, client.AttemptEvent{Type: "exited", ExitCode: -1, Outcome: "NodeLost"})
			}()
			continue
		}
		a.start(ctx, k, x)
	}
}

// order logs a stop order that could not be given (its file not written).
func (a *Agent) order(k key, err error) {
	if err != nil {
		a.log.Error("stop order not given", "job", k.job, "attempt", k.attempt, "rank", k.rank, "err", err)
	}
}

// noGrace reports whether stop order o asks for an immediate kill.
func noGrace(o client.StopOrder) bool {
	g, err := time.ParseDuration(o.Grace)
	return err == nil && g == 0
}

// tell adds a line of the agent's own to the attempt's log, after what the
// job wrote, so that the tenant reads why an instance could not start or
// how it ended where it reads the job's output.
func (a *Agent) tell(ctx context.Context, k key, msg string) {
	line := fmt.Sprintf("allot: rank %d on %s: %s\n", k.rank, a.cfg.Node, msg)
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	if err := a.cfg.Client.AppendLog(ctx, k.job, k.attempt, []byte(line)); err != nil {
		a.log.Warn("ship log failed", "job", k.job, "attempt", k.attempt, "err", err)
	}
}

// exitMessage says how an instance that did not exit 0 by itself ended,
// or "" when it did.
func exitMessage(e launch.Exit) string {
	switch {
	case e.Outcome != launch.Exited:
		return ""
	case e.Killed:
		return eventMessage(fmt.Sprintf("killed after the grace (exit code %d)", e.ExitCode))
	case e.Signal != "":
		return eventMessage(fmt.Sprintf("ended by signal %s (exit code %d)", e.Signal, e.ExitCode))
	case e.ExitCode != 0:
		return eventMessage(fmt.Sprintf("exited with code %d", e.ExitCode))
	}
	return ""
}

// eventMessage makes s fit AttemptEvent.Message: printable, bounded.
func eventMessage(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > wire.MaxEventMessage {
		s = strings.ToValidUTF8(s[:wire.MaxEventMessage-3], "") + "..."
	}
	return s
}

// maxChunk bounds one log shipment.
const maxChunk = 256 << 10

// resendLimit bounds what the agent ships again to a server that lacks it:
// the last MiB, as much as the server keeps of an attempt's log.
const resendLimit = 1 << 20

// ship sends the log from off on, in whole lines unless final, each chunk
// with its offset, and returns the offset of the next byte to send. A
// server that lacks what came before a chunk (another server took the
// lead, and the logs it held in memory were lost) answers how far it has
// the log, and the agent ships again from there, the file's last
// resendLimit bytes at most.
func (a *Agent) ship(ctx context.Context, k key, path string, off int64, final bool) int64 {
	f, err := os.Open(path)
	if err != nil {
		return off
	}
	defer f.Close()
	skip, probed, rewinds := false, false, 0
	confirmed := off // the end of what the server last said it has
	for {
		buf := make([]byte, maxChunk)
		n, _ := f.ReadAt(buf, off)
		buf = buf[:n]
		if !final || n == maxChunk {
			if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
				buf = buf[:i+1]
			} else if n < maxChunk {
				return off
			}
		}
		if len(buf) == 0 && (!final || probed || off == 0) {
			return off
		}
		// The last shipment of an instance that wrote nothing new still
		// asks the server how far it has the log (probed), so that a new
		// leader gets the log of work that fell silent.
		probed = probed || len(buf) == 0
		cctx, cancel := a.bounded(ctx)
		next, err := a.cfg.Client.AppendLogAt(cctx, k.job, k.attempt, k.rank, off, skip, buf)
		cancel()
		if err != nil {
			a.log.Warn("ship log failed", "job", k.job, "attempt", k.attempt, "err", err)
			return off
		}
		if next >= off+int64(len(buf)) {
			off, skip, confirmed = next, false, next // taken (the server may have had part of it)
			continue
		}
		// The server lacks [next, off): ship it again, up to the last
		// resendLimit bytes of the file. A server that asks again and
		// again is asked no further in this shipment.
		if rewinds++; rewinds > 2 {
			a.log.Warn("server keeps asking for an earlier part of the log", "job", k.job, "attempt", k.attempt, "rank", k.rank,
				"offset", off, "server_has", next)
			return confirmed
		}
		from := next
		if st, err := f.Stat(); err == nil {
			from = max(from, st.Size()-resendLimit)
		}
		a.log.Info("server lacks part of the log; shipping it again", "job", k.job, "attempt", k.attempt, "rank", k.rank,
			"from", from, "server_has", next)
		off, skip = from, from > next
	}
}

// report sends an event, retrying while the server is unreachable.
func (a *Agent) report(ctx context.Context, k key, e client.AttemptEvent) {
	e.Rank, e.Node = k.rank, a.cfg.Node
	for try := 0; ; try++ {
		cctx, cancel := a.bounded(ctx)
		err := a.cfg.Client.Event(cctx, k.job, k.attempt, e)
		cancel()
		var ae *client.APIError
		if err == nil || errors.As(err, &ae) || ctx.Err() != nil || try == 20 {
			if err != nil && ctx.Err() == nil {
				a.log.Info("event not applied", "job", k.job, "attempt", k.attempt, "event", e.Type, "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// spec is the launch spec of an assignment in its sandbox (its tracker
// is the shim's to build: shim.Spec), and why the instance does not resume
// from the job's checkpoint ("" when it does or there is none).
func (a *Agent) spec(k key, x client.Assignment, sb sandbox) (launch.Spec, string) {
	uuids := true
	for _, g := range x.GPUs {
		if g.UUID == "" {
			uuids = false
		}
	}
	var gpus []string
	for _, g := range x.GPUs {
		if uuids {
			gpus = append(gpus, g.UUID)
		} else {
			gpus = append(gpus, strconv.Itoa(g.Index))
		}
	}
	timeout, _ := time.ParseDuration(x.Timeout)
	grace, _ := time.ParseDuration(x.Grace)
	x.ResumeFrom = a.unlegacy(k.job, x.ResumeFrom)
	resume, why := a.resumeFrom(x, sb.jobCkpt)
	if why != "" {
		a.log.Warn("not resuming", "job", k.job, "attempt", k.attempt, "rank", k.rank, "checkpoint", x.ResumeFrom, "why", why)
	}
	env := x.Env
	if len(a.cfg.JobEnv) > 0 {
		env = maps.Clone(a.cfg.JobEnv)
		maps.Copy(env, x.Env)
	}
	return launch.Spec{JobID: k.job, Attempt: k.attempt, Command: x.Command, Env: env, ArrayIndex: x.ArrayIndex, GPUs: gpus,
		GPUMilli: x.GPUMilli, GPUMemoryMiB: a.memoryOf(x.GPUs), CheckpointDir: sb.ckptDir, JobCheckpointDir: sb.jobCkpt, ResumeFrom: resume,
		Rank: x.Rank, WorldSize: x.WorldSize, MasterAddr: x.MasterAddr, MasterPort: x.MasterPort,
		Dir: sb.dir, LogPath: sb.logPath, LogLimit: a.logLimit(filepath.Dir(sb.logPath)), Timeout: timeout, Grace: grace,
		Credential: sb.cred, Allot: a.allot}, why
}

// logLimit is what an instance starting now may add to its job's logs in
// dir (DATA/logs/JOB): the job's limit less what they hold already, as
// launch.Spec.LogLimit says it. Instances of one job that run at once
// here (ranks of a gang) each get what was left when they started.
func (a *Agent) logLimit(dir string) int64 {
	limit := a.cfg.JobLogLimit
	switch {
	case limit < 0:
		return 0
	case limit == 0:
		limit = DefaultJobLogLimit
	}
	var used int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			used += info.Size()
		}
	}
	if left := limit - used; left > 0 {
		return left
	}
	return -1
}

// memoryOf is the memory of the smallest of gpus as discovery found them,
// 0 when one is unknown.
func (a *Agent) memoryOf(gpus []wire.AssignedGPU) int64 {
	var least int64
	for _, g := range gpus {
		i := slices.IndexFunc(a.devs, func(d gpu.Device) bool { return d.Index == g.Index })
		if i < 0 || a.devs[i].MemoryMiB <= 0 {
			return 0
		}
		if least == 0 || a.devs[i].MemoryMiB < least {
			least = a.devs[i].MemoryMiB
		}
	}
	return least
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func overlaps(x, y []client.AssignedGPU) bool {
	for _, a := range x {
		for _, b := range y {
			if a.Index == b.Index {
				return true
			}
		}
	}
	return false
}
