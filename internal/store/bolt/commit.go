package bolt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/allot-dev/allot/internal/store"
)

// A request is one Txn call waiting for the committer.
type request struct {
	ctx  context.Context
	txn  store.Txn
	done chan result // buffered; receives exactly one result
}

type result struct {
	rev int64
	err error
}

// errNothingWritten rolls back a batch in which every request failed its
// conditions or changed nothing, saving the fsync.
var errNothingWritten = errors.New("nothing written")

// Txn implements store.Store. It returns once the commit holding txn is on
// disk.
func (s *Store) Txn(ctx context.Context, txn store.Txn) (int64, error) {
	if err := txn.Validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	r := &request{ctx: ctx, txn: own(txn), done: make(chan result, 1)}
	select {
	case s.reqs <- r:
	case <-s.closing:
		return 0, store.ErrClosed
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case res := <-r.done:
		return res.rev, res.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.stopped:
		// The committer answers every request it took before it exits.
		select {
		case res := <-r.done:
			return res.rev, res.err
		default:
			return 0, store.ErrClosed
		}
	}
}

// own copies txn so the caller may reuse its buffers, and sorts the
// operations by key so a revision's events come out in key order.
func own(txn store.Txn) store.Txn {
	ops := make([]store.Op, len(txn.Then))
	for i, op := range txn.Then {
		ops[i] = store.Op{Type: op.Type, Key: op.Key}
		if op.Type == store.Put {
			ops[i].Value = append(make([]byte, 0, len(op.Value)), op.Value...)
		}
	}
	slices.SortFunc(ops, func(a, b store.Op) int { return strings.Compare(a.Key, b.Key) })
	return store.Txn{If: slices.Clone(txn.If), Then: ops}
}

// commitLoop is the committer: it takes every queued request (up to
// maxBatch), commits them together and answers each. Requests that arrive
// during a commit form the next batch, so the batch size follows the load.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	batch := make([]*request, 0, s.maxBatch)
	for {
		select {
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		case <-s.closing:
			s.drain(batch[:0])
			return
		}
	fill:
		for len(batch) < s.maxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// drain commits what is still queued when Close starts.
func (s *Store) drain(batch []*request) {
	for {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
			if len(batch) == s.maxBatch {
				s.commit(batch)
				batch = batch[:0]
			}
		default:
			if len(batch) > 0 {
				s.commit(batch)
			}
			return
		}
	}
}

// commit applies batch in one bbolt transaction, publishes its events and
// answers every request. If the bbolt transaction fails, nothing of the
// batch was written and each request is retried alone, so one bad request
// cannot fail the others.
func (s *Store) commit(batch []*request) {
	results := make([]result, len(batch))
	var (
		events []store.Event
		rev    int64
		txns   int64
	)
	err := s.db.Update(func(tx *bbolt.Tx) error {
		events = events[:0]
		meta, kvb := tx.Bucket(bucketMeta), tx.Bucket(bucketKV)
		var err error
		if rev, err = decodeUint("revision", meta.Get(keyRev)); err != nil {
			return err
		}
		start, written := rev, int64(0)
		for i, r := range batch {
			if err := r.ctx.Err(); err != nil {
				results[i] = result{err: err}
				continue
			}
			evs, err := apply(kvb, r.txn, rev+1)
			var conflict *store.ConflictError
			switch {
			case errors.As(err, &conflict):
				results[i] = result{err: err}
				continue
			case err != nil:
				return err
			}
			if len(evs) > 0 {
				written++
				rev++
				events = append(events, evs...)
			}
			results[i] = result{rev: rev}
		}
		if rev == start {
			return errNothingWritten
		}
		txns = written
		return meta.Put(keyRev, encodeUint(rev))
	})
	switch {
	case errors.Is(err, errNothingWritten):
	case err != nil && len(batch) > 1:
		for _, r := range batch {
			s.commit([]*request{r})
		}
		return
	case err != nil:
		batch[0].done <- result{err: fmt.Errorf("store/bolt: commit: %w", err)}
		return
	default:
		s.commits.Add(1)
		s.txns.Add(txns)
		s.publish(rev, events)
	}
	for i, r := range batch {
		r.done <- results[i]
	}
}

// apply checks txn's conditions and writes its operations at rev into kvb,
// returning the events it caused (none if it changed nothing). A failed
// condition returns a *store.ConflictError before anything is written.
func apply(kvb *bbolt.Bucket, txn store.Txn, rev int64) ([]store.Event, error) {
	for _, c := range txn.If {
		b := kvb.Get([]byte(c.Key))
		if b != nil && len(b) < recordHeader {
			return nil, fmt.Errorf("store/bolt: corrupt record for %q: %d bytes", c.Key, len(b))
		}
		if got := modRevOf(b); got != c.ModRev {
			return nil, &store.ConflictError{Key: c.Key, Want: c.ModRev, Got: got}
		}
	}
	events := make([]store.Event, 0, len(txn.Then))
	for _, op := range txn.Then {
		key := []byte(op.Key)
		var prev *store.KV
		if b := kvb.Get(key); b != nil {
			kv, err := decodeRecord(op.Key, b)
			if err != nil {
				return nil, err
			}
			prev = &kv
		}
		switch op.Type {
		case store.Put:
			create := rev
			if prev != nil {
				create = prev.CreateRev
			}
			if err := kvb.Put(key, encodeRecord(create, rev, op.Value)); err != nil {
				return nil, fmt.Errorf("store/bolt: put %q: %w", op.Key, err)
			}
			events = append(events, store.Event{
				Type: store.Put, Rev: rev, PrevKV: prev,
				KV: store.KV{Key: op.Key, Value: op.Value, CreateRev: create, ModRev: rev},
			})
		case store.Delete:
			if prev == nil {
				continue
			}
			if err := kvb.Delete(key); err != nil {
				return nil, fmt.Errorf("store/bolt: delete %q: %w", op.Key, err)
			}
			events = append(events, store.Event{
				Type: store.Delete, Rev: rev, PrevKV: prev,
				KV: store.KV{Key: op.Key, ModRev: rev},
			})
		}
	}
	return events, nil
}
