package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
)

// incrementalLab is a server in agent mode on the example fleet with
// CheckIncremental on, every node registered, and a policy set whose
// policies fire at the fleet's usual load.
type incrementalLab struct {
	t     *testing.T
	srv   *Server
	clock *ManualClock
	fleet *model.Fleet
	rng   *rand.Rand
	// sick are the nodes whose agents stopped heartbeating.
	sick     map[string]bool
	policies string // examples/policies.yaml
	// preempted, exits and checkpoints count what the agents saw.
	preempted, exits, checkpoints int
	conflicts                     int // commits made to conflict (behindTheBack)
}

func newIncrementalLab(t *testing.T, strategy model.Strategy, seed uint64) *incrementalLab {
	t.Helper()
	fleet, ten := servertest.Example(t)
	ten.Strategy = strategy
	clock := NewManualClock(t0)
	srv, err := New(context.Background(), Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, Clock: clock,
		Nodes: Agents{Timeout: 10 * time.Second}, CheckIncremental: true,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	l := &incrementalLab{t: t, srv: srv, clock: clock, fleet: fleet, rng: rand.New(rand.NewPCG(seed, 9)), sick: map[string]bool{},
		policies: string(seedPolicies(t))}
	l.policy()
	for _, n := range fleet.Nodes {
		sku := fleet.Catalog[n.SKU]
		gpus := make([]GPU, sku.GPUs)
		for i := range gpus {
			gpus[i] = GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", n.Name, i), Model: sku.GPUModel}
		}
		l.must(srv.RegisterNode(context.Background(), n.Name, gpus, "10.0.0.1"))
	}
	return l
}

// testLog writes a server's log lines to the test's log: a Plan that
// differs is shown with the from-scratch one.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (l *incrementalLab) must(err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatal(err)
	}
}

// refusedOrGone accepts the refusals a random step may meet: a job that
// ended or moved on meanwhile, a quota or a limit.
func (l *incrementalLab) refusedOrGone(err error) {
	l.t.Helper()
	var se *Error
	if err != nil && !errors.As(err, &se) {
		l.t.Fatal(err)
	}
}

// policy applies the example policies with a random utilisation
// threshold: at 20 % the first fires at once, at 95 % it rarely does, so
// running jobs change class as it fires and stops.
func (l *incrementalLab) policy() {
	l.t.Helper()
	at := []string{"20%", "50%", "95%"}[l.rng.IntN(3)]
	text := strings.Replace(l.policies, "utilization_threshold: 85%", "utilization_threshold: "+at, 1)
	_, err := l.srv.ApplyPolicies(context.Background(), admin, []byte(text))
	l.must(err)
}

var incrementalShapes = []string{
	`{gpu_milli: 250, gpu_models: [T4], cpu: 2, memory: 8Gi}`,
	`{gpus_per_instance: 1, gpu_models: [T4]}`,
	`{gpus_per_instance: 4, gpu_models: [H100]}`,
	`{gpus_per_instance: 8, gpu_models: [H100]}`,
	`{gpus_per_instance: 2, gpu_models: [A100]}`,
	`{instance_count: 2, gpus_per_instance: 8, gpu_models: [H100]}`,
	`{instance_count: 2, gpus_per_instance: 8, gpu_models: [A100]}`,
}

func (l *incrementalLab) submit(i int) {
	l.t.Helper()
	r := l.rng
	tenant := []string{"copilot", "research", "acme", "globex", "hobbyist"}[r.IntN(5)]
	class := []string{"spot", "standard", "standard:10", "reserved"}[r.IntN(4)]
	workload := []string{"batch", "developer", "training", "inference"}[r.IntN(4)]
	placement := ""
	switch r.IntN(4) {
	case 0:
		placement = `, placement: {regions: [eastus]}`
	case 1:
		placement = `, placement: {interconnect: infiniband}`
	}
	doc := fmt.Sprintf(`{name: j%d, tenant: %s, command: [x], labels: {workload: %s}, priority: %q, resources: %s%s}`,
		i, tenant, workload, class, incrementalShapes[r.IntN(len(incrementalShapes))], placement)
	specs, err := spec.ParseJobs("test", []byte(doc), nil)
	l.must(err)
	_, err = l.srv.Submit(context.Background(), Principal{Tenant: tenant}, specs[0])
	l.refusedOrGone(err)
}

