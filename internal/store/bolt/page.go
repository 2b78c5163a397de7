package bolt

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/allot-dev/allot/internal/store"
)

// ListPage implements store.Store.
//
// The file keeps only the latest revision, so each page is one bbolt read
// transaction at the current revision cur, rewound to the asked revision
// with the watch history: a key changed in (rev, cur] takes the value its
// first such change replaced (PrevKV), or is dropped if it did not exist at
// rev. The history reaches back to the compacted revision; an older rev
// returns store.ErrCompacted. The read transaction is closed before the
// history is consulted, so a listing never holds bbolt's file lock between
// pages, nor while it waits for the committer to publish.
func (s *Store) ListPage(ctx context.Context, prefix, after string, limit int, rev int64) ([]store.KV, int64, bool, error) {
	if err := store.ValidatePrefix("prefix", prefix); err != nil {
		return nil, 0, false, err
	}
	if limit <= 0 {
		return nil, 0, false, &store.InvalidError{Field: "limit", Msg: fmt.Sprintf("is %d, must be positive", limit)}
	}
	if rev < 0 {
		return nil, 0, false, &store.InvalidError{Field: "rev", Msg: fmt.Sprintf("is %d, must be >= 0", rev)}
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, false, err
		}
		kvs, cur, more, err := s.readPage(prefix, after, limit)
		if err != nil {
			return nil, 0, false, err
		}
		if rev == 0 || rev == cur {
			return kvs, cur, more, nil
		}
		if rev > cur {
			return nil, 0, false, &store.InvalidError{Field: "rev", Msg: fmt.Sprintf("is %d, the store is at %d", rev, cur)}
		}
		changed, err := s.before(ctx, prefix, after, rev, cur)
		if err != nil {
			return nil, 0, false, err
		}
		end := ""
		if more {
			end = kvs[len(kvs)-1].Key
		}
		kvs, more = rewind(kvs, more, changed, limit)
		if len(kvs) > 0 || !more {
			return kvs, rev, more, nil
		}
		// Every key read was created after rev: read on past them.
		after = end
	}
}

// readPage reads up to limit keys after after under prefix at the current
// revision, and whether more remain.
func (s *Store) readPage(prefix, after string, limit int) ([]store.KV, int64, bool, error) {
	var (
		kvs  []store.KV
		cur  int64
		more bool
	)
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		if cur, err = decodeUint("revision", tx.Bucket(bucketMeta).Get(keyRev)); err != nil {
			return err
		}
		p := []byte(prefix)
		c := tx.Bucket(bucketKV).Cursor()
		k, v := c.Seek(p)
		if after != "" && after >= prefix {
			a := []byte(after)
			k, v = c.Seek(a)
			if k != nil && bytes.Equal(k, a) {
				k, v = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if len(kvs) == limit {
				more = true
				break
			}
			kv, err := decodeRecord(string(k), v)
			if err != nil {
				return err
			}
			kvs = append(kvs, kv)
		}
		return nil
	})
	return kvs, cur, more, err
}

// before returns, for each key under prefix after after that changed in
// (rev, cur], its KV at rev (nil: absent at rev). It waits until the
// committer has published cur.
func (s *Store) before(ctx context.Context, prefix, after string, rev, cur int64) (map[string]*store.KV, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, store.ErrClosed
		}
		if s.rev >= cur {
			break
		}
		wake := s.notify
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer s.mu.Unlock()
	if rev < s.compacted {
		return nil, fmt.Errorf("%w: list %q at revision %d, history starts after %d", store.ErrCompacted, prefix, rev, s.compacted)
	}
	out := map[string]*store.KV{}
	i := sort.Search(len(s.hist), func(i int) bool { return s.hist[i].Rev > rev })
	for ; i < len(s.hist) && s.hist[i].Rev <= cur; i++ {
		ev := &s.hist[i]
		k := ev.KV.Key
		if !strings.HasPrefix(k, prefix) || k <= after {
			continue
		}
		if _, seen := out[k]; !seen {
			out[k] = ev.PrevKV // the first change after rev replaced the value at rev
		}
	}
	return out, nil
}

// rewind turns a page read at a later revision into the page at the
// revision changed describes. The page read covers the keys up to its last
// one when more remain, else every key after it; keys changed since are
// replaced, dropped or restored within that span, and the result is cut to
// limit.
func rewind(kvs []store.KV, more bool, changed map[string]*store.KV, limit int) ([]store.KV, bool) {
	if len(changed) == 0 {
		return kvs, more
	}
	end := ""
	if more {
		end = kvs[len(kvs)-1].Key
	}
	out := make([]store.KV, 0, len(kvs))
	for _, kv := range kvs {
		if _, ok := changed[kv.Key]; !ok {
			out = append(out, kv)
		}
	}
	for k, prev := range changed {
		if prev != nil && (end == "" || k <= end) {
			out = append(out, *prev)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	if len(out) > limit {
		return out[:limit], true
	}
	return out, more
}
