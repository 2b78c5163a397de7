package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/client"
)

// Defaults of Config.
const (
	DefaultHeartbeat = 5 * time.Second
	DefaultWait      = 30 * time.Second
	DefaultShipEvery = time.Second
)

// Config is what one node's agent runs on. Client, Node, GPUs and Data are
// required.
type Config struct {
	Client *client.Client
	Node   string
	GPUs   gpu.Discoverer
	// Data holds checkpoints, logs and pid files.
	Data string
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
	// Logger receives one line per start, stop and exit; nil discards.
	Logger *slog.Logger
}

// key names one instance of one attempt.
type key struct {
	job     string
	attempt int
	rank    int
}

// proc is an instance this agent started or is about to start.
type proc struct {
	a        client.Assignment
	grace    time.Duration
	p        *launch.Process // nil until started
	stopping bool
	cancel   context.CancelFunc // abandons a start that waits for GPUs
	done     chan struct{}      // closed once the exit is reported
}

// Agent runs one node.
type Agent struct {
	cfg  Config
	log  *slog.Logger
	devs []gpu.Device

	mu       sync.Mutex // guards procs and finished
	procs    map[key]*proc
	finished map[key]bool // instances this agent ran to their end
}

// Run runs the node's agent until ctx ends: discover, register, then
// heartbeat and follow the assignments. It returns an error when the GPUs
// cannot be discovered or the server refuses the registration.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Client == nil || cfg.Node == "" || cfg.GPUs == nil || cfg.Data == "" {
		return errors.New("agent: Client, Node, GPUs and Data are required")
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.With("node", cfg.Node), procs: map[key]*proc{}, finished: map[key]bool{}}
	devs, err := cfg.GPUs.Discover(ctx)
	if err != nil {
		return fmt.Errorf("agent %s: discover GPUs: %w", cfg.Node, err)
	}
	a.devs = devs
	for _, d := range []string{"run", "logs", "checkpoints"} {
		if err := os.MkdirAll(filepath.Join(cfg.Data, d), 0o755); err != nil {
			return fmt.Errorf("agent %s: %w", cfg.Node, err)
		}
	}
	a.killLeftovers()
	if err := a.register(ctx); err != nil {
		return err
	}
	go a.heartbeats(ctx)
	a.follow(ctx)
	a.stopAll()
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

func (a *Agent) heartbeats(ctx context.Context) {
	t := time.NewTicker(a.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := a.cfg.Client.Heartbeat(ctx, a.cfg.Node)
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Status == 409 {
			err = a.register(ctx) // the server forgot us
		}
		if err != nil && ctx.Err() == nil {
			a.log.Warn("heartbeat failed", "err", err)
		}
	}
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
	for k, p := range a.procs {
		if _, ok := want[k]; ok || p.stopping || (p.p != nil && exited(p.p)) {
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
		if p.p == nil {
			p.cancel()
			continue
		}
		a.log.Info("stopping instance", "job", k.job, "attempt", k.attempt, "rank", k.rank, "why", why, "grace", grace)
		p.p.Stop(grace)
	}
	for k, x := range want {
		if _, ok := a.procs[k]; ok || a.finished[k] {
			continue
		}
		if x.Started {
			// The server says it runs here, but not in this agent: lost.
			a.finished[k] = true
			a.log.Warn("assignment lost (agent restarted); reporting", "job", k.job, "attempt", k.attempt, "rank", k.rank)
			go a.report(ctx, k, client.AttemptEvent{Type: "exited", ExitCode: -1, Outcome: "NodeLost"})
			continue
		}
		a.start(ctx, k, x)
	}
}

// start launches x once the GPUs it needs are no longer held by stopping
// processes. Called with a.mu held.
func (a *Agent) start(ctx context.Context, k key, x client.Assignment) {
	grace, _ := time.ParseDuration(x.Grace)
	sctx, cancel := context.WithCancel(ctx)
	p := &proc{a: x, grace: grace, cancel: cancel, done: make(chan struct{})}
	a.procs[k] = p
	var waitFor []chan struct{}
	for ok, o := range a.procs {
		if ok != k && o.stopping && overlaps(o.a.GPUs, x.GPUs) {
			waitFor = append(waitFor, o.done)
		}
	}
	go func() {
		defer cancel()
		for _, w := range waitFor {
			select {
			case <-w:
			case <-sctx.Done():
			}
		}
		a.mu.Lock()
		if sctx.Err() != nil || p.stopping {
			delete(a.procs, k)
			close(p.done)
			a.mu.Unlock()
			return
		}
		spec := a.spec(k, x)
		lp, err := launch.Start(spec)
		if err != nil {
			a.finished[k] = true
			delete(a.procs, k)
			close(p.done)
			a.mu.Unlock()
			a.log.Error("start failed", "job", k.job, "attempt", k.attempt, "rank", k.rank, "err", err)
			a.report(ctx, k, client.AttemptEvent{Type: "exited", ExitCode: 127, Outcome: "Exited"})
			return
		}
		p.p = lp
		a.mu.Unlock()
		pidFile := a.pidFile(k)
		_ = os.WriteFile(pidFile, []byte(strconv.Itoa(lp.Pid())), 0o644)
		a.log.Info("started instance", "job", k.job, "attempt", k.attempt, "rank", k.rank, "pid", lp.Pid(),
			"gpus", spec.GPUs, "resume_from", spec.ResumeFrom)
		a.report(ctx, k, client.AttemptEvent{Type: "started"})
		a.watch(ctx, k, p, spec)
		_ = os.Remove(pidFile)
	}()
}

// watch ships the log and checkpoints of a running instance until it
// exits, then reports the exit.
func (a *Agent) watch(ctx context.Context, k key, p *proc, spec launch.Spec) {
	t := time.NewTicker(a.cfg.ShipEvery)
	defer t.Stop()
	var off int64
	marker := filepath.Join(spec.CheckpointDir, "CHECKPOINT")
	reported := spec.ResumeFrom
	for running := true; running; {
		select {
		case <-p.p.Done():
			running = false
		case <-t.C:
		}
		off = a.ship(ctx, k, spec.LogPath, off, !running)
		if b, err := os.ReadFile(marker); err == nil {
			if path := strings.TrimSpace(string(b)); path != "" && path != reported {
				if _, err := a.cfg.Client.Checkpoint(ctx, k.job, path); err != nil {
					a.log.Warn("report checkpoint failed", "job", k.job, "err", err)
				} else {
					reported = path
					a.log.Info("checkpoint reported", "job", k.job, "path", path)
				}
			}
		}
	}
	e := p.p.Exit()
	a.log.Info("instance exited", "job", k.job, "attempt", k.attempt, "rank", k.rank, "outcome", e.Outcome,
		"exit_code", e.ExitCode, "signal", e.Signal, "killed", e.Killed)
	a.report(ctx, k, client.AttemptEvent{Type: "exited", ExitCode: e.ExitCode, Outcome: string(e.Outcome), Killed: e.Killed})
	a.mu.Lock()
	a.finished[k] = true
	delete(a.procs, k)
	close(p.done)
	a.mu.Unlock()
}

// maxChunk bounds one log shipment.
const maxChunk = 256 << 10

// ship sends the log from off on, in whole lines unless final, and
// returns the new offset.
func (a *Agent) ship(ctx context.Context, k key, path string, off int64, final bool) int64 {
	f, err := os.Open(path)
	if err != nil {
		return off
	}
	defer f.Close()
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
		if len(buf) == 0 {
			return off
		}
		if err := a.cfg.Client.AppendLog(ctx, k.job, k.attempt, buf); err != nil {
			a.log.Warn("ship log failed", "job", k.job, "attempt", k.attempt, "err", err)
			return off
		}
		off += int64(len(buf))
	}
}

