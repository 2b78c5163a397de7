package etcd

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/store"
)

// ListPage implements store.Store with one linearizable etcd Range: from
// just after the cursor (or the start of prefix) to the end of prefix, at
// most limit keys, at revision rev (0: the current one).
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
	if err := s.begin(); err != nil {
		return nil, 0, false, err
	}
	defer s.ops.Done()

	from := s.root + prefix
	end := clientv3.GetPrefixRangeEnd(from)
	past := false // the cursor lies beyond every key of prefix
	if after >= prefix && after != "" {
		if !strings.HasPrefix(after, prefix) {
			// after > prefix without starting with it: it sorts after
			// every key that does.
			past = true
		}
		from = s.root + after + "\x00"
	}
	if past {
		// Nothing to read, but the revision must still be checked:
		// a compacted or future rev is an error on every page.
		resp, err := s.cli.Get(ctx, s.root, clientv3.WithCountOnly(), clientv3.WithRev(rev))
		if err != nil {
			return nil, 0, false, s.fail(fmt.Sprintf("list %q at revision %d", prefix, rev), err)
		}
		return nil, pageRev(rev, resp.Header.Revision), false, nil
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(limit)), clientv3.WithRev(rev))
	if err != nil {
		return nil, 0, false, s.fail(fmt.Sprintf("list %q at revision %d", prefix, rev), err)
	}
	kvs := make([]store.KV, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		kvs[i] = s.kv(kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision)
	}
	return kvs, pageRev(rev, resp.Header.Revision), resp.More, nil
}

// pageRev is the revision a page was read at: the one asked for, or the
// cluster's when none was.
func pageRev(asked, header int64) int64 {
	if asked != 0 {
		return asked
	}
	return header
}
