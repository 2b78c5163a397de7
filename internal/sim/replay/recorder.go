package replay

import (
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// recorder is the replay as the engine's Recorder: the engine tells it what
// happened, and it keeps the replay's books (queues, node free lists, the
// policy's state) and its metrics.
type recorder sim

func (r *recorder) Advance(_, to time.Time) {
	s := (*sim)(r)
	s.advance(int64(to.Sub(s.base) / time.Second))
}

func (r *recorder) Started(j *model.Job, _ time.Time) {
	s := (*sim)(r)
	s.started(s.byID[j.ID])
}

func (r *recorder) Preempted(j *model.Job, p sched.Preemption, _ time.Time) {
	s := (*sim)(r)
	s.preempted(s.byID[j.ID], p)
}

func (r *recorder) Ended(j *model.Job, _ time.Time) {
	s := (*sim)(r)
	s.complete(s.byID[j.ID])
}
