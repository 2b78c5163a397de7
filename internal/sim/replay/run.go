package replay

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/trace/philly"
)

// simJob is one trace job during a replay. Times are seconds since the
// first submit.
type simJob struct {
	job       *model.Job
	idx       int // in submit order
	line      int
	vc        int
	gpus      int
	instances int
	duration  float64 // true run time, seconds at full speed
	work      float64 // remaining seconds of work at full speed
	submit    int64
	started   bool
	done      bool
	start     int64   // first start
	runStart  int64   // current attempt
	slow      float64 // run-time factor of the current attempt (spread penalty)
	attained  float64 // GPU-seconds run so far, lost work included (LAS)
	ran       float64 // seconds run so far, lost work included
	gen       int     // bumps on preemption, to drop stale completions
	pos       int     // index in sim.running, -1 when not running
	probe     bool    // owner job counted for max_owner_wait_s
	shape     int     // for allot's policy: index of its VC and GPU count
	shapePos  int     // and position there in submit order
	nodes     []int   // node index per instance while running
}

// completion is a running job's end, valid while gen matches the job's.
type completion struct {
	at  int64
	gen int
	j   *simJob
}

type completions []completion

func (h completions) Len() int { return len(h) }
func (h completions) Less(a, b int) bool {
	if h[a].at != h[b].at {
		return h[a].at < h[b].at
	}
	return h[a].j.idx < h[b].j.idx
}
func (h completions) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *completions) Push(x any)   { *h = append(*h, x.(completion)) }
func (h *completions) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// sim is the state of one replay.
type sim struct {
	cfg     Config
	core    *sched.Scheduler
	pol     policy
	fleet   model.Fleet
	ten     model.Tenancy
	base    time.Time // the first submit
	vcs     []vcInfo
	jobs    []*simJob // replayed jobs in submit order
	byID    map[string]*simJob
	queues  [][]*group   // per VC: queued jobs by GPU count
	queued  int          // queued jobs
	running []*simJob    // in no order
	dirty   []bool       // per VC: something changed since its last cycle
	snap    []*model.Job // scratch: the core's Snapshot.Jobs
	done    completions
	wake    int64 // a cycle is due when protection of running work ends; -1 for none

	now      int64
	busy     int   // GPUs held
	vcUsed   []int // GPUs held per VC
	vcQueued []int // GPUs asked by queued jobs per VC
	nodeFree []int // free GPUs per node
	vcFirst  []int // index of each VC's first node
	finished int

	// accumulators
	busyInt   float64   // GPU-seconds held
	vcUsedInt []float64 // per VC
	buckets   []float64 // GPU-seconds held per Sample bucket
	jct       []float64
	queue     []float64
	preempts  int
	lostGPUs  float64 // GPU-seconds
	cycles    int
	idle      int // cycles that changed nothing
	maxOwner  []float64
	vcJCT     []float64 // sum per VC
	vcJobs    []int
	owners    []int
	res       *Result
}

// Run replays cfg.Jobs on cfg.VCs and measures the outcome. It is
// deterministic: the same Config gives the same Result (but WallSeconds).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	wall := time.Now()
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, wake: -1, byID: map[string]*simJob{}}
	s.vcs = scaleVCs(cfg.VCs, cfg.ClusterScale)
	s.fleet = buildFleet(s.vcs, cfg.LeafNodes)
	s.ten = buildTenancy(s.vcs, cfg.Sharing)
	if err := s.fleet.Validate(); err != nil {
		return nil, fmt.Errorf("replay fleet: %w", err)
	}
	if err := s.ten.Validate(&s.fleet); err != nil {
		return nil, fmt.Errorf("replay tenancy: %w", err)
	}
	s.core = sched.New(sched.Config{MinRunTime: cfg.MinRunTime})
	n := len(s.vcs)
	s.vcUsed, s.vcQueued, s.vcUsedInt = make([]int, n), make([]int, n), make([]float64, n)
	s.maxOwner, s.owners = make([]float64, n), make([]int, n)
	s.vcJCT, s.vcJobs = make([]float64, n), make([]int, n)
	s.queues, s.dirty = make([][]*group, n), make([]bool, n)
	if cfg.Sharing == Borrow {
		for v := range s.dirty {
			s.dirty[v] = true // VCs meet: every cycle looks at all of them
		}
	}
	s.res = &Result{Policy: cfg.Policy, Sharing: string(cfg.Sharing), ClusterScale: cfg.ClusterScale,
		Nodes: len(s.fleet.Nodes), GPUs: len(s.fleet.Nodes) * GPUsPerNode}
	s.nodeFree, s.vcFirst = make([]int, len(s.fleet.Nodes)), make([]int, n)
	for i := range s.nodeFree {
		s.nodeFree[i] = GPUsPerNode
	}
	for v := 1; v < n; v++ {
		s.vcFirst[v] = s.vcFirst[v-1] + s.vcs[v-1].nodes
	}
	s.load(cfg.Jobs)
	s.pol = newPolicy(cfg.Policy, len(s.vcs), s.jobs)
	if err := s.loop(ctx); err != nil {
		return nil, err
	}
	s.summarise()
	s.res.WallSeconds = time.Since(wall).Seconds()
	return s.res, nil
}

