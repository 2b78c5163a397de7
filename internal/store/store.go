package store

import (
	"context"
	"errors"
	"strconv"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a Txn condition did not hold; nothing was written.
	ErrConflict = errors.New("store: conflict")
	// ErrCompacted: the requested revision is older than retained history.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store: closed")
	// ErrInvalid: a key, value or Txn is malformed.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrFenced: a Txn made under a leadership term found that the term
	// had ended (another server may lead); nothing was written.
	ErrFenced = errors.New("store: leadership lost")
	// ErrUnavailable: the store could not be reached, or lost the request
	// on its way (a member stopping, a connection dropped, an election
	// among its members). A write that failed so may or may not have been
	// applied; the caller reads before writing again.
	ErrUnavailable = errors.New("store: unavailable")
)

// Store is a revisioned key-value store with optimistic concurrency. All
// methods are safe for concurrent use. See the package documentation for the
// contract.
type Store interface {
	// Get returns the live value of key, or an error matching ErrNotFound.
	Get(ctx context.Context, key string) (KV, error)
	// List returns all live keys that start with prefix, sorted by key, and
	// the store revision at which they were read. An empty prefix lists
	// everything.
	List(ctx context.Context, prefix string) (kvs []KV, rev int64, err error)
	// ListPage returns, sorted by key, at most limit live keys that start
	// with prefix and sort after after ("" starts at the first), as they
	// were at revision rev, and that revision. rev 0 reads the current
	// revision: pass the revision the first page returned to read the next
	// pages of the same listing. more reports that keys may remain after the
	// last one returned; continue with after set to it. A page may be short
	// (or, only when more is false, empty). A revision the backend can no
	// longer read returns an error matching ErrCompacted: list again from
	// rev 0. limit must be positive and rev not above the current revision
	// (ErrInvalid). This is etcd's Range with a start key, a limit and a
	// revision.
	ListPage(ctx context.Context, prefix, after string, limit int, rev int64) (kvs []KV, atRev int64, more bool, err error)
	// Rev returns the current store revision.
	Rev(ctx context.Context) (int64, error)
	// Txn applies txn atomically once it is durable and returns the revision
	// it committed (or the current revision when it changed nothing). If ctx
	// ends before the result is known, Txn returns ctx's error and the txn
	// may or may not have been applied.
	Txn(ctx context.Context, txn Txn) (rev int64, err error)
	// Watch streams every change under prefix with a revision greater than
	// fromRev. The channel is closed when ctx is done or the store closes;
	// an Event with Err set (ErrCompacted, ErrInvalid, ErrClosed) is the
	// last one sent before the close.
	Watch(ctx context.Context, prefix string, fromRev int64) <-chan Event
	// Close waits for queued transactions, ends all watches and releases
	// the backend. Later calls return ErrClosed.
	Close() error
}

// KV is one key's value and revisions.
type KV struct {
	Key   string
	Value []byte
	// CreateRev is the revision that created the key since it was last absent.
	CreateRev int64
	// ModRev is the revision that last wrote the key.
	ModRev int64
}

// OpType says what a transaction operation or a watch event does to a key.
type OpType uint8

// Operation and event types.
const (
	Put OpType = iota + 1
	Delete
)

func (t OpType) String() string {
	switch t {
	case Put:
		return "PUT"
	case Delete:
		return "DELETE"
	}
	return "OpType(" + strconv.Itoa(int(t)) + ")"
}

// Event is one change delivered by Watch, or the error that ends a watch.
type Event struct {
	Type OpType
	// Rev is the revision of the transaction that made the change.
	Rev int64
	// KV is the key after the change. For Delete only Key is set and ModRev
	// is the deleting revision.
	KV KV
	// PrevKV is the key before the change, nil if it did not exist.
	PrevKV *KV
	// Err, when non-nil, ends the watch: Type, Rev and KV are unset.
	Err error
}
