package etcd

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/store"
)

// resumeAfter is the pause before a broken watch stream is opened again.
const resumeAfter = 100 * time.Millisecond

// Watch implements store.Store. Each watch runs one goroutine that turns
// etcd watch responses into Events and opens the etcd watch again, after
// the last revision it delivered, whenever the stream breaks without a
// compaction.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64) <-chan store.Event {
	if err := store.ValidateWatch(prefix, fromRev); err != nil {
		return store.FailedWatch(err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.FailedWatch(store.ErrClosed)
	}
	s.watchers.Add(1)
	s.mu.Unlock()
	out := make(chan store.Event, 64)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel) // Close ends the watch
	go func() {
		defer s.watchers.Done()
		defer close(out)
		defer stop()
		defer cancel()
		s.watch(wctx, prefix, fromRev, out)
	}()
	return out
}

// watch delivers the changes under prefix after next to out until ctx ends
// or the history is compacted.
func (s *Store) watch(ctx context.Context, prefix string, next int64, out chan<- store.Event) {
	closed := func() {
		select {
		case out <- store.Event{Err: store.ErrClosed}:
		default:
		}
	}
	for {
		// RequireLeader ends the stream of a member cut off from its
		// leader instead of leaving it silent; the loop then resumes on
		// whichever endpoint the client picks.
		sctx, endStream := context.WithCancel(clientv3.WithRequireLeader(ctx))
		stream := s.cli.Watch(sctx, s.root+prefix, clientv3.WithPrefix(), clientv3.WithRev(next+1), clientv3.WithPrevKV())
		for resp := range stream {
			if resp.CompactRevision != 0 {
				endStream()
				err := fmt.Errorf("%w: watch %q from revision %d, etcd compacted up to %d", store.ErrCompacted, prefix, next, resp.CompactRevision)
				select {
				case out <- store.Event{Err: err}:
				case <-ctx.Done():
				}
				return
			}
			if resp.Err() != nil {
				break
			}
			// etcd sends a revision's events in one response, so the
			// resume point only ever moves past whole revisions.
			for _, e := range resp.Events {
				select {
				case out <- s.event(e):
				case <-ctx.Done():
					endStream()
					if s.ctx.Err() != nil {
						closed()
					}
					return
				}
				next = max(next, e.Kv.ModRevision)
			}
		}
		endStream()
		if s.ctx.Err() != nil {
			closed()
			return
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-time.After(resumeAfter):
		case <-ctx.Done():
			if s.ctx.Err() != nil {
				closed()
			}
			return
		}
	}
}

// event converts one etcd watch event.
func (s *Store) event(e *clientv3.Event) store.Event {
	ev := store.Event{Type: store.Put, Rev: e.Kv.ModRevision}
	if e.Type == mvccpb.DELETE {
		ev.Type = store.Delete
		ev.KV = store.KV{Key: s.kv(e.Kv.Key, nil, 0, 0).Key, ModRev: e.Kv.ModRevision}
	} else {
		ev.KV = s.kv(e.Kv.Key, e.Kv.Value, e.Kv.CreateRevision, e.Kv.ModRevision)
	}
	if p := e.PrevKv; p != nil {
		prev := s.kv(p.Key, p.Value, p.CreateRevision, p.ModRevision)
		ev.PrevKV = &prev
	}
	return ev
}
