package replay

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sim/engine"
	"github.com/allot-dev/allot/internal/trace/philly"
)

// simJob is one trace job during a replay. Times are seconds since the
// first submit.
type simJob struct {
	job      *model.Job
	idx      int // in submit order
	line     int
	vc       int
	gpus     int
	duration float64 // true run time, seconds at full speed
	work     float64 // remaining seconds of work at full speed
	submit   int64
	started  bool
	done     bool
	start    int64   // first start
	runStart int64   // current attempt
	slow     float64 // run-time factor of the current attempt (spread penalty)
	attained float64 // GPU-seconds run so far, lost work included (LAS)
	ran      float64 // seconds run so far, lost work included
	pos      int     // index in sim.running, -1 when not running
	probe    bool    // owner job counted for max_owner_wait_s
	shape    int     // for allot's policy: index of its VC and GPU count
	shapePos int     // and position there in submit order
	nodes    []int   // node index per allocation while running
	took     []int   // GPUs taken on nodes[k], given back as taken
}

// sim is the state of one replay.
type sim struct {
	cfg     Config
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
	eng     *engine.Engine
	ctx     context.Context
	drop    bool  // jobs started since the queues were last cleaned
	runFor  int64 // seconds the job just started runs (see started)

	now      int64
	busy     int   // GPUs held
	vcUsed   []int // GPUs held per VC
	vcQueued []int // GPUs asked by queued jobs per VC
	nodeFree []int // free GPUs per node
	vcFirst  []int // index of each VC's first node
	finished int

	metrics
	res *Result
}

// Run replays cfg.Jobs on cfg.VCs and measures the outcome. It is
// deterministic: the same Config gives the same Result (but WallSeconds).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	wall := time.Now()
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, byID: map[string]*simJob{}, ctx: ctx}
	s.vcs = scaleVCs(cfg.VCs, cfg.ClusterScale)
	s.fleet = buildFleet(s.vcs, cfg.LeafNodes)
	s.ten = buildTenancy(s.vcs, cfg.Sharing)
	if err := s.fleet.Validate(); err != nil {
		return nil, fmt.Errorf("replay fleet: %w", err)
	}
	if err := s.ten.Validate(&s.fleet); err != nil {
		return nil, fmt.Errorf("replay tenancy: %w", err)
	}
	n := len(s.vcs)
	s.vcUsed, s.vcQueued, s.vcUsedInt = make([]int, n), make([]int, n), make([]float64, n)
	s.vcBilled = make([]int64, n)
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
	if err := s.loop(); err != nil {
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
		j := &simJob{idx: len(s.jobs), line: tj.Line, vc: v, gpus: tj.GPUs,
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
		if s.cfg.Walltime > 0 {
			wall := time.Duration(math.Ceil(s.cfg.Walltime*j.duration)) * time.Second
			j.job.Spec.Retry.Timeout = max(time.Minute, (wall + time.Minute - 1).Truncate(time.Minute))
		}
		s.jobs = append(s.jobs, j)
		s.byID[j.job.ID] = j
	}
	s.res.Jobs = len(s.jobs)
}

func (s *sim) at(t int64) time.Time { return s.base.Add(time.Duration(t) * time.Second) }

// loop runs the replay on the simulation engine: the arrivals are its
// events; completions, the cycles at every moment something changed, and
// the wake when the protection of running work a job waits on ends are
// the engine's.
func (s *sim) loop() error {
	s.eng = engine.New(engine.Config{Fleet: &s.fleet, Tenancy: &s.ten, Start: s.base,
		Core:     sched.Config{MinRunTime: s.cfg.MinRunTime, PriorityGap: s.priorityGap(), HoldAfter: s.cfg.HoldAfter},
		Select:   s.selectJobs,
		RunFor:   func(*model.Job, time.Time) time.Duration { return time.Duration(s.runFor) * time.Second },
		Input:    s.input,
		Recorder: (*recorder)(s), CheckIncremental: s.cfg.CheckIncremental})
	for _, j := range s.jobs {
		s.eng.At(s.at(j.submit), func(time.Time) {
			if err := s.eng.Submit(j.job, 0); err != nil {
				s.eng.Abort(err)
				return
			}
			s.arrive(j)
		})
	}
	if err := s.eng.Drain(); err != nil {
		return err
	}
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.finished, len(s.jobs))
	}
	if s.queued > 0 || len(s.running) > 0 {
		return fmt.Errorf("replay: %d jobs never finished", s.queued+len(s.running))
	}
	return nil
}

