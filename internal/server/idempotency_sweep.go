package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/store"
)

// Every CLI submit carries a fresh idempotency key, so a record is stored
// with nearly every submit; once its key has expired the record serves no
// one, and kept, the records would grow the store by some 200 bytes a
// submit for good (and an etcd store towards its space quota, past which
// it takes no writes). The leader deletes them.
const (
	// idempotencySweepEvery is how often the leader sweeps.
	idempotencySweepEvery = 10 * time.Minute
	// idempotencyGrace is how long after its expiry a record is kept, so
	// that a submit that finds a key just expired rarely races its delete
	// (it would answer 503, to be sent again).
	idempotencyGrace = time.Hour
	// idempotencySweepMax bounds the records one sweep deletes; the next
	// sweep goes on.
	idempotencySweepMax = 10_000
	// deleteBatch is the deletes of one transaction of the sweeps and
	// purges (etcd allows 128 operations in one).
	deleteBatch = 100
)

// sweepIdempotency deletes the records of keys that expired more than
// idempotencyGrace before now, idempotencySweepMax at most, each delete
// conditioned on the record read; it returns how many it deleted.
func (s *Server) sweepIdempotency(ctx context.Context, now time.Time) (int, error) {
	deleted, after := 0, ""
	var rev int64
	for deleted < idempotencySweepMax {
		kvs, atRev, more, err := s.st.ListPage(ctx, prefixIdempotency, after, 500, rev)
		if errors.Is(err, store.ErrCompacted) {
			rev = 0 // the listing's revision is gone: go on from where it was, now
			continue
		}
		if err != nil {
			return deleted, fmt.Errorf("list idempotency records: %w", err)
		}
		rev = atRev
		var expired []store.KV
		for _, kv := range kvs {
			var rec idemRecord
			if json.Unmarshal(kv.Value, &rec) == nil && now.Sub(rec.At) >= IdempotencyTTL+idempotencyGrace {
				expired = append(expired, kv)
			}
		}
		for len(expired) > 0 && deleted < idempotencySweepMax {
			batch := expired[:min(len(expired), deleteBatch, idempotencySweepMax-deleted)]
			expired = expired[len(batch):]
			gone, _, err := s.deleteRecords(ctx, batch)
			deleted += len(gone)
			if err != nil {
				return deleted, fmt.Errorf("delete expired idempotency records: %w", err)
			}
		}
		if !more || len(kvs) == 0 {
			break
		}
		after = kvs[len(kvs)-1].Key
	}
	return deleted, nil
}

// deleteRecords deletes kvs in one transaction, each on the condition that
// it is as read; a record written since (an idempotency key used again) is
// left out and the rest deleted. It returns those it deleted and the
// revision that deleted them.
func (s *Server) deleteRecords(ctx context.Context, kvs []store.KV) ([]store.KV, int64, error) {
	for len(kvs) > 0 {
		txn := store.Txn{}
		for _, kv := range kvs {
			txn.If = append(txn.If, store.ModRevIs(kv.Key, kv.ModRev))
			txn.Then = append(txn.Then, store.DeleteOp(kv.Key))
		}
		rev, err := s.st.Txn(ctx, txn)
		var ce *store.ConflictError
		if !errors.As(err, &ce) {
			if err != nil {
				return nil, 0, err
			}
			return kvs, rev, nil
		}
		kept := kvs[:0]
		for _, kv := range kvs {
			if kv.Key != ce.Key {
				kept = append(kept, kv)
			}
		}
		if len(kept) == len(kvs) {
			return nil, 0, err
		}
		kvs = kept
	}
	return nil, 0, nil
}

// deleteEvery runs sweep now and then every interval until ctx ends,
// logging what it deleted (what names the records): the leader's sweeps of
// expired idempotency records and of jobs past their retention.
func (s *Server) deleteEvery(ctx context.Context, interval time.Duration, what string, sweep func(context.Context, time.Time) (int, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := sweep(ctx, s.clock.Now())
		if err != nil && ctx.Err() == nil {
			s.log.Warn("delete "+what, "deleted", n, "err", err)
		} else if n > 0 {
			s.log.Info(what+" deleted", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
