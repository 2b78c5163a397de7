package replay

import "math"

// Policies are the queue policies a replay can run.
var Policies = []string{"fifo", "fifo-backfill", "sjf", "srtf", "las", "allot"}

// A policy orders the queue by setting each queued job's priority value
// (higher first) before every cycle. The core serves the queue in class,
// guarantee and fair-share order and, inside a tenant, by that value and
// then submit time, so a policy never places anything itself.
type policy interface {
	// prioritise returns the priority value of a queued job at now.
	prioritise(j *simJob, now int64) int
	// started tells the policy a job is about to start.
	started(j *simJob)
	// finished tells the policy a job has completed.
	finished(j *simJob)
}

func newPolicy(name string, vcs int, jobs []*simJob) policy {
	switch name {
	case "sjf":
		return sjf{}
	case "srtf":
		return srtf{}
	case "las":
		return las{}
	case "allot":
		return newQSSF(vcs, jobs)
	}
	return fifo{}
}

// fifo serves jobs in submit order. Under the name "fifo" the queue is
// strict (see strictHead): no job starts before an earlier one of its VC,
// as in Helios; "fifo-backfill" lets later jobs use what the head leaves.
type fifo struct{}

func (fifo) prioritise(*simJob, int64) int { return 0 }
func (fifo) started(*simJob)               {}
func (fifo) finished(*simJob)              {}

// sjf serves the shortest job first; it reads the true duration.
type sjf struct{}

func (sjf) prioritise(j *simJob, _ int64) int { return -int(j.duration) }
func (sjf) started(*simJob)                   {}
func (sjf) finished(*simJob)                  {}

// srtf serves the shortest remaining work first; it reads the true
// duration. It does not preempt running work: the core preempts only for a
// higher class, a guarantee or a reservation.
type srtf struct{}

func (srtf) prioritise(j *simJob, _ int64) int { return -int(math.Ceil(j.work)) }
func (srtf) started(*simJob)                   {}
func (srtf) finished(*simJob)                  {}

// las serves the least attained service (GPU-seconds run so far) first, as
// Tiresias does, without knowing durations. Never-run jobs tie at zero and
// go in submit order.
type las struct{}

func (las) prioritise(j *simJob, _ int64) int { return -int(j.attained) }
func (las) started(*simJob)                   {}
func (las) finished(*simJob)                  {}

// qssf is allot's policy, after Helios's Quasi-Shortest-Service-First. It
// never reads the duration of a job that has not finished. It predicts a
// job's run time from the jobs of the same VC and GPU count submitted
// nearest to it that have started — up to neighbours on each side, within
// neighbourWindow of its submit time — because jobs of one sweep arrive
// together and run alike: a finished neighbour counts with the run time
// observed (not its true duration), a
// running one with twice what it has run so far (a heavy-tailed job is
// expected to run about as long again) but no less than the mean of its
// kind (see observed); the prediction is their mean. With no such neighbour
// it takes the
// mean of the last historyLen finished jobs of the same VC and GPU count,
// then of the VC, then of all jobs, then defaultPrediction. It serves the
// smallest predicted remaining service (GPUs × run time) first. Aging lifts
// a job by one GPU-second per agingDivisor seconds since its submit, so a
// job predicted large cannot starve in the queue.
//
// Remaining time is the prediction less what the job has run (a preempted
// job's attempts, and a running one's current attempt), but no less than
// outlived × what it has run: a job that has outlived its prediction is
// not about to end, since run times are heavy-tailed (a Pareto tail gives
// an expected remaining time proportional to the time attained). Under
// static sharing running work gets values too, and the core preempts it
// for a queued job of its VC whose value is Config.PriorityGap better
// (see doc.go): short work overtakes work that outlived its prediction,
// after MinRunTime, as in Tiresias's least-attained-service but with the
// predictor's expectation for jobs that have not.
//
// The constants were chosen on this trace (static sharing at scale 0.25,
// avg JCT): 2 → 4 neighbours and a history of 16 → 256 jobs each gained
// about 2 %, a window of 6 h → 24 h 1 %; 8 neighbours and 72 h did worse.
// outlived and DefaultPriorityGap were chosen on the first half of the
// trace alone (--limit 41124) and checked on the second (BENCHMARKS.md):
// outlived 0, 0.25, 0.5, 0.75, 1 and gaps of 900 to 14,400 GPU-seconds.
type qssf struct {
	shapes  []*shapeHistory // by simJob.shape
	byShape []history
	byVC    []history
	all     history
}

const (
	neighbours      = 4
	neighbourWindow = 24 * 3600 // seconds
	historyLen      = 256
	agingDivisor    = 100
	// outlived is the share of what a job has run that it is expected to
	// run again once it has outlived its prediction (see prioritise).
	outlived = 0.5
	// defaultPrediction is the run time assumed with no history at all.
	defaultPrediction = 3600.0
)

// shapeHistory holds the jobs of one VC and GPU count in submit order and
// finds, for any of them, the nearest started one on either side: a
// Fenwick tree of prefix maxima (left) and one of suffix minima (right)
// over the positions of started jobs.
type shapeHistory struct {
	jobs  []*simJob
	left  []int // prefix max of started positions + 1 (0: none)
	right []int // suffix min of started positions + 1, on mirrored indices (0: none)
}