// report sends an event, retrying while the server is unreachable.
func (a *Agent) report(ctx context.Context, k key, e client.AttemptEvent) {
	e.Rank, e.Node = k.rank, a.cfg.Node
	for try := 0; ; try++ {
		err := a.cfg.Client.Event(ctx, k.job, k.attempt, e)
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

// spec is the launch spec of an assignment.
func (a *Agent) spec(k key, x client.Assignment) launch.Spec {
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
	name := fmt.Sprintf("attempt-%d.log", k.attempt)
	if x.WorldSize > 1 {
		name = fmt.Sprintf("attempt-%d.rank-%d.log", k.attempt, k.rank)
	}
	return launch.Spec{JobID: k.job, Attempt: k.attempt, Command: x.Command, Env: x.Env, GPUs: gpus,
		GPUMilli: x.GPUMilli, CheckpointDir: filepath.Join(a.cfg.Data, "checkpoints", k.job), ResumeFrom: x.ResumeFrom,
		Rank: x.Rank, WorldSize: x.WorldSize, MasterAddr: x.MasterAddr, MasterPort: x.MasterPort,
		LogPath: filepath.Join(a.cfg.Data, "logs", k.job, name), Timeout: timeout, Grace: grace}
}

func (a *Agent) pidFile(k key) string {
	return filepath.Join(a.cfg.Data, "run", fmt.Sprintf("%s.%d.%d.pid", k.job, k.attempt, k.rank))
}

// killLeftovers kills the process groups a previous run of this agent left
// behind: it cannot wait on them, so it cannot report their exits.
func (a *Agent) killLeftovers() {
	files, _ := filepath.Glob(filepath.Join(a.cfg.Data, "run", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid > 1 {
			if pg, err := syscall.Getpgid(pid); err == nil && pg == pid {
				a.log.Warn("killing a process group left by a previous run", "pid", pid, "file", filepath.Base(f))
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		_ = os.Remove(f)
	}
}

// stopAll stops every instance when the agent shuts down, and waits up to
// their graces.
func (a *Agent) stopAll() {
	a.mu.Lock()
	var dones []chan struct{}
	for _, p := range a.procs {
		p.stopping = true
		if p.p == nil {
			p.cancel()
		} else {
			p.p.Stop(p.grace)
		}
		dones = append(dones, p.done)
	}
	a.mu.Unlock()
	for _, d := range dones {
		select {
		case <-d:
		case <-time.After(time.Minute):
		}
	}
}

func exited(p *launch.Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
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
