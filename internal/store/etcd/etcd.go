package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/allot-dev/allot/internal/store"
)

// DefaultPrefix is the namespace used when Config.Prefix is empty.
const DefaultPrefix = "/allot/"

// MaxPrefixLen bounds Config.Prefix in bytes.
const MaxPrefixLen = 256

// Config says which etcd cluster to use and where in it.
type Config struct {
	// Endpoints are the cluster's client URLs or HOST:PORT addresses; the
	// client fails over between them.
	Endpoints []string
	// Prefix is the namespace of this installation; DefaultPrefix when
	// empty. A "/" is appended when it does not end in one.
	Prefix string
	// DialTimeout bounds Open's wait for the cluster to answer; 5s when
	// zero.
	DialTimeout time.Duration
	// TLS, when set, is used for every connection to the cluster, and
	// endpoints given as http:// URLs (as ParseURL writes them) are
	// dialled as https://.
	TLS *tls.Config
}

// Store is a store.Store kept in etcd. All methods are safe for concurrent
// use.
type Store struct {
	cli    *clientv3.Client
	root   string // the namespace: every etcd key starts with it
	owned  bool   // Close closes cli
	ctx    context.Context
	cancel context.CancelFunc // ends every watch on Close

	mu       sync.Mutex // guards closed and the Add calls of ops and watchers
	closed   bool
	ops      sync.WaitGroup // calls in flight
	watchers sync.WaitGroup // running watch goroutines
}

var _ store.Store = (*Store)(nil)

// NormalizePrefix checks a namespace prefix and returns it ending in "/",
// DefaultPrefix for "".
func NormalizePrefix(prefix string) (string, error) {
	switch {
	case prefix == "":
		return DefaultPrefix, nil
	case len(prefix) > MaxPrefixLen:
		return "", &store.InvalidError{Field: "prefix", Msg: fmt.Sprintf("is %d bytes, limit %d", len(prefix), MaxPrefixLen)}
	case !utf8.ValidString(prefix):
		return "", &store.InvalidError{Field: "prefix", Msg: "is not valid UTF-8"}
	case strings.ContainsRune(prefix, 0):
		return "", &store.InvalidError{Field: "prefix", Msg: "contains a NUL byte"}
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix, nil
}

// Open connects to the cluster in cfg and checks that it answers within
// cfg.DialTimeout.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, &store.InvalidError{Field: "endpoints", Msg: "must name at least one etcd endpoint"}
	}
	for i, ep := range cfg.Endpoints {
		if strings.TrimSpace(ep) == "" {
			return nil, &store.InvalidError{Field: fmt.Sprintf("endpoints[%d]", i), Msg: "must not be empty"}
		}
	}
	prefix, err := NormalizePrefix(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.TLS != nil {
		eps := make([]string, len(cfg.Endpoints))
		for i, ep := range cfg.Endpoints {
			if rest, ok := strings.CutPrefix(ep, "http://"); ok {
				ep = "https://" + rest
			}
			eps[i] = ep
		}
		cfg.Endpoints = eps
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		TLS:         cfg.TLS,
		// etcd decides what is too large (--max-request-bytes) and says
		// so; the client lets any Txn within store's limits through.
		MaxCallSendMsgSize: store.MaxTxnBytes + 1<<20,
		MaxCallRecvMsgSize: math.MaxInt32,
		Logger:             zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("store/etcd: connect to %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	s, _ := New(cli, prefix) // prefix is already valid
	s.owned = true
	pctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := s.Rev(pctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store/etcd: %s does not answer within %v: %w", strings.Join(cfg.Endpoints, ","), cfg.DialTimeout, err)
	}
	return s, nil
}

// New returns a Store on an existing client, under prefix (see
// Config.Prefix). Close does not close cli.
func New(cli *clientv3.Client, prefix string) (*Store, error) {
	root, err := NormalizePrefix(prefix)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Store{cli: cli, root: root, ctx: ctx, cancel: cancel}, nil
}

// Client returns the etcd client, for leader election and fenced commits.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Prefix returns the namespace every key of this store lives under.
func (s *Store) Prefix() string { return s.root }

// EtcdKey returns the etcd key that holds store key key.
func (s *Store) EtcdKey(key string) string { return s.root + key }

// begin registers a call in flight; it fails once Close has started.
func (s *Store) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.ops.Add(1)
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	if err := store.ValidateKey("key", key); err != nil {
		return store.KV{}, err
	}
	if err := s.begin(); err != nil {
		return store.KV{}, err
	}
	defer s.ops.Done()
	resp, err := s.cli.Get(ctx, s.root+key)
	if err != nil {
		return store.KV{}, s.fail("get "+key, err)
	}
	if len(resp.Kvs) == 0 {
		return store.KV{}, fmt.Errorf("%w: %s", store.ErrNotFound, key)
	}
	return s.kv(resp.Kvs[0].Key, resp.Kvs[0].Value, resp.Kvs[0].CreateRevision, resp.Kvs[0].ModRevision), nil
}

// listPage is how many keys List reads with one Range.
const listPage = 1000

// List implements store.Store: pages of ListPage at the revision of the
// first, so that no single etcd response holds the whole prefix.
func (s *Store) List(ctx context.Context, prefix string) ([]store.KV, int64, error) {
	if err := store.ValidatePrefix("prefix", prefix); err != nil {
		return nil, 0, err
	}
	var (
		out   []store.KV
		after string
		rev   int64
	)
	for restarts := 0; ; {
		kvs, r, more, err := s.ListPage(ctx, prefix, after, listPage, rev)
		if errors.Is(err, store.ErrCompacted) && restarts < 10 {
			// Compacted between two pages: read the whole listing again.
			out, after, rev = out[:0], "", 0
			restarts++
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		rev = r
		out = append(out, kvs...)
		if !more {
			return out, rev, nil
		}
		after = kvs[len(kvs)-1].Key
	}
}

// Rev implements store.Store with a linearizable read of the cluster
// revision.
func (s *Store) Rev(ctx context.Context) (int64, error) {
	if err := s.begin(); err != nil {
		return 0, err
	}
	defer s.ops.Done()
	resp, err := s.cli.Get(ctx, s.root, clientv3.WithCountOnly())
	if err != nil {
		return 0, s.fail("read revision", err)
	}
	return resp.Header.Revision, nil
}

// closeWait is how long Close lets calls in flight finish before it closes
// the client under them.
const closeWait = 10 * time.Second

// Close implements store.Store: calls in flight finish (for at most
// closeWait when Open made the client), then every watch ends.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.ops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		// Calls stuck on a cluster that does not answer: closing our
		// own client ends them with an error.
		if s.owned {
			s.cli.Close()
		}
		<-done
	}
	s.cancel()
	s.watchers.Wait()
	if !s.owned {
		return nil
	}
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("store/etcd: close client: %w", err)
	}
	return nil
}

