package bolt

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/allot-dev/allot/internal/store"
)

// publish records a committed revision and its events in the history and
// wakes the watchers. Only the committer calls it, before answering the
// requests, so a Txn caller that then watches from rev-1 sees its change.
func (s *Store) publish(rev int64, events []store.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev = rev
	s.hist = append(s.hist, events...)
	if over := len(s.hist) - s.history; over > 0 {
		// Drop whole revisions only, so a watcher never sees half of one.
		cut := over
		for cut < len(s.hist) && s.hist[cut].Rev == s.hist[cut-1].Rev {
			cut++
		}
		s.compacted = s.hist[cut-1].Rev
		clear(s.hist[:cut]) // let dropped values go before the next grow
		s.hist = s.hist[cut:]
	}
	close(s.notify)
	s.notify = make(chan struct{})
}

// Watch implements store.Store. Each watch runs one goroutine that reads the
// shared history at its own pace; one that falls behind the history gets
// store.ErrCompacted.
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
	go s.watch(ctx, prefix, fromRev, out)
	return out
}

func (s *Store) watch(ctx context.Context, prefix string, next int64, out chan<- store.Event) {
	defer s.watchers.Done()
	defer close(out)
	closed := func() {
		select {
		case out <- store.Event{Err: store.ErrClosed}:
		default:
		}
	}
	var batch []store.Event
	for {
		// 1. Under the lock, copy the matching events after next.
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			closed()
			return
		}
		if next < s.compacted {
			err := fmt.Errorf("%w: watch %q from revision %d, history starts after %d", store.ErrCompacted, prefix, next, s.compacted)
			s.mu.Unlock()
			select {
			case out <- store.Event{Err: err}:
			case <-ctx.Done():
			}
			return
		}
		i := sort.Search(len(s.hist), func(i int) bool { return s.hist[i].Rev > next })
		batch = batch[:0]
		for j := i; j < len(s.hist); j++ {
			if hasPrefix(&s.hist[j], prefix) {
				batch = append(batch, s.hist[j])
			}
		}
		next = max(next, s.rev)
		wake := s.notify
		s.mu.Unlock()

		// 2. Deliver them, or wait for the next commit.
		for _, ev := range batch {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			case <-s.closing:
				closed()
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		case <-s.closing:
			closed()
			return
		}
	}
}

// hasPrefix reports whether an event's key is under prefix.
func hasPrefix(ev *store.Event, prefix string) bool { return strings.HasPrefix(ev.KV.Key, prefix) }
