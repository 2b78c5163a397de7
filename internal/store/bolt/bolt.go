package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/allot-dev/allot/internal/store"
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// History is how many events Watch can replay to a watcher that is
	// behind; 16384 when zero.
	History int
	// MaxBatch caps how many Txn calls share one commit; 1024 when zero.
	MaxBatch int
	// LockTimeout is how long Open waits for another process to release
	// the file; 1s when zero.
	LockTimeout time.Duration
}

// Store is a store.Store backed by one bbolt file.
type Store struct {
	db       *bbolt.DB
	maxBatch int
	history  int

	reqs      chan *request // Txn calls waiting for the committer
	closing   chan struct{} // closed when Close starts
	stopped   chan struct{} // closed when the committer has exited
	closeOnce sync.Once
	watchers  sync.WaitGroup // running watch goroutines
	commits   atomic.Int64   // bbolt commits made; with txns, the batching
	txns      atomic.Int64   // Txn calls that wrote something

	mu        sync.Mutex // guards the fields below
	closed    bool
	rev       int64         // last published revision
	hist      []store.Event // events with compacted < Rev <= rev, in order
	compacted int64         // events at or below this revision are gone
	notify    chan struct{} // closed and replaced on each publish
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the store file at path.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.History <= 0 {
		o.History = 16384
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: o.LockTimeout,
		// The freelist is rebuilt on open instead of written per commit,
		// which keeps each group commit smaller.
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("store/bolt: open %s: %w", path, err)
	}
	var rev int64
	err = db.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketKV); err != nil {
			return err
		}
		if v := meta.Get(keyVersion); v == nil {
			if err := meta.Put(keyVersion, encodeUint(formatVersion)); err != nil {
				return err
			}
			return meta.Put(keyRev, encodeUint(0))
		} else if ver, err := decodeUint("format version", v); err != nil {
			return err
		} else if ver != formatVersion {
			return fmt.Errorf("store/bolt: format version %d, this build reads %d", ver, formatVersion)
		}
		rev, err = decodeUint("revision", meta.Get(keyRev))
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store/bolt: open %s: %w", path, err)
	}
	s := &Store{
		db:        db,
		maxBatch:  o.MaxBatch,
		history:   o.History,
		reqs:      make(chan *request, 4*o.MaxBatch),
		closing:   make(chan struct{}),
		stopped:   make(chan struct{}),
		rev:       rev,
		compacted: rev,
		notify:    make(chan struct{}),
	}
	go s.commitLoop()
	return s, nil
}

// Path returns the file the store lives in.
func (s *Store) Path() string { return s.db.Path() }

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	if err := store.ValidateKey("key", key); err != nil {
		return store.KV{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.KV{}, err
	}
	var kv store.KV
	err := s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKV).Get([]byte(key))
		if b == nil {
			return fmt.Errorf("%w: %s", store.ErrNotFound, key)
		}
		var err error
		kv, err = decodeRecord(key, b)
		return err
	})
	return kv, err
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]store.KV, int64, error) {
	if err := store.ValidatePrefix("prefix", prefix); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var (
		kvs []store.KV
		rev int64
	)
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		if rev, err = decodeUint("revision", tx.Bucket(bucketMeta).Get(keyRev)); err != nil {
			return err
		}
		p := []byte(prefix)
		c := tx.Bucket(bucketKV).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			kv, err := decodeRecord(string(k), v)
			if err != nil {
				return err
			}
			kvs = append(kvs, kv)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return kvs, rev, nil
}

// Rev implements store.Store.
func (s *Store) Rev(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	return s.rev, nil
}

// view runs fn in a bbolt read transaction, mapping a closed file to
// store.ErrClosed.
func (s *Store) view(fn func(*bbolt.Tx) error) error {
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
	}
	err := s.db.View(fn)
	if errors.Is(err, bbolt.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return err
}

// Close implements store.Store. It commits the Txn calls already queued,
// ends every watch and closes the file.
func (s *Store) Close() error {
	err := store.ErrClosed
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.stopped
		s.mu.Lock()
		s.closed = true
		close(s.notify)
		s.mu.Unlock()
		s.watchers.Wait()
		err = s.db.Close()
	})
	return err
}

// Stats counts the store's work since Open.
type Stats struct {
	Commits int64 // bbolt commits (fsyncs)
	Txns    int64 // Txn calls that wrote something; Txns/Commits is the batching
}

// Stats returns counters since Open.
func (s *Store) Stats() Stats { return Stats{Commits: s.commits.Load(), Txns: s.txns.Load()} }
