package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/seal"
	"github.com/allot-dev/allot/internal/store"
)

// Defaults of Config.
const (
	DefaultTick             = 5 * time.Second
	DefaultMaxPendingWrites = 512
	DefaultMinCycleGap      = 50 * time.Millisecond
)

// Config is what a Server runs on. Store, Fleet and Tenancy are required.
type Config struct {
	Store   store.Store
	Fleet   *model.Fleet   // validated
	Tenancy *model.Tenancy // validated against Fleet
	// Clock tells the time; nil means the wall clock.
	Clock Clock
	// Nodes is the node layer; nil means Simulated.
	Nodes Nodes
	// Sched configures the scheduling core.
	Sched sched.Config
	// Tick is the interval of cycles that run without an event; 0 means
	// DefaultTick.
	Tick time.Duration
	// MinCycleGap is the least pause between two cycles. The pause is also
	// at least twice the last cycle's run time, so that cycles take at most
	// a third of one CPU and cannot starve submits. 0 means
	// DefaultMinCycleGap.
	MinCycleGap time.Duration
	// MaxPendingWrites caps how many pending jobs one plan commit rewrites
	// to record a changed reason; the rest follow in the next cycles. 0
	// means DefaultMaxPendingWrites.
	MaxPendingWrites int
	// MaxLost is how many attempts of one job may be lost with their node
	// (lifecycle.go) before the job fails; 0 means DefaultMaxLost.
	MaxLost int
	// RetryBackoff is the hold before the first retry of a failed attempt;
	// it doubles with each retry up to 5 minutes (lifecycle.go). 0 means
	// DefaultRetryBackoff; negative retries at once.
	RetryBackoff time.Duration
	// DrainAfterFailures is how many different jobs, of two tenants or
	// more, must have failed on a node within 10 minutes (and on no other
	// node) for the server to drain it itself (faildrain.go); 0 means
	// DefaultDrainAfterFailures, negative never; 2 to MaxDrainAfterFailures.
	DrainAfterFailures int
	// JobRetention, when positive (at least MinJobRetention), is how long
	// after they ended jobs stay in the store; the leader deletes older
	// ones (retention.go). 0 keeps them for ever.
	JobRetention time.Duration
	// AuditRetention, when positive (at least MinAuditRetention), is how
	// long audit records stay in the store; the leader deletes older ones
	// (retention.go). 0 keeps them for ever.
	AuditRetention time.Duration
	// MaxJobsPerTenant bounds the jobs of one tenant that have not ended,
	// as Slurm's MaxSubmitJobs does: a tenant's submit past it is refused
	// (joblimit.go). 0 means DefaultMaxJobsPerTenant, negative no bound.
	MaxJobsPerTenant int
	// MaxGrace is the longest checkpoint grace (eviction notice) a job
	// or instance may ask for: a submit above it is refused, and a stop
	// order never gives more (grace.go). 0 means DefaultMaxGrace.
	MaxGrace time.Duration
	// MaxReservationLead is how far ahead of its creation a reservation
	// may start (reservation_bill.go); 0 means DefaultMaxReservationLead.
	MaxReservationLead time.Duration
	// LogMemory bounds the bytes of job logs the server keeps in memory,
	// all attempts together (the last MaxLogBytes of each); over it, the
	// tenant holding the most loses its least recently written log first
	// (logbook.go). 0 means DefaultLogMemory.
	LogMemory int64
	// Logger receives one line per decision; nil discards.
	Logger *slog.Logger
	// Registry receives the server's metrics; nil means a new one.
	Registry *prometheus.Registry
	// URL is where the server's API is reached ("http://10.0.0.1:8080"),
	// set once it listens; endpoint replicas report their metrics there.
	// Empty: replicas get no ALLOT_ENDPOINT_METRICS_URL.
	URL string
	// GatewayURL is where callers reach the gateways (allot gateway, or
	// the load balancer in front of several): an endpoint's URL is
	// GatewayURL/NAME/. Empty: endpoints show no URL.
	GatewayURL string
	// CA is the PEM of certificates an https URL's certificate chains to
	// (allot server gives those of --tls-cert); endpoint replicas get it as
	// ALLOT_ENDPOINT_CA, so that they can check the server they report to.
	CA string
	// Policies, when set, is applied at start unless it is the file the
	// previous start applied (policy_store.go).
	Policies *PolicyFile
	// Forecast bounds the forward runs of the core behind estimated
	// starts and region choice (region.go); zero fields take the
	// forecast package's defaults.
	Forecast forecast.Options
	// RegionWeights weigh price and distance against predicted wait when
	// a job allowed in several regions is placed; zero means
	// forecast.DefaultWeights.
	RegionWeights forecast.Weights
	// RegionMoveAfter is how long a queued job waits in the region chosen
	// for it before it may move to another allowed region where it would
	// start sooner; 0 means DefaultRegionMoveAfter, negative never.
	RegionMoveAfter time.Duration
	// CheckIncremental makes every cycle also plan from scratch
	// (Scheduler.Schedule on the cycle's snapshot) and compare that Plan
	// with the one of the server's incremental Session (session.go): a
	// difference is logged with both Plans, fails the cycle with
	// ErrIncremental and stops Run. For tests; it doubles a cycle's work.
	CheckIncremental bool
	// SecretKey seals the tenants' registry credentials in the store
	// (registry_auth.go, package seal); it never enters the store. Servers
	// that share a store need the same key. nil: a random key of this
	// process, so that credentials set are lost to its restart (tests).
	SecretKey *seal.Key
	// AlertWebhook, when set, is the URL the built-in alerts' firing and
	// resolved notices are POSTed to (alert_webhook.go, docs/alerts.md).
	AlertWebhook string
	// AlertEvery is the interval of alert evaluations; 0 means
	// DefaultAlertEvery.
	AlertEvery time.Duration
	// AlertFor, when positive, replaces the `for` of every alert rule that
	// has one (tests and demonstrations).
	AlertFor time.Duration
	// Election, when set, lets several servers share the store: only the
	// one holding a term runs cycles and the loops that write for the
	// fleet, and commits its Plans fenced on that term (leader.go). Nil:
	// this server always leads.
	Election Election
}

