package server

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/allot-dev/allot/internal/model"
)

// MaxLogBytes is how much of each attempt's log the server keeps: the last
// MiB.
const MaxLogBytes = 1 << 20

// logBook keeps the logs agents ship, per job and attempt, in memory: a
// restart of the server, or another server taking the lead, loses them.
// The agents keep the full files and ship each instance's log with its
// offset (LogSource): a server that lacks what came before a chunk answers
// how far it has it, and the agent ships again from there (the last
// MaxLogBytes of it at most), so a new leader gets an instance's log back
// at its next shipment (its next output, or its end).
//
// The book holds at most limit bytes in all (logbook.go): over it, it drops
// whole logs of the tenant that holds the most, least recently written
// first, so that jobs printing a MiB each, many times over, can neither
// exhaust the server's memory nor push out other tenants' logs first.
type logBook struct {
	mu       sync.Mutex // guards what follows
	logs     map[logKey]*attemptLog
	limit    int64                  // bytes of data kept at most, all logs together
	bytes    int64                  // bytes of data kept
	byTenant map[string]*tenantLogs // logs with data, by their job's tenant
}

type logKey struct {
	job     string
	attempt int
}

type attemptLog struct {
	key     logKey
	data    []byte        // the last MaxLogBytes
	total   int64         // bytes ever appended
	changed chan struct{} // closed (and replaced) on append, and when the log is dropped
	next    map[int]int64 // by rank: the offset in its log of the next byte to come
	// In the log of a job of several instances every line is labeled with
	// the rank that wrote it (labeled); midLine is set while the log ends
	// inside a line of lastRank (-1: the agent's own lines).
	midLine  bool
	lastRank int
	// tenant and at place the log in its tenant's list, least recently
	// written first; at is nil until the log holds data.
	tenant string
	at     *list.Element
}

// LogSource places a chunk in the log of the instance that wrote it.
type LogSource struct {
	Rank   int
	Offset int64 // of the chunk's first byte in the instance's log
	// Skip accepts losing what came before Offset that the server lacks:
	// the agent ships only the last MaxLogBytes again.
	Skip bool
}

func newLogBook(limit int64) *logBook {
	return &logBook{logs: map[logKey]*attemptLog{}, limit: limit, byTenant: map[string]*tenantLogs{}}
}

func (b *logBook) get(k logKey) *attemptLog {
	l, ok := b.logs[k]
	if !ok {
		l = &attemptLog{key: k, changed: make(chan struct{})}
		b.logs[k] = l
	}
	return l
}

// AppendLog appends a chunk of attempt n's log of job id, keeping the last
// MaxLogBytes. A node token may append only to jobs of its node.
//
// With a source, it returns the offset in that instance's log of the next
// byte it wants: the end of the chunk once taken. What of the chunk the
// server has already (a chunk sent again after a lost answer) is not
// appended twice; a chunk that starts past what the server has (it lost
// the earlier ones, as a new leader does) is not appended, unless
// src.Skip, and the offset returned, lower than src.Offset, asks for them.
// Without a source (the agent's own lines) the chunk is appended as it is
// and 0 returned.
func (s *Server) AppendLog(ctx context.Context, p Principal, id string, n int, chunk []byte, src *LogSource) (int64, error) {
	ref, _, ok := s.cache.job(id)
	if !ok {
		return 0, refuse(CodeNotFound, "", "no job %q", id)
	}
	j, ok, err := s.jobFrom(ctx, ref) // the last chunks may come after the job ended
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, refuse(CodeNotFound, "", "no job %q", id)
	}
	if !p.mayReport(j) {
		return 0, refuse(CodeForbidden, "", "job %q does not run on this node", id)
	}
	if n < 1 || n > len(j.Status.Attempts) {
		return 0, refuse(CodeNotFound, "", "job %s has no attempt %d", id, n)
	}
	world := attemptWorld(j, n)
	if src != nil && (src.Rank < 0 || src.Rank >= world || src.Offset < 0) {
		return 0, refuse(CodeInvalidSpec, "rank", "rank %d, offset %d: want a rank of attempt %d's %d instances and an offset of 0 or more",
			src.Rank, src.Offset, n, world)
	}
	if nodes := j.Status.Attempts[n-1].Nodes; src != nil && p.Node != "" && (src.Rank >= len(nodes) || nodes[src.Rank] != p.Node) {
		return 0, refuse(CodeForbidden, "rank", "rank %d of attempt %d of job %s does not run on node %s", src.Rank, n, id, p.Node)
	}
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	l := s.logs.get(logKey{id, n})
	var next int64
	if src != nil {
		if l.next == nil {
			l.next = map[int]int64{}
		}
		have, end := l.next[src.Rank], src.Offset+int64(len(chunk))
		switch {
		case src.Offset > have && !src.Skip:
			return have, nil // ask for what came before
		case src.Offset > have:
			note := fmt.Sprintf("[allot: %d bytes of rank %d's log are not kept here; the node keeps the whole file]\n", src.Offset-have, src.Rank)
			chunk = append([]byte(note), chunk...)
		default:
			chunk = chunk[min(have-src.Offset, int64(len(chunk))):] // what the server has already
		}
		next = max(have, end)
		l.next[src.Rank] = next
		if len(chunk) == 0 {
			return next, nil
		}
	}
	if world > 1 {
		rank := -1
		if src != nil {
			rank = src.Rank
		}
		chunk = l.labeled(chunk, rank)
	}
	held := len(l.data)
	l.data = append(l.data, chunk...)
	l.total += int64(len(chunk))
	if over := len(l.data) - MaxLogBytes; over > 0 {
		l.data = append([]byte(nil), l.data[over:]...)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	s.logs.written(l, j.Spec.Tenant, int64(len(l.data)-held))
	if n := s.logs.shed(l); n > 0 {
		s.m.logsDropped.Add(float64(n))
	}
	s.m.logBytes.Set(float64(s.logs.bytes))
	return next, nil
}

// labeled returns chunk, written by rank (-1: the agent), as it goes into
// the log of a job of several instances: each line of a rank begins with
// "[rank N] ", as srun --label writes them, and a line another rank left
// unfinished is ended first, so that no two ranks share a line ('allot job
// logs --rank N' picks one rank's lines by the label).
func (l *attemptLog) labeled(chunk []byte, rank int) []byte {
	out := make([]byte, 0, len(chunk)+16)
	if l.midLine && l.lastRank != rank {
		out = append(out, '\n')
		l.midLine = false
	}
	l.lastRank = rank
	for len(chunk) > 0 {
		if !l.midLine && rank >= 0 {
			out = fmt.Appendf(out, "[rank %d] ", rank)
		}
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			out = append(out, chunk...)
			l.midLine = true
			break
		}
		out = append(out, chunk[:i+1]...)
		chunk = chunk[i+1:]
		l.midLine = false
	}
	return out
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

// attemptWorld is how many instances attempt n of j has: its nodes (an
// elastic job's attempts differ), or the job's instance count for an
// attempt recorded without them.
func attemptWorld(j *model.Job, n int) int {
	if k := len(j.Status.Attempts[n-1].Nodes); k > 0 {
		return k
	}
	return max(j.Spec.Resources.InstanceCount, 1)
}