// load turns trace jobs into simulated jobs in submit order, leaving out
// jobs of unknown VCs and jobs that can never fit.
func (s *sim) load(trace []philly.Job) {
	order := make([]int, len(trace))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := &trace[order[a]], &trace[order[b]]
		if !x.Submit.Equal(y.Submit) {
			return x.Submit.Before(y.Submit)
		}
		return x.Line < y.Line
	})
	if s.cfg.Limit > 0 && s.cfg.Limit < len(order) {
		order = order[:s.cfg.Limit]
	}
	vcIdx := map[string]int{}
	for i, v := range s.vcs {
		vcIdx[v.name] = i
	}
	if len(order) > 0 {
		s.base = trace[order[0]].Submit
	}
	for _, ti := range order {
		tj := &trace[ti]
		v, ok := vcIdx[tj.VC]
		if !ok {
			s.res.SkippedUnknownVC++
			continue
		}
		inst, per := shape(tj.GPUs)
		room := len(s.fleet.Nodes)
		if s.cfg.Sharing == Static {
			room = s.vcs[v].nodes
		}
		if inst > room {
			s.res.NeverFit++
			s.res.NeverFitJobs = append(s.res.NeverFitJobs, NeverFit{Line: tj.Line, VC: tj.VC, GPUs: tj.GPUs,
				Reason: fmt.Sprintf("needs %d nodes of %d GPUs, has %d", inst, GPUsPerNode, room)})
			continue
		}
		j := &simJob{idx: len(s.jobs), line: tj.Line, vc: v, gpus: tj.GPUs, instances: inst,
			duration: tj.Duration, work: tj.Duration, submit: int64(tj.Submit.Sub(s.base) / time.Second), pos: -1}
		j.job = &model.Job{
			ID: "j" + strconv.Itoa(1000000 + j.idx)[1:], // zero-padded: ID order is submit order
			Spec: model.JobSpec{Name: "line-" + strconv.Itoa(tj.Line), Tenant: tj.VC,
				Resources:  model.Resources{InstanceCount: inst, GPUsPerInstance: per},
				Priority:   model.Priority{Class: model.ClassStandard},
				Checkpoint: model.Checkpoint{Interval: max(s.cfg.Checkpoint, 0)}},
			Status: model.JobStatus{SubmittedAt: tj.Submit},
		}
		if s.cfg.Sharing == Static {
			j.job.Spec.Placement.Reservation = reservationName(tj.VC)
		}
		s.jobs = append(s.jobs, j)
		s.byID[j.job.ID] = j
	}
	s.res.Jobs = len(s.jobs)
}

func (s *sim) at(t int64) time.Time { return s.base.Add(time.Duration(t) * time.Second) }