// kv converts an etcd key-value into the store's, without the namespace.
func (s *Store) kv(key, value []byte, createRev, modRev int64) store.KV {
	if value == nil {
		value = []byte{}
	}
	return store.KV{Key: strings.TrimPrefix(string(key), s.root), Value: value, CreateRev: createRev, ModRev: modRev}
}

// fail maps an etcd client error to the store's errors; op says what was
// being done.
func (s *Store) fail(op string, err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %s: %v", store.ErrCompacted, op, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return &store.InvalidError{Field: "rev", Msg: "is above the cluster's revision"}
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return &store.InvalidError{Field: "then", Msg: "has more operations or conditions than etcd's --max-txn-ops allows"}
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		return &store.InvalidError{Field: "then", Msg: "is larger than etcd's --max-request-bytes allows"}
	case errors.Is(err, clientv3.ErrNoAvailableEndpoints), errors.Is(err, rpctypes.ErrNoLeader),
		errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrStopped), errors.Is(err, rpctypes.ErrTimeout),
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail), errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost):
		return fmt.Errorf("store/etcd: %s: %w: %v", op, store.ErrUnavailable, err)
	}
	if s.ctx.Err() != nil {
		return fmt.Errorf("%w: %s: %v", store.ErrClosed, op, err)
	}
	if st, ok := status.FromError(err); ok {
		switch {
		case st.Code() == codes.ResourceExhausted:
			// etcd sizes its gRPC limit from --max-request-bytes.
			return &store.InvalidError{Field: "then", Msg: "is larger than etcd's --max-request-bytes allows: " + st.Message()}
		case st.Code() == codes.Unavailable, st.Code() == codes.Unknown && strings.Contains(st.Message(), "stopped"):
			// No member reachable, a connection lost mid-request, or a
			// member's raft stopping under it ("raft: stopped").
			return fmt.Errorf("store/etcd: %s: %w: %v", op, store.ErrUnavailable, err)
		}
	}
	return fmt.Errorf("store/etcd: %s: %w", op, err)
}
