package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/bolt"
	"github.com/allot-dev/allot/internal/store/etcd"
)

// benchStore is where bench e2e keeps the control plane's state: a bolt
// file in a temporary directory of its own, or a prefix of its own in an
// etcd cluster the user brings. remove deletes either at the end, so a run
// leaves nothing behind and never touches another installation's keys.
type benchStore struct {
	kind   string       // "bolt" or "etcd"
	dir    string       // bolt: the temporary directory holding allot.db
	etcd   *etcd.Config // etcd: the endpoints and the bench's prefix
	batch  int          // jobs per Txn of the history preload
	remove func()
}

// benchEtcdBatch is how many history jobs go into one etcd Txn: below
// etcd's default --max-txn-ops (128) and, at about 600 bytes a job, its
// default --max-request-bytes (1.5 MiB), so any cluster takes the preload.
const benchEtcdBatch = 100

// parseBenchStore reads bench e2e's --store: "" for bolt, or
// "etcd://HOST:PORT[,HOST:PORT…]" without a prefix (the bench picks one).
func parseBenchStore(flag string) (*etcd.Config, error) {
	if flag == "" {
		return nil, nil
	}
	if !strings.HasPrefix(flag, etcd.Scheme) {
		return nil, fmt.Errorf("--store %q: want etcd://HOST:PORT[,HOST:PORT...] (empty: bolt in a temporary directory)", flag)
	}
	if strings.Contains(strings.TrimPrefix(flag, etcd.Scheme), "/") {
		return nil, fmt.Errorf("--store %q: no /prefix: the bench writes under a new prefix of its own and deletes it at the end", flag)
	}
	cfg, err := etcd.ParseURL(flag)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return &cfg, nil
}

// newBenchStore makes the place of one run: a temporary directory, or a
// prefix /allot-bench-<time>/ (with its election beside it) on cfg's
// cluster when cfg is set.
func newBenchStore(cfg *etcd.Config) (*benchStore, error) {
	if cfg != nil {
		c := *cfg
		c.Prefix = fmt.Sprintf("/allot-bench-%x/", time.Now().UnixNano())
		b := &benchStore{kind: "etcd", etcd: &c, batch: benchEtcdBatch}
		b.remove = b.deletePrefix
		return b, nil
	}
	dir, err := os.MkdirTemp("", "allot-bench-e2e-")
	if err != nil {
		return nil, err
	}
	return &benchStore{kind: "bolt", dir: dir, batch: store.MaxTxnOps, remove: func() { os.RemoveAll(dir) }}, nil
}

// open opens the store, and for etcd the leader election that allot
// server --store etcd://… runs on it, so the bench's commits are fenced as
// production's are.
func (b *benchStore) open(ctx context.Context) (store.Store, server.Election, error) {
	if b.etcd == nil {
		st, err := bolt.Open(filepath.Join(b.dir, "allot.db"), nil)
		return st, nil, err
	}
	st, err := etcd.Open(ctx, *b.etcd)
	if err != nil {
		return nil, nil, err
	}
	return st, etcdElection{st.Election(etcd.DefaultTermTTL)}, nil
}

// describe names the store in the report.
func (b *benchStore) describe() string {
	if b.etcd == nil {
		return "bolt (fsync on every commit)"
	}
	return fmt.Sprintf("etcd (%d endpoints, leader election on)", len(b.etcd.Endpoints))
}

// deletePrefix removes every key of the bench's prefix and of its election
// range ("/allot-bench-X/" and "/allot-bench-X.leader/"), even after the
// run's context ended.
func (b *benchStore) deletePrefix() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := etcd.Open(ctx, *b.etcd)
	if err != nil {
		return
	}
	defer st.Close()
	for _, p := range []string{b.etcd.Prefix, strings.TrimSuffix(b.etcd.Prefix, "/") + ".leader/"} {
		_, _ = st.Client().Delete(ctx, p, clientv3.WithPrefix())
	}
}