func (h *shapeHistory) start(pos int) {
	n := len(h.jobs)
	for i := pos + 1; i <= n; i += i & -i {
		h.left[i] = max(h.left[i], pos+1)
	}
	for i := n - pos; i <= n; i += i & -i {
		if h.right[i] == 0 || pos+1 < h.right[i] {
			h.right[i] = pos + 1
		}
	}
}

// leftOf is the position of the last started job at or before pos, or -1.
func (h *shapeHistory) leftOf(pos int) int {
	l := 0
	for i := pos + 1; i > 0; i -= i & -i {
		l = max(l, h.left[i])
	}
	return l - 1
}

// rightOf is the position of the first started job at or after pos, or
// len(h.jobs).
func (h *shapeHistory) rightOf(pos int) int {
	n, r := len(h.jobs), 0
	for i := n - pos; i > 0; i -= i & -i {
		if h.right[i] != 0 && (r == 0 || h.right[i] < r) {
			r = h.right[i]
		}
	}
	if r == 0 {
		return n
	}
	return r - 1
}

// history is a ring of recent run times.
type history struct {
	ring [historyLen]float64
	n    int
	sum  float64
}

func (h *history) add(d float64) {
	i := h.n % historyLen
	if h.n >= historyLen {
		h.sum -= h.ring[i]
	}
	h.ring[i] = d
	h.sum += d
	h.n++
}

func (h *history) mean() (float64, bool) {
	if h.n == 0 {
		return 0, false
	}
	return h.sum / float64(min(h.n, historyLen)), true
}

// newQSSF indexes jobs (in submit order) by VC and GPU count.
func newQSSF(vcs int, jobs []*simJob) *qssf {
	q := &qssf{byVC: make([]history, vcs)}
	idx := map[[2]int]int{}
	for _, j := range jobs {
		k := [2]int{j.vc, j.gpus}
		i, ok := idx[k]
		if !ok {
			i = len(q.shapes)
			idx[k] = i
			q.shapes = append(q.shapes, &shapeHistory{})
		}
		h := q.shapes[i]
		j.shape, j.shapePos = i, len(h.jobs)
		h.jobs = append(h.jobs, j)
	}
	q.byShape = make([]history, len(q.shapes))
	for _, h := range q.shapes {
		h.left, h.right = make([]int, len(h.jobs)+1), make([]int, len(h.jobs)+1)
	}
	return q
}

// observed is what a started neighbour says of the run time of its kind:
// the run time observed once finished (ran: slowed by its spread, lost work
// included, as the predicted remaining time is counted against ran);
// before that, twice what it has run so far — ran, plus the current
// attempt while it runs, never the time a preempted job waits — but no less
// than mean, the expected run time of its kind, since a job that has run e
// is expected to run at least as long as any job (E[D | D > e] ≥ E[D]).
func observed(n *simJob, now int64, mean float64) float64 {
	if n.done {
		return n.ran
	}
	run := n.ran
	if n.pos >= 0 {
		run += float64(now - n.runStart)
	}
	return max(2*run, mean)
}

// mean is the expected run time of j's kind from finished jobs: of its VC
// and GPU count, else of its VC, else of all; ok is false with no history.
func (q *qssf) mean(j *simJob) (float64, bool) {
	for _, h := range []*history{&q.byShape[j.shape], &q.byVC[j.vc], &q.all} {
		if m, ok := h.mean(); ok {
			return m, true
		}
	}
	return 0, false
}

func (q *qssf) predict(j *simJob, now int64) float64 {
	h := q.shapes[j.shape]
	mean, known := q.mean(j)
	sum, cnt := 0.0, 0
	for k, l := 0, h.leftOf(j.shapePos); k < neighbours && l >= 0 && j.submit-h.jobs[l].submit <= neighbourWindow; k++ {
		sum += observed(h.jobs[l], now, mean)
		cnt++
		l = h.leftOf(l - 1)
	}
	for k, r := 0, h.rightOf(j.shapePos); k < neighbours && r < len(h.jobs) && h.jobs[r].submit-j.submit <= neighbourWindow; k++ {
		sum += observed(h.jobs[r], now, mean)
		cnt++
		r = h.rightOf(r + 1)
	}
	switch {
	case cnt > 0:
		return sum / float64(cnt)
	case known:
		return mean
	}
	return defaultPrediction
}

func (q *qssf) prioritise(j *simJob, now int64) int {
	// What a preempted job has run counts against its prediction, and so
	// does the current attempt of a running one.
	ran := j.ran
	if j.pos >= 0 {
		ran += float64(now - j.runStart)
	}
	remaining := max(q.predict(j, now)-ran, outlived*ran, 1)
	service := int(math.Round(remaining * float64(j.gpus)))
	return int(now-j.submit)/agingDivisor - service
}

func (q *qssf) started(j *simJob) {
	if !j.started {
		q.shapes[j.shape].start(j.shapePos)
	}
}

// finished learns the run time observed, never the true duration.
func (q *qssf) finished(j *simJob) {
	q.byShape[j.shape].add(j.ran)
	q.byVC[j.vc].add(j.ran)
	q.all.add(j.ran)
}
