package engine

import "time"

// event is a job's completion (job set, valid while gen is the job's) or a
// callback (fn set).
type event struct {
	at  time.Time
	seq int // scheduling order, to break ties
	job *entry
	gen int
	fn  func(now time.Time)
}

// eventQueue is a min-heap by time, then completions (in submit order of
// their jobs) before callbacks (in scheduling order).
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(a, b int) bool {
	if !q[a].at.Equal(q[b].at) {
		return q[a].at.Before(q[b].at)
	}
	if (q[a].job != nil) != (q[b].job != nil) {
		return q[a].job != nil
	}
	if q[a].job != nil && q[a].job != q[b].job {
		return q[a].job.n < q[b].job.n
	}
	return q[a].seq < q[b].seq
}
func (q eventQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	ev := old[len(old)-1]
	*q = old[:len(old)-1]
	return ev
}

// guard is when the protection from preemption (Core.MinRunTime) of x's
// attempt ends.
type guard struct {
	until time.Time
	x     *entry
}

// guardQueue is a min-heap of guards by their end.
type guardQueue []guard

func (q guardQueue) Len() int           { return len(q) }
func (q guardQueue) Less(a, b int) bool { return q[a].until.Before(q[b].until) }
func (q guardQueue) Swap(a, b int)      { q[a], q[b] = q[b], q[a] }
func (q *guardQueue) Push(x any)        { *q = append(*q, x.(guard)) }
func (q *guardQueue) Pop() any {
	old := *q
	g := old[len(old)-1]
	*q = old[:len(old)-1]
	return g
}