// input counts the core's cycles for the progress report and stops the
// run when its context ends; the core schedules the Snapshot as it is.
func (s *sim) input(snap *sched.Snapshot, _ time.Time) *sched.Snapshot {
	if n := s.eng.Cycles(); n%1024 == 0 {
		if err := s.ctx.Err(); err != nil {
			s.eng.Abort(err)
		}
		if s.cfg.Progress != nil {
			s.cfg.Progress(s.finished, len(s.jobs))
		}
	}
	return snap
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
	s.bill(j)
	for k, i := range j.nodes {
		s.nodeFree[i] += j.took[k]
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
	j.ran += float64(s.now - j.runStart)
	j.attained += float64(s.now-j.runStart) * float64(j.gpus)
	j.work = 0
	j.done = true
	s.stopRunning(j)
	s.dirty[j.vc] = true
	s.jct = append(s.jct, float64(s.now-j.submit))
	s.vcJCT[j.vc] += float64(s.now - j.submit)
	s.vcJobs[j.vc]++
	half := 0
	if 2*j.idx >= len(s.jobs) {
		half = 1
	}
	s.halfJCT[half] += float64(s.now - j.submit)
	s.halfJobs[half]++
	s.finished++
	s.pol.finished(j)
}

// selectJobs is the Snapshot of a cycle: the running work and the queue
// window (see window) of the VCs where something changed.
func (s *sim) selectJobs(time.Time) []*model.Job {
	if s.drop {
		s.dropStarted()
		s.drop = false
	}
	s.snap = s.snap[:0]
	iv := int64(s.cfg.Checkpoint / time.Second)
	for _, j := range s.running {
		if !s.dirty[j.vc] {
			continue
		}
		if iv > 0 {
			j.job.Status.LastCheckpoint = s.at(j.runStart + (s.now-j.runStart)/iv*iv)
		}
		if s.priorityGap() > 0 && s.vcQueued[j.vc] > 0 {
			// Preemption for a better value compares running work with
			// the VC's queue; without a queue its value matters to none.
			j.job.Spec.Priority.Value = s.pol.prioritise(j, s.now)
		}
		s.snap = append(s.snap, j.job)
	}
	for v := range s.vcs {
		if s.dirty[v] {
			s.snap = s.window(v, s.snap)
		}
	}
	if s.cfg.Sharing == Static {
		clear(s.dirty)
	}
	return s.snap
}

// started books a job the core bound (its Allocations are set) and the
// time it will run, slowed by the spread of its placement.
func (s *sim) started(j *simJob) {
	s.busy += j.gpus
	s.vcUsed[j.vc] += j.gpus
	s.vcQueued[j.vc] -= j.gpus
	s.pol.started(j)
	if !j.started {
		j.started, j.start = true, s.now
		s.queue = append(s.queue, float64(s.now-j.submit))
		if j.gpus > GPUsPerNode {
			s.queueGang = append(s.queueGang, float64(s.now-j.submit))
		}
		if j.probe {
			v := j.vc
			s.owners[v]++
			s.maxOwner[v] = max(s.maxOwner[v], float64(s.now-j.submit))
		}
	}
	j.runStart = s.now
	j.nodes, j.took = j.nodes[:0], j.took[:0]
	for _, a := range j.job.Status.Allocations {
		i := nodeIndex(a.Node)
		j.nodes = append(j.nodes, i)
		j.took = append(j.took, len(a.GPUs))
		s.nodeFree[i] -= len(a.GPUs)
	}
	s.startRunning(j)
	s.queued--
	s.drop = true
	j.slow = 1 + s.cfg.SpreadPenalty*float64(s.spread(j))
	s.runFor = int64(math.Ceil(j.work * j.slow))
	if t := j.job.Spec.Retry.Timeout; t > 0 && time.Duration(s.runFor)*time.Second > t {
		s.res.PastWalltime++
	}
}

// spread is how many nodes beyond the fewest a job needs, plus how many
// leaf groups beyond the fewest those nodes need, its placement spans.
func (s *sim) spread(j *simJob) int {
	allocs := j.job.Status.Allocations
	if len(allocs) < 2 {
		return 0
	}
	var nodes, leaves []string
	for _, a := range allocs {
		n := s.fleet.Nodes[nodeIndex(a.Node)]
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
	s.preempts++
	s.lostGPUs += p.LostGPUSeconds
	s.stopRunning(j)
	s.enqueue(j)
}