// agents plays the agents for one step: instances start, some exit, some
// save a checkpoint, preempted ones stop; sick nodes say nothing.
func (l *incrementalLab) agents() {
	l.t.Helper()
	ctx := context.Background()
	jobs, err := l.srv.Jobs(ctx, admin, JobFilter{})
	l.must(err)
	for _, j := range jobs {
		st := j.Status
		n := len(st.Attempts)
		if n == 0 || !st.State.Holds() {
			continue
		}
		nodes := st.Attempts[n-1].Nodes
		report := func(e Event) {
			if l.sick[e.Node] {
				return
			}
			_, err := l.srv.ReportEvent(ctx, admin, j.ID, n, e)
			l.refusedOrGone(err)
		}
		switch {
		case st.State == model.StatePreparing && l.rng.IntN(2) == 0:
			for rank, node := range nodes {
				report(Event{Type: EventStarted, Rank: rank, Node: node})
			}
		case st.State == model.StatePreempted:
			l.preempted++
			for rank, node := range nodes {
				report(Event{Type: EventExited, Rank: rank, Node: node, Killed: true, ExitCode: 143})
			}
		case st.State == model.StateRunning && l.rng.IntN(6) == 0:
			l.exits++
			code := 0
			if l.rng.IntN(4) == 0 {
				code = 1
			}
			for rank, node := range nodes {
				report(Event{Type: EventExited, Rank: rank, Node: node, ExitCode: code})
			}
		case st.State == model.StateRunning && l.rng.IntN(4) == 0:
			l.checkpoints++
			_, err := l.srv.ReportCheckpoint(ctx, admin, j.ID, CheckpointReport{Path: fmt.Sprintf("/ckpt/%s/%d", j.ID, l.rng.IntN(1000))})
			l.refusedOrGone(err)
		}
	}
}

func (l *incrementalLab) cancelOne() {
	l.t.Helper()
	jobs, err := l.srv.Jobs(context.Background(), admin, JobFilter{})
	l.must(err)
	live := slices.DeleteFunc(jobs, func(j *model.Job) bool { return j.Status.State.Terminal() })
	if len(live) == 0 {
		return
	}
	_, err = l.srv.Cancel(context.Background(), admin, live[l.rng.IntN(len(live))].ID)
	l.refusedOrGone(err)
}

// heartbeat makes the healthy nodes heartbeat and, now and then, a node
// fall sick (it stops heartbeating and reporting) or recover.
func (l *incrementalLab) heartbeat() {
	l.t.Helper()
	ctx := context.Background()
	for _, n := range l.fleet.Nodes { // in node order: the same seed, the same run
		if l.sick[n.Name] && l.rng.IntN(4) == 0 {
			delete(l.sick, n.Name)
		}
	}
	if l.rng.IntN(10) == 0 {
		l.sick[l.fleet.Nodes[l.rng.IntN(len(l.fleet.Nodes))].Name] = true
	}
	for _, n := range l.fleet.Nodes {
		if !l.sick[n.Name] {
			l.must(l.srv.Heartbeat(ctx, n.Name))
		}
	}
	l.must(l.srv.CheckHeartbeats(ctx))
}

// reserve creates or deletes a reservation now and then: the tenancy the
// core sees changes.
func (l *incrementalLab) reserve(i int) {
	l.t.Helper()
	ctx := context.Background()
	if l.rng.IntN(2) == 0 {
		_, _, err := l.srv.CreateReservation(ctx, admin, model.Reservation{Name: fmt.Sprintf("r%d", i), Owner: "copilot",
			SKU: "ND96-H100x8-IB", Region: "eastus", Count: 1 + l.rng.IntN(2),
			Start: l.clock.Now().Add(time.Duration(l.rng.IntN(60)) * time.Second), End: l.clock.Now().Add(10 * time.Minute)})
		l.refusedOrGone(err)
		return
	}
	for _, r := range l.srv.Reservations(admin) {
		if strings.HasPrefix(r.Name, "r") {
			l.refusedOrGone(l.srv.DeleteReservation(ctx, admin, r.Name))
			return
		}
	}
}

// behindTheBack makes now and then a cycle's commit conflict: between its
// plan and its commit a running job is canceled straight in the store, as
// another writer would, and the scheduling fence moves, as another
// scheduler's commit would move it; the cache sees both, as its watch
// would, and the cycle plans again.
func (l *incrementalLab) behindTheBack() func() {
	return func() {
		if l.rng.IntN(8) != 0 {
			return
		}
		ctx := context.Background()
		var holding []*model.Job
		for _, j := range l.srv.cache.snapshot().jobs {
			if j.Status.State.Holds() {
				holding = append(holding, j)
			}
		}
		if len(holding) == 0 {
			return
		}
		kv, err := l.srv.st.Get(ctx, prefixJobs+holding[l.rng.IntN(len(holding))].ID)
		if err != nil {
			l.t.Error(err)
			return
		}
		old, err := decodeJob(kv.Value)
		if err != nil {
			l.t.Error(err)
			return
		}
		c := encodeJob(endJob(old, model.StateCanceled, "Canceled", "behind the cycle's back", -1, l.clock.Now()))
		fence := []byte(`{"at":"elsewhere"}`)
		rev, err := l.srv.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(kv.Key, kv.ModRev)},
			Then: []store.Op{store.PutOp(kv.Key, c), store.PutOp(keyFence, fence)}})
		if err != nil {
			l.t.Error(err)
			return
		}
		l.srv.cache.putKV(kv.Key, c, rev)
		l.srv.cache.putKV(keyFence, fence, rev)
		l.conflicts++ // the fence moved: the commit conflicts
	}
}