// loop runs the event loop: at every moment something changes (arrivals,
// completions, the end of a protection the queue waits for), one cycle.
func (s *sim) loop(ctx context.Context) error {
	next := 0
	for next < len(s.jobs) || s.done.Len() > 0 {
		if s.cycles%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.cfg.Progress != nil {
				s.cfg.Progress(s.finished, len(s.jobs))
			}
		}
		for s.done.Len() > 0 && s.done[0].gen != s.done[0].j.gen {
			heap.Pop(&s.done)
		}
		t := int64(math.MaxInt64)
		if next < len(s.jobs) {
			t = s.jobs[next].submit
		}
		if s.done.Len() > 0 {
			t = min(t, s.done[0].at)
		}
		if s.wake >= 0 {
			t = min(t, s.wake)
		}
		if t == math.MaxInt64 {
			break
		}
		s.advance(t)
		if s.wake == t {
			s.wake = -1
		}
		for s.done.Len() > 0 && s.done[0].at == t {
			c := heap.Pop(&s.done).(completion)
			if c.gen == c.j.gen {
				s.complete(c.j)
			}
		}
		for next < len(s.jobs) && s.jobs[next].submit == t {
			s.arrive(s.jobs[next])
			next++
		}
		if err := s.cycle(); err != nil {
			return err
		}
	}
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.finished, len(s.jobs))
	}
	if s.queued > 0 || len(s.running) > 0 {
		return fmt.Errorf("replay: %d jobs never finished", s.queued+len(s.running))
	}
	return nil
}

// advance moves the clock to t, integrating what is held.
func (s *sim) advance(t int64) {
	dt := t - s.now
	if dt <= 0 {
		return
	}
	s.busyInt += float64(s.busy) * float64(dt)
	for v, u := range s.vcUsed {
		s.vcUsedInt[v] += float64(u) * float64(dt)
	}
	if s.busy > 0 {
		bucket := int64(s.cfg.Sample / time.Second)
		for from := s.now; from < t; {
			b := from / bucket
			to := min(t, (b+1)*bucket)
			for int64(len(s.buckets)) <= b {
				s.buckets = append(s.buckets, 0)
			}
			s.buckets[b] += float64(s.busy) * float64(to-from)
			from = to
		}
	}
	s.now = t
}

func (s *sim) arrive(j *simJob) {
	if s.cfg.Sharing == Borrow {
		// An owner job counts when its VC's held and queued GPUs with it
		// stay within the guarantee while another VC borrows.
		v := s.vcs[j.vc]
		if s.vcUsed[j.vc]+s.vcQueued[j.vc]+j.gpus <= v.gpus && s.borrowing() {
			j.probe = true
		}
	}
	s.enqueue(j)
}

func (s *sim) borrowing() bool {
	for v, u := range s.vcUsed {
		if u > s.vcs[v].gpus {
			return true
		}
	}
	return false
}

func (s *sim) startRunning(j *simJob) {
	j.pos = len(s.running)
	s.running = append(s.running, j)
}

func (s *sim) stopRunning(j *simJob) {
	per := j.gpus / j.instances
	for _, i := range j.nodes {
		s.nodeFree[i] += per
	}
	last := len(s.running) - 1
	s.running[j.pos] = s.running[last]
	s.running[j.pos].pos = j.pos
	s.running = s.running[:last]
	j.pos = -1
}

func (s *sim) complete(j *simJob) {
	s.busy -= j.gpus
	s.vcUsed[j.vc] -= j.gpus
	j.job.Status.State = model.StateSucceeded
	j.job.Status.EndedAt = s.at(s.now)
	j.job.Status.Allocations = nil
	j.ran += float64(s.now - j.runStart)
	j.attained += float64(s.now-j.runStart) * float64(j.gpus)
	j.work = 0
	j.done = true
	s.stopRunning(j)
	s.dirty[j.vc] = true
	s.jct = append(s.jct, float64(s.now-j.submit))
	s.vcJCT[j.vc] += float64(s.now - j.submit)
	s.vcJobs[j.vc]++
	s.finished++
	s.pol.finished(j)
}