// Server is allot's control plane: a cache of the store, the scheduling
// loop that commits plans, and the operations the API offers.
type Server struct {
	cfg   Config
	st    store.Store
	clock Clock
	nodes Nodes
	core  *sched.Scheduler
	log   *slog.Logger
	reg   *prometheus.Registry
	m     *metrics
	cache *cache

	kick   chan struct{} // an event asks for a cycle; buffered 1: a queued cycle
	ready  atomic.Bool   // the first cycle has committed
	cycles atomic.Uint64 // cycles run
	// watching is set while the store's watch feeds the cache.
	watching atomic.Bool

	term   atomic.Pointer[Term]       // the leadership held now; nil when not leading (Config.Election set)
	leader atomic.Pointer[leaderView] // who leads, as observed (Config.Election set); nil until the first

	cycleMu sync.Mutex         // serialises cycles: at most one in flight; guards inc
	inc     *sched.Incremental // the core's state carried between cycles (session.go)
	// reserved is, by reservation name, the nodes the last cycle's core
	// gave each reservation (held, or earmarked ahead of its start).
	reserved atomic.Pointer[map[string][]string]

	reserveMu sync.Mutex // serialises creating reservations (limits are checked against the others)
	quotaMu   sync.Mutex // serialises quota requests, decisions and edits (quota.go)

	worldMu sync.Mutex // guards building world; readers use w
	w       atomic.Pointer[world]

	agentMode   bool          // nodes are Agents: job states follow reported facts
	nodeTimeout time.Duration // of Agents
	beatsMu     sync.Mutex    // guards beats, failures, resumed and failedJobs
	beats       map[string]time.Time
	failures    map[string][]NodeFailure // by node, the latest last (nodeFailuresKept at most)
	resumed     map[string]time.Time     // by node, when it was last resumed
	// failedJobs is, by job (or endpoint: NodeFailure.origin), where and when its attempts failed within
	// about the last 10 minutes (faildrain.go), guarded by beatsMu;
	// failedJobsPruned is its size after it was last pruned.
	failedJobs       map[string][]failedAt
	failedJobsPruned int
	imagesMu         sync.Mutex                          // serialises replacing nodeImages (images.go)
	nodeImages       atomic.Pointer[map[string][]string] // by node, the images its agent reported; never changed once stored
	autoDrainMu      sync.Mutex                          // serialises the drains of failing nodes (faildrain.go); guards lastAutoDrain
	lastAutoDrain    time.Time                           // when this server last drained a failing node
	failuresRebuilt  atomic.Bool                         // rebuildFailures has run (tests wait for it)
	logs             *logBook
	ep               *endpoint.Book // inference endpoints (endpoints.go)
	pol              policyBook     // operator policies (policies.go)
	regions          regionBook     // when queued jobs were last weighed for a move (region.go)
	alerts           *alertBook     // built-in alerts (alerts.go)
	budget           *budgetBook    // tenants' month's cost against their budgets (budget.go)
}

