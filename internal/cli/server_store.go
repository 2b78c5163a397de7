package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/bolt"
	"github.com/allot-dev/allot/internal/store/etcd"
)

// storeWhere is the store allot server keeps its state in: a bolt file in
// a directory, or an etcd cluster.
type storeWhere struct {
	boltDir string       // set for bolt
	etcd    *etcd.Config // set for etcd
}

// parseStoreFlag reads --store: "" (bolt in the data directory),
// "bolt:DIR" or "etcd://HOST:PORT[,HOST:PORT…][/prefix]".
func parseStoreFlag(flag, data string) (storeWhere, error) {
	switch {
	case flag == "":
		return storeWhere{boltDir: data}, nil
	case strings.HasPrefix(flag, "bolt:"):
		dir := strings.TrimPrefix(flag, "bolt:")
		if dir == "" || strings.ContainsRune(dir, 0) {
			return storeWhere{}, fmt.Errorf("--store %q: bolt: needs a directory, as in bolt:/var/lib/allot", flag)
		}
		return storeWhere{boltDir: dir}, nil
	case strings.HasPrefix(flag, etcd.Scheme):
		cfg, err := etcd.ParseURL(flag)
		if err != nil {
			return storeWhere{}, fmt.Errorf("--store: %w", err)
		}
		return storeWhere{etcd: &cfg}, nil
	}
	return storeWhere{}, fmt.Errorf("--store %q: want bolt:DIR or etcd://HOST:PORT[,HOST:PORT...][/prefix]", flag)
}

// open opens the store, creating a bolt directory (mode 0700) if needed.
func (w storeWhere) open(ctx context.Context, log *slog.Logger) (store.Store, error) {
	if w.etcd != nil {
		st, err := etcd.Open(ctx, *w.etcd)
		if err != nil {
			return nil, err
		}
		log.Info("store", "kind", "etcd", "endpoints", strings.Join(w.etcd.Endpoints, ","), "prefix", st.Prefix())
		return st, nil
	}
	if err := os.MkdirAll(w.boltDir, 0o700); err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}
	path := filepath.Join(w.boltDir, "allot.db")
	st, err := bolt.Open(path, nil)
	if err != nil {
		return nil, err
	}
	log.Debug("store", "kind", "bolt", "path", path)
	return st, nil
}
