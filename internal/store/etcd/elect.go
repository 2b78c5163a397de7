package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/allot-dev/allot/internal/store"
)

// DefaultTermTTL is how long a leader that stops renewing its lease (a
// crash, a partition) keeps leadership before another server may take it.
const DefaultTermTTL = 3 * time.Second

// Election is the leader election of the servers that share one prefix:
// etcd's concurrency.Election on a lease, under a key range beside the
// store's (the prefix with ".leader/" in place of its last "/"), so that
// listing and watching the store never see it.
type Election struct {
	s   *Store
	ttl int    // seconds, at least 1
	pfx string // raw etcd key prefix of the candidates' keys, ending in "/"
}

// Election returns the election of the servers sharing s's prefix, whose
// leaders hold their term on a lease of ttl (DefaultTermTTL when zero,
// rounded up to whole seconds).
func (s *Store) Election(ttl time.Duration) *Election {
	if ttl <= 0 {
		ttl = DefaultTermTTL
	}
	return &Election{s: s, ttl: int(math.Ceil(ttl.Seconds())), pfx: strings.TrimSuffix(s.root, "/") + ".leader"}
}

// Term is one leadership: from a won Campaign until its lease is lost or
// it resigns. Writes made through Store commit only while it lasts.
type Term struct {
	sess  *concurrency.Session
	el    *concurrency.Election
	store *Fenced
}

// Campaign waits until value (the candidate's API URL) leads, or ctx
// ends, and returns the term.
func (e *Election) Campaign(ctx context.Context, value string) (*Term, error) {
	sess, err := concurrency.NewSession(e.s.cli, concurrency.WithTTL(e.ttl))
	if err != nil {
		return nil, e.s.fail("open election session", err)
	}
	el := concurrency.NewElection(sess, e.pfx)
	if err := el.Campaign(ctx, value); err != nil {
		_ = sess.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, e.s.fail("campaign", err)
	}
	return &Term{sess: sess, el: el, store: &Fenced{Store: e.s, f: fence{key: el.Key(), rev: el.Rev()}}}, nil
}

// Leader returns the value of the current leader, "" when none leads.
func (e *Election) Leader(ctx context.Context) (string, error) {
	resp, err := e.s.cli.Get(ctx, e.pfx+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", e.s.fail("read the leader", err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// Observe sends the value of the current leader ("" when none leads), and
// then the value of each next leader as etcd elects it, until ctx ends,
// when it closes the channel. A reader that falls behind gets the latest
// value, never a stale one after it. While etcd cannot be reached it
// tries again every second and sends nothing: the last value stands.
func (e *Election) Observe(ctx context.Context) <-chan string {
	ch := make(chan string, 1)
	go func() {
		defer close(ch)
		last, sent := "", false
		publish := func(v string) {
			if sent && v == last {
				return
			}
			last, sent = v, true
			select { // drop a value not read yet: this one replaces it
			case <-ch:
			default:
			}
			ch <- v
		}
		for ctx.Err() == nil {
			resp, err := e.s.cli.Get(ctx, e.pfx+"/", clientv3.WithFirstCreate()...)
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			v := ""
			if len(resp.Kvs) > 0 {
				v = string(resp.Kvs[0].Value)
			}
			publish(v)
			// Any change of the candidates' keys (a leader's key deleted by
			// resignation or lease expiry, a candidate's created) reads the
			// leader again; elections are rare, so a read each is cheap.
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			changed := false
			for wr := range e.s.cli.Watch(wctx, e.pfx+"/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
				if changed = len(wr.Events) > 0; changed || wr.Err() != nil {
					break
				}
			}
			cancel()
			if !changed { // the watch failed (etcd lost its quorum, a compaction)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}()
	return ch
}

// Rev is the revision at which the term began: the create revision of
// its election key, which every fenced Txn compares.
func (t *Term) Rev() int64 { return t.el.Rev() }

// Done is closed when the term's lease is lost (expired, revoked, or no
// longer renewable). A fenced Txn fails from the moment the lease
// expires in etcd, which can be before Done is closed.
func (t *Term) Done() <-chan struct{} { return t.sess.Done() }

// Store is the store with every Txn fenced on this term.
func (t *Term) Store() *Fenced { return t.store }

// Resign ends the term: the election key is deleted, so that another
// candidate leads at once, and the lease is revoked.
func (t *Term) Resign(ctx context.Context) error {
	err := t.el.Resign(ctx)
	return errors.Join(err, t.sess.Close())
}

// Fenced is a Store whose Txn also requires its term's election key to
// exist with the revision the term began at; a Txn after the term ended
// writes nothing and returns an error matching store.ErrFenced. Its other
// methods are the Store's; Close does nothing (the Store is not its own).
type Fenced struct {
	*Store
	f fence
}

var _ store.Store = (*Fenced)(nil)

// Txn implements store.Store.
func (f *Fenced) Txn(ctx context.Context, txn store.Txn) (int64, error) {
	return f.Store.txn(ctx, txn, &f.f)
}

// Close implements store.Store; it leaves the underlying Store open.
func (f *Fenced) Close() error { return nil }

// String names the term, for logs.
func (f *Fenced) String() string { return fmt.Sprintf("term of revision %d", f.f.rev) }