// New opens a server over cfg.Store: it lists the store and rebuilds its
// cache, and records the health of fleet nodes the store does not know yet.
// Nothing runs until Run.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Fleet == nil || cfg.Tenancy == nil {
		return nil, errors.New("server: Store, Fleet and Tenancy are required")
	}
	if cfg.AuditRetention < 0 || (cfg.AuditRetention > 0 && cfg.AuditRetention < MinAuditRetention) {
		return nil, fmt.Errorf("server: an audit retention of %s: want 0 (for ever) or at least %s", cfg.AuditRetention, MinAuditRetention)
	}
	if cfg.JobRetention > 0 && cfg.JobRetention < MinJobRetention {
		return nil, fmt.Errorf("server: a job retention of %s is under %s: a month's budget reads the month's jobs", cfg.JobRetention, MinJobRetention)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Nodes == nil {
		cfg.Nodes = Simulated{}
	}
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.MinCycleGap <= 0 {
		cfg.MinCycleGap = DefaultMinCycleGap
	}
	if cfg.MaxLost <= 0 {
		cfg.MaxLost = DefaultMaxLost
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.DrainAfterFailures == 0 {
		cfg.DrainAfterFailures = DefaultDrainAfterFailures
	}
	if cfg.DrainAfterFailures > MaxDrainAfterFailures || cfg.DrainAfterFailures == 1 {
		return nil, fmt.Errorf("server: draining a node after %d failed jobs: want 2 (jobs of two tenants) to %d (the failures the server remembers)", cfg.DrainAfterFailures, MaxDrainAfterFailures)
	}
	if cfg.MaxReservationLead <= 0 {
		cfg.MaxReservationLead = DefaultMaxReservationLead
	}
	if cfg.MaxGrace <= 0 {
		cfg.MaxGrace = DefaultMaxGrace
	}
	if cfg.MaxPendingWrites <= 0 {
		cfg.MaxPendingWrites = DefaultMaxPendingWrites
	}
	if cfg.AlertEvery <= 0 {
		cfg.AlertEvery = DefaultAlertEvery
	}
	if cfg.RegionMoveAfter == 0 {
		cfg.RegionMoveAfter = DefaultRegionMoveAfter
	}
	if w := cfg.RegionWeights; w.Price < 0 || w.Distance < 0 || math.IsNaN(w.Price) || math.IsNaN(w.Distance) ||
		math.IsInf(w.Price, 0) || math.IsInf(w.Distance, 0) {
		return nil, fmt.Errorf("server: region weights must be finite and not negative, got price %v, distance %v", w.Price, w.Distance)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.SecretKey == nil {
		k, _, err := seal.RandomKey()
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		cfg.SecretKey = k
	}
	s := &Server{
		cfg: cfg, st: cfg.Store, clock: cfg.Clock, nodes: cfg.Nodes, core: sched.New(cfg.Sched),
		log: cfg.Logger, reg: cfg.Registry, kick: make(chan struct{}, 1),
	}
	s.inc = sched.NewIncremental(s.core, cfg.CheckIncremental)
	s.inc.OnRefused = func(err error) {
		// A record the Session refuses (an allocation its node lacks) is
		// one the from-scratch core counts: Plan planned from scratch.
		s.log.Warn("scheduling session out of step; planned from scratch", "err", err)
	}
	if a, ok := cfg.Nodes.(Agents); ok {
		s.agentMode, s.nodeTimeout = true, a.Timeout
		if s.nodeTimeout <= 0 {
			s.nodeTimeout = DefaultNodeTimeout
		}
	}
	s.beats = map[string]time.Time{}
	s.failures = map[string][]NodeFailure{}
	s.resumed = map[string]time.Time{}
	s.failedJobs = map[string][]failedAt{}
	s.logs = newLogBook(cmp.Or(cfg.LogMemory, DefaultLogMemory))
	s.alerts = newAlertBook(cfg, s)
	s.budget = newBudgetBook()
	s.m = newMetrics(cfg.Registry)
	s.ep = endpoint.New(endpointHost{s}, endpoint.Config{URL: cfg.URL, CA: cfg.CA, GatewayURL: cfg.GatewayURL,
		Interval: min(cfg.Tick, endpoint.DefaultInterval), Log: cfg.Logger, Registry: cfg.Registry})
	for _, n := range cfg.Fleet.Nodes { // a series from the start, so that increase() sees the first failure
		s.m.nodeFailed.WithLabelValues(n.Name)
	}
	if cfg.Election == nil {
		s.m.leader.Set(1)
	}
	s.cache = newCache(cfg.Logger, func(st model.State, n int) { s.m.jobs.WithLabelValues(string(st)).Set(float64(n)) })
	cfg.Registry.MustRegister(fleetCollector{s})
	cfg.Registry.MustRegister(budgetCollector{s})
	if err := s.relist(ctx); err != nil {
		return nil, err
	}
	if err := s.recordNodes(ctx); err != nil {
		return nil, err
	}
	if err := s.loadPolicies(ctx, cfg.Policies); err != nil {
		return nil, err
	}
	w := s.world()
	for _, p := range coreTenancy(w.fleet, w.tenancy, s.clock.Now()).Overpromises(w.fleet, s.clock.Now()) {
		s.log.Warn("a pool's GPUs are promised more than once; guarantees that are not lent come first, so reservations' work may wait",
			"promise", p.String())
	}
	return s, nil
}

// listPage is how many keys relist reads at a time.
const listPage = 4096

// relist reads the whole store into the cache, a page at a time at one
// revision, so that the raw values of a large store are never all held at
// once. A listing whose revision the store can no longer read (it moved on
// too far while the pages were read) starts again at the current one.
func (s *Server) relist(ctx context.Context) error {
	for try := 0; ; try++ {
		err := s.listPages(ctx)
		if errors.Is(err, store.ErrCompacted) && try < 10 {
			s.log.Warn("store moved on during the listing; listing again", "err", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("server: list store: %w", err)
		}
		return nil
	}
}

func (s *Server) listPages(ctx context.Context) error {
	// A cache that holds keys already must drop those the listing lacks.
	var listed map[string]struct{}
	if !s.cache.empty() {
		listed = map[string]struct{}{}
	}
	var (
		after string
		rev   int64
	)
	for {
		kvs, r, more, err := s.st.ListPage(ctx, "/", after, listPage, rev)
		if err != nil {
			return err
		}
		rev = r
		s.cache.loadPage(kvs, listed)
		if !more {
			break
		}
		after = kvs[len(kvs)-1].Key
	}
	s.cache.loaded(listed, rev)
	return nil
}

// recordNodes writes a health record for every fleet node without one.
func (s *Server) recordNodes(ctx context.Context) error {
	have, _ := s.cache.nodeHealth()
	var txn store.Txn
	now := s.clock.Now()
	for _, n := range s.cfg.Fleet.Nodes {
		if _, ok := have[n.Name]; ok {
			continue
		}
		rec := nodeRecord{Health: string(s.nodes.InitialHealth(n)), UpdatedAt: now}
		if n.Health == model.NodeDraining {
			// The fleet file's drain is one like the administrator's
			// (drain.go): the node is Draining once Ready, agents or not,
			// and 'allot node resume' ends it.
			rec.Drain = &NodeDrain{Reason: "health: Draining in the fleet file", By: "fleet file", At: now.UTC()}
		}
		v, _ := json.Marshal(rec)
		key := prefixNodes + n.Name
		txn.If = append(txn.If, store.Absent(key))
		txn.Then = append(txn.Then, store.PutOp(key, v))
	}
	if len(txn.Then) == 0 {
		return nil
	}
	rev, err := s.st.Txn(ctx, txn)
	if err != nil {
		return fmt.Errorf("server: record nodes: %w", err)
	}
	for _, op := range txn.Then {
		s.cache.putKV(op.Key, op.Value, rev)
	}
	return nil
}

// Registry returns the registry holding the server's metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Clock returns the server's clock.
func (s *Server) Clock() Clock { return s.clock }

// Cycles returns how many scheduling cycles have run.
func (s *Server) Cycles() uint64 { return s.cycles.Load() }

// Ready reports whether the server serves what it should: the first
// scheduling cycle has run, or, for a server that does not lead (see
// Config.Election), its cache follows the store's watch.
func (s *Server) Ready() bool {
	return s.ready.Load() || (!s.Leads() && s.watching.Load())
}

// Kick asks for a scheduling cycle soon. Events that arrive while a cycle
// runs coalesce into one more cycle.
func (s *Server) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run keeps the cache in step with the store and runs scheduling cycles on
// events and on every tick until ctx ends. It returns nil when ctx ends and
// an error only when the store fails for good.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchErr := make(chan error, 1)
	go func() { watchErr <- s.watch(ctx) }()
	if s.cfg.Election != nil {
		go s.followLeader(ctx)
		return s.campaign(ctx, watchErr)
	}
	return s.lead(ctx, watchErr)
}

// lead runs what only the leading server does: scheduling cycles on
// events and ticks, and the loops that write for the fleet (missed
// heartbeats, endpoint replicas, region moves, alerts, budgets, expired
// idempotency records, jobs past their retention). It
// returns nil when ctx ends or a commit finds the term over, and the
// watch's error when the store fails for good.
func (s *Server) lead(ctx context.Context, watchErr <-chan error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.agentMode {
		go s.checkHeartbeatsEvery(ctx, max(s.nodeTimeout/4, 10*time.Millisecond))
	}
	go s.rebuildFailures(ctx, s.clock.Now())
	go s.ep.Run(ctx)
	go s.moveWaitingEvery(ctx)
	go s.evaluateAlertsEvery(ctx)
	go s.checkBudgetsEvery(ctx)
	go s.deleteEvery(ctx, idempotencySweepEvery, "expired idempotency records", s.sweepIdempotency)
	if s.cfg.JobRetention > 0 {
		go s.deleteEvery(ctx, purgeEvery, "jobs past their retention", s.purgeEnded)
	}
	if s.cfg.AuditRetention > 0 {
		go s.deleteEvery(ctx, purgeEvery, "audit records past their retention", s.purgeAudit)
	}
	tick := time.NewTicker(s.cfg.Tick)
	defer tick.Stop()
	s.Kick() // the first cycle: resume what the store holds
	var last time.Duration
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-watchErr:
			return err
		case <-s.kick:
		case <-tick.C:
		}
		start := time.Now()
		if err := s.Cycle(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrIncremental) {
				return err // Config.CheckIncremental: fail loudly
			}
			if errors.Is(err, store.ErrFenced) || errors.Is(err, errNotLeading) {
				s.log.Warn("leadership lost: a plan commit was fenced off", "err", err)
				return nil
			}
			s.log.Error("scheduling cycle failed", "err", err)
		}
		last = time.Since(start)
		// Leave the CPU to submits for twice as long as the cycle took.
		gap := max(s.cfg.MinCycleGap, 2*last)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(gap):
		}
	}
}

