package server

import (
	"context"
	"sync"

	"github.com/allot-dev/allot/internal/model"
)

// MaxLogBytes is how much of each attempt's log the server keeps: the last
// MiB.
const MaxLogBytes = 1 << 20

// logBook keeps the logs agents ship, per job and attempt, in memory: a
// restart of the server loses them (the agents keep the full files).
type logBook struct {
	mu   sync.Mutex // guards logs
	logs map[logKey]*attemptLog
}

type logKey struct {
	job     string
	attempt int
}

type attemptLog struct {
	data    []byte        // the last MaxLogBytes
	total   int64         // bytes ever appended
	changed chan struct{} // closed (and replaced) on append
}

func newLogBook() *logBook { return &logBook{logs: map[logKey]*attemptLog{}} }

func (b *logBook) get(k logKey) *attemptLog {
	l, ok := b.logs[k]
	if !ok {
		l = &attemptLog{changed: make(chan struct{})}
		b.logs[k] = l
	}
	return l
}

// AppendLog appends a chunk of attempt n's log of job id, keeping the last
// MaxLogBytes. A node token may append only to jobs of its node.
func (s *Server) AppendLog(ctx context.Context, p Principal, id string, n int, chunk []byte) error {
	ref, _, ok := s.cache.job(id)
	if !ok {
		return refuse(CodeNotFound, "", "no job %q", id)
	}
	j, ok, err := s.jobFrom(ctx, ref) // the last chunks may come after the job ended
	if err != nil {
		return err
	}
	if !ok {
		return refuse(CodeNotFound, "", "no job %q", id)
	}
	if !p.mayReport(j) {
		return refuse(CodeForbidden, "", "job %q does not run on this node", id)
	}
	if n < 1 || n > len(j.Status.Attempts) {
		return refuse(CodeNotFound, "", "job %s has no attempt %d", id, n)
	}
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	l := s.logs.get(logKey{id, n})
	l.data = append(l.data, chunk...)
	l.total += int64(len(chunk))
	if over := len(l.data) - MaxLogBytes; over > 0 {
		l.data = append([]byte(nil), l.data[over:]...)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// LogChunk is part of an attempt's log.
type LogChunk struct {
	Attempt int
	Data    []byte
	// Next is the offset to ask for next (bytes since the attempt began).
	Next int64
	// Done is set when the attempt has ended: no more will come.
	Done bool
	// Changed is closed when more may have come.
	Changed <-chan struct{}
}

// Log returns attempt n (0: the latest) of job id's log from offset from
// on, as p may see it. Bytes dropped from the front are skipped.
func (s *Server) Log(ctx context.Context, p Principal, id string, n int, from int64) (LogChunk, error) {
	j, err := s.Job(ctx, p, id)
	if err != nil {
		return LogChunk{}, err
	}
	if n == 0 {
		n = len(j.Status.Attempts)
	}
	if n < 1 || n > len(j.Status.Attempts) {
		return LogChunk{}, refuse(CodeNotFound, "attempt", "job %s has no attempt %d (it has %d)", id, n, len(j.Status.Attempts))
	}
	s.logs.mu.Lock()
	l := s.logs.get(logKey{id, n})
	start := l.total - int64(len(l.data))
	from = max(from, start)
	out := LogChunk{Attempt: n, Data: append([]byte(nil), l.data[min(from-start, int64(len(l.data))):]...),
		Next: l.total, Changed: l.changed}
	s.logs.mu.Unlock()
	out.Done = attemptDone(j, n)
	return out, nil
}

// attemptDone reports whether attempt n of j has ended and none of its
// processes may still run.
func attemptDone(j *model.Job, n int) bool {
	if n < len(j.Status.Attempts) || j.Status.State.Terminal() {
		return true
	}
	if j.Status.Attempts[n-1].Ended.IsZero() {
		return false
	}
	return !anyLive(j.Status.Instances)
}