// cycle runs the core over the running work and the queue window (see
// window) and applies its Plan. A cycle that preempts is followed by
// another at the same moment, so the requeued victims may take capacity the
// first left free.
func (s *sim) cycle() error {
	now := s.at(s.now)
	snap := &sched.Snapshot{Fleet: &s.fleet, Tenancy: &s.ten}
	for round := 0; round < 8; round++ {
		s.snap = s.snap[:0]
		iv := int64(s.cfg.Checkpoint / time.Second)
		for _, j := range s.running {
			if !s.dirty[j.vc] {
				continue
			}
			if iv > 0 {
				j.job.Status.LastCheckpoint = s.at(j.runStart + (s.now-j.runStart)/iv*iv)
			}
			s.snap = append(s.snap, j.job)
		}
		held := len(s.snap)
		for v := range s.vcs {
			if s.dirty[v] {
				s.snap = s.window(v, s.snap)
			}
		}
		if s.cfg.Sharing == Static {
			clear(s.dirty)
		}
		if len(s.snap) == held {
			return nil
		}
		snap.Jobs = s.snap
		plan := s.core.Schedule(snap, now)
		s.cycles++
		if len(plan.Binds) == 0 && len(plan.Preemptions) == 0 {
			s.idle++
		}
		if err := plan.Apply(s.snap, now); err != nil {
			return fmt.Errorf("replay at %s: %w", now.Format(time.RFC3339), err)
		}
		for _, p := range plan.Preemptions {
			s.preempted(s.byID[p.Job], p)
		}
		for _, b := range plan.Binds {
			s.started(s.byID[b.Job], b)
		}
		if len(plan.Binds) > 0 {
			s.dropStarted()
		}
		for _, p := range plan.Pending {
			if p.Reason == sched.AwaitingPreemption {
				s.wakeForProtection()
				break
			}
		}
		if len(plan.Preemptions) == 0 {
			return nil
		}
	}
	return nil
}

// wakeForProtection asks for a cycle when the first protected running job
// becomes preemptible.
func (s *sim) wakeForProtection() {
	mrt := int64(s.cfg.MinRunTime / time.Second)
	for _, j := range s.running {
		if t := j.runStart + mrt; t > s.now && (s.wake < 0 || t < s.wake) {
			s.wake = t
		}
	}
}

func (s *sim) started(j *simJob, b sched.Bind) {
	s.busy += j.gpus
	s.vcUsed[j.vc] += j.gpus
	s.vcQueued[j.vc] -= j.gpus
	s.pol.started(j)
	if !j.started {
		j.started, j.start = true, s.now
		s.queue = append(s.queue, float64(s.now-j.submit))
		if j.probe {
			v := j.vc
			s.owners[v]++
			s.maxOwner[v] = max(s.maxOwner[v], float64(s.now-j.submit))
		}
	}
	j.runStart = s.now
	j.nodes = j.nodes[:0]
	for _, p := range b.Nodes {
		i := nodeIndex(p.Node)
		j.nodes = append(j.nodes, i)
		s.nodeFree[i] -= len(p.GPUs)
	}
	s.startRunning(j)
	s.queued--
	j.slow = 1 + s.cfg.SpreadPenalty*float64(s.spread(j, b))
	end := s.now + int64(math.Ceil(j.work*j.slow))
	j.gen++
	heap.Push(&s.done, completion{at: end, gen: j.gen, j: j})
}

// spread is how many nodes beyond the fewest a job needs, plus how many
// leaf groups beyond the fewest those nodes need, its placement spans.
func (s *sim) spread(j *simJob, b sched.Bind) int {
	if len(b.Nodes) < 2 {
		return 0
	}
	var nodes, leaves []string
	for _, p := range b.Nodes {
		n := s.fleet.Nodes[nodeIndex(p.Node)]
		if !slices.Contains(nodes, n.Name) {
			nodes = append(nodes, n.Name)
		}
		if !slices.Contains(leaves, n.Leaf) {
			leaves = append(leaves, n.Leaf)
		}
	}
	minNodes := (j.gpus + GPUsPerNode - 1) / GPUsPerNode
	minLeaves := (minNodes + s.cfg.LeafNodes - 1) / s.cfg.LeafNodes
	return max(0, len(nodes)-minNodes) + max(0, len(leaves)-minLeaves)
}

// nodeIndex reads the index back from a node name "n%05d".
func nodeIndex(name string) int {
	i, _ := strconv.Atoi(name[1:])
	return i
}

func (s *sim) preempted(j *simJob, p sched.Preemption) {
	s.busy -= j.gpus
	s.vcUsed[j.vc] -= j.gpus
	ran := s.now - j.runStart
	saved := int64(0)
	if iv := int64(s.cfg.Checkpoint / time.Second); iv > 0 {
		saved = ran / iv * iv
	}
	j.work -= float64(saved) / j.slow
	j.ran += float64(ran)
	j.attained += float64(ran) * float64(j.gpus)
	j.gen++
	s.preempts++
	s.lostGPUs += p.LostGPUSeconds
	s.stopRunning(j)
	s.enqueue(j)
}