// TestIncrementalPlansMatchScratch drives random cycles (submits, cancels,
// starts, exits, checkpoints, preemptions, nodes lost and back, policies
// that rewrite priorities, reservations made and deleted, commits that
// conflict and plan again) under each
// strategy, with CheckIncremental on: every cycle's Plan on the server's
// Session must be the from-scratch Plan.
func TestIncrementalPlansMatchScratch(t *testing.T) {
	cycles := 500
	if testing.Short() {
		cycles = 60
	}
	for k, strategy := range []model.Strategy{"", model.StrategyStatic, model.StrategyDynamic, model.StrategyHybrid} {
		name := string(strategy)
		if name == "" {
			name = "as-written"
		}
		t.Run(name, func(t *testing.T) {
			l := newIncrementalLab(t, strategy, uint64(k))
			beforeCommit = l.behindTheBack()
			t.Cleanup(func() { beforeCommit = nil })
			ctx := context.Background()
			held, kept, resets, overridden, notReady := 0, 0, 0, 0, 0
			for i := range cycles {
				for range l.rng.IntN(4) {
					l.submit(i)
				}
				if l.rng.IntN(5) == 0 {
					l.cancelOne()
				}
				if l.rng.IntN(15) == 0 {
					l.reserve(i)
				}
				if l.rng.IntN(20) == 0 {
					l.policy()
				}
				l.agents()
				l.clock.Advance(time.Duration(500+l.rng.IntN(4500)) * time.Millisecond)
				l.heartbeat()
				ss, r := l.srv.inc.Session(), l.srv.inc.Resets()
				if err := l.srv.Cycle(ctx); err != nil {
					t.Fatalf("cycle %d: %v", i, err)
				}
				if ss != nil && l.srv.inc.Session() == ss {
					kept++
					if l.srv.inc.Resets() != r {
						resets++
					}
				}
				held = max(held, l.srv.inc.Held())
				l.srv.pol.mu.Lock()
				if len(l.srv.pol.overrides) > 0 {
					overridden++
				}
				l.srv.pol.mu.Unlock()
				for _, n := range l.srv.world().fleet.Nodes {
					if n.Health == model.NodeNotReady {
						notReady++
						break
					}
				}
			}
			t.Logf("%d cycles: Session kept across %d (%d Resets), at most %d jobs held, policies rewrote jobs in %d, a node NotReady in %d; "+
				"agents saw %d preempted jobs, %d exits, %d checkpoints; %d commits conflicted",
				cycles, kept, resets, held, overridden, notReady, l.preempted, l.exits, l.checkpoints, l.conflicts)
			thin := kept < cycles/2 || resets == 0 || held < 5 || overridden == 0 || notReady == 0 ||
				l.exits == 0 || l.checkpoints == 0 || l.conflicts == 0
			if thin && !testing.Short() {
				t.Fatal("the random cycles exercise too little of the Session")
			}
		})
	}
}

// TestCheckIncrementalCatchesDroppedDelta loses a delta on purpose (the
// Session is told every node went NotReady, behind the server's back) and
// wants the next cycle to fail with ErrIncremental, the one after, on a
// Session built anew, to bind the job, and Run to stop on such a cycle.
func TestCheckIncrementalCatchesDroppedDelta(t *testing.T) {
	h := newHarness(t)
	h.submit(copilot, chat)
	h.cycle()
	h.cycle() // the Session learns of the bind from the cache
	if h.srv.inc.Held() != 1 {
		t.Fatalf("the Session holds %d jobs, want the one running", h.srv.inc.Held())
	}
	for _, n := range h.srv.world().fleet.Nodes {
		if err := h.srv.inc.Session().SetHealth(n.Name, model.NodeNotReady); err != nil {
			t.Fatal(err)
		}
	}
	j := h.submit(copilot, chat)
	h.clock.Advance(time.Second)
	if err := h.srv.Cycle(context.Background()); !errors.Is(err, ErrIncremental) {
		t.Fatalf("cycle on a Session that missed a delta: %v, want ErrIncremental", err)
	}
	if got := h.job(j.ID).Status.State; got != model.StateQueued {
		t.Fatalf("the failed cycle committed: job %s", got)
	}
	h.cycle()
	if got := h.job(j.ID).Status.State; got != model.StateRunning {
		t.Fatalf("after the Session was rebuilt the job is %s, want Running", got)
	}

	// Run stops on it, so that 'allot server --check-incremental' exits.
	h.cycle()
	for _, n := range h.srv.world().fleet.Nodes {
		if err := h.srv.inc.Session().SetHealth(n.Name, model.NodeNotReady); err != nil {
			t.Fatal(err)
		}
	}
	h.submit(copilot, chat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Run(ctx); !errors.Is(err, ErrIncremental) {
		t.Fatalf("Run: %v, want ErrIncremental", err)
	}
}
