package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
)

// campaign runs e.Campaign(value) in the background and returns the
// channel its term arrives on.
func campaign(t *testing.T, e *Election, value string) <-chan *Term {
	t.Helper()
	ch := make(chan *Term, 1)
	go func() {
		term, err := e.Campaign(t.Context(), value)
		if err != nil {
			if t.Context().Err() == nil {
				t.Errorf("campaign %s: %v", value, err)
			}
			close(ch)
			return
		}
		ch <- term
	}()
	return ch
}

func leads(t *testing.T, ch <-chan *Term, within time.Duration) *Term {
	t.Helper()
	select {
	case term := <-ch:
		if term == nil {
			t.Fatal("campaign failed")
		}
		return term
	case <-time.After(within):
		t.Fatalf("no leadership within %v", within)
	}
	return nil
}

// One leader at a time; a fenced write of a term that ended (resigned, or
// whose lease expired without renewal, as after a crash) writes nothing
// and says so; the next candidate leads within the lease's TTL.
func TestElectionFencesEndedTerms(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := open(t, c, "/elect"), open(t, c, "/elect")
	ea, eb := a.Election(time.Second), b.Election(time.Second)

	ta := leads(t, campaign(t, ea, "http://a"), 10*time.Second)
	chB := campaign(t, eb, "http://b")
	if got, err := eb.Leader(t.Context()); err != nil || got != "http://a" {
		t.Fatalf("leader = %q, %v; want http://a", got, err)
	}
	rev := put(t, ta.Store(), "/k", "a1")
	select {
	case <-chB:
		t.Fatal("b leads while a does")
	case <-time.After(1500 * time.Millisecond):
	}

	// a's term ends without a word, as a crashed or partitioned leader's
	// does: its lease is no longer renewed and expires.
	ta.sess.Orphan()
	start := time.Now()
	tb := leads(t, chB, 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("b led %v after a stopped renewing a 1s lease", d)
	}
	_, err := ta.Store().Txn(t.Context(), store.Txn{Then: []store.Op{store.PutOp("/k", []byte("stale"))}})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a's write after its term: %v, want ErrFenced", err)
	}
	kv, err := a.Get(t.Context(), "/k")
	if err != nil || string(kv.Value) != "a1" || kv.ModRev != rev {
		t.Fatalf("/k = %q at %d (%v), want a1 at %d", kv.Value, kv.ModRev, err, rev)
	}
	// A fenced Txn whose own condition fails is a conflict, not a lost
	// term.
	_, err = tb.Store().Txn(t.Context(), store.Txn{If: []store.Cond{store.ModRevIs("/k", rev+100)},
		Then: []store.Op{store.PutOp("/k", []byte("b"))}})
	if !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrFenced) {
		t.Fatalf("conflicting write in b's term: %v, want ErrConflict", err)
	}
	put(t, tb.Store(), "/k", "b1")

	// Resigning hands over at once.
	chA := campaign(t, ea, "http://a")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := tb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	ta2 := leads(t, chA, 5*time.Second)
	if _, err := tb.Store().Txn(t.Context(), store.Txn{Then: []store.Op{store.PutOp("/k", []byte("stale"))}}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("b's write after resigning: %v, want ErrFenced", err)
	}
	put(t, ta2.Store(), "/k", "a2")
	if got, err := ea.Leader(t.Context()); err != nil || got != "http://a" {
		t.Fatalf("leader = %q, %v; want http://a", got, err)
	}

	// The election lives beside the store: listing and watching it never
	// show the candidates' keys.
	kvs, _, err := a.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if kv.Key != "/k" {
			t.Errorf("store lists %q", kv.Key)
		}
	}
	if !strings.HasSuffix(ea.pfx, ".leader") || strings.HasPrefix(ea.pfx+"/", a.root) {
		t.Errorf("election prefix %q inside the store's %q", ea.pfx, a.root)
	}
}

// Observe says who leads as elections happen: none, then each next
// leader; a reader that fell behind reads the latest leader, not a stale
// one; the channel closes when ctx ends.
func TestElectionObserve(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := open(t, c, "/observe"), open(t, c, "/observe")
	ea, eb := a.Election(time.Second), b.Election(time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	seen := eb.Observe(ctx)
	next := func(want string) {
		t.Helper()
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("observed %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change observed within 10s; want %q", want)
		}
	}
	next("")
	ta := leads(t, campaign(t, ea, "http://a"), 10*time.Second)
	next("http://a")

	// b's candidacy changes nothing; a's crash (its lease left to expire)
	// makes b the leader. Read only after both: the latest is b.
	chB := campaign(t, eb, "http://b")
	ta.sess.Orphan()
	tb := leads(t, chB, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	next("http://b")
	select {
	case got := <-seen:
		t.Fatalf("observed %q after the latest leader", got)
	default:
	}
	if err := tb.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
	next("")
	cancel()
	select {
	case _, open := <-seen:
		if open {
			t.Fatal("a value after ctx ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel stayed open after ctx ended")
	}
}