func (s *Server) checkHeartbeatsEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.CheckHeartbeats(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("check heartbeats", "err", err)
			}
		}
	}
}

// watch applies the store's changes to the cache until ctx ends. When the
// watch falls behind the store's history it lists again.
func (s *Server) watch(ctx context.Context) error {
	s.watching.Store(true)
	defer s.watching.Store(false)
	span := watchSpan{h: s.m.phases.WithLabelValues(phaseWatch)}
	for {
		// Resume from what the cache has seen; a revision older than the
		// store can replay ends the watch with ErrCompacted, and we relist.
		s.cache.mu.RLock()
		from := s.cache.rev
		s.cache.mu.RUnlock()
		var err error
		for ev := range s.st.Watch(ctx, "/", from) {
			if ev.Err != nil {
				err = ev.Err
				break
			}
			start := time.Now()
			s.cache.event(ev)
			span.applied(ev, start)
			if kicksCycle(ev.KV.Key) {
				s.Kick()
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrCompacted):
			s.log.Warn("cache fell behind the store; listing again")
			if err := s.relist(ctx); err != nil {
				return err
			}
		case errors.Is(err, store.ErrClosed):
			return nil
		case err != nil:
			return fmt.Errorf("server: watch store: %w", err)
		default:
			return nil
		}
	}
}

// kicksCycle reports whether a change of key may change what the next
// cycle decides, so that the watch asks for one: a reservation, node,
// quota, policy, endpoint or token. Jobs are not (the cycle loop follows
// them itself), nor the fence, nor records nothing reads to plan: the
// audit trail, idempotency keys, quota requests, stored alerts and budget
// alerts, which every request or evaluation may write.
func kicksCycle(key string) bool {
	if key == keyFence || key == keyAlerts || isJobKey(key) {
		return false
	}
	for _, p := range []string{prefixAudit, prefixIdempotency, prefixQuotaRequests, prefixBudgetAlerts} {
		if strings.HasPrefix(key, p) {
			return false
		}
	}
	return true
}

func isJobKey(k string) bool { return len(k) > len(prefixJobs) && k[:len(prefixJobs)] == prefixJobs }
