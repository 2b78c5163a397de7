package bolt

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/storetest"
)

func openTemp(t testing.TB, opts *Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "allot.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, nil) })
}

func TestConformanceSmallBatches(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, &Options{MaxBatch: 1, History: 64}) })
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allot.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r1, err := s.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp("/jobs/a", []byte("a1")), store.PutOp("/jobs/b", []byte("b1"))}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp("/jobs/a", []byte("a2")), store.DeleteOp("/jobs/b")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rev, _ := s.Rev(ctx); rev != r2 {
		t.Fatalf("rev after reopen %d, want %d", rev, r2)
	}
	kv, err := s.Get(ctx, "/jobs/a")
	if err != nil || string(kv.Value) != "a2" || kv.CreateRev != r1 || kv.ModRev != r2 {
		t.Fatalf("after reopen /jobs/a = %+v, %v; want a2 at %d/%d", kv, err, r1, r2)
	}
	if _, err := s.Get(ctx, "/jobs/b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted key after reopen: %v", err)
	}
	// History starts at the reopened revision.
	ev := <-s.Watch(ctx, "/", r1)
	if !errors.Is(ev.Err, store.ErrCompacted) {
		t.Fatalf("watch before reopen revision: %+v, want ErrCompacted", ev)
	}
	// Revisions continue; a CAS against the pre-close ModRev still works.
	r3, err := s.Txn(ctx, store.Txn{
		If:   []store.Cond{store.ModRevIs("/jobs/a", r2)},
		Then: []store.Op{store.PutOp("/jobs/a", []byte("a3"))},
	})
	if err != nil || r3 != r2+1 {
		t.Fatalf("txn after reopen: rev %d err %v, want %d", r3, err, r2+1)
	}
	ch := s.Watch(ctx, "/", r2)
	if ev := <-ch; ev.Err != nil || ev.Rev != r3 || string(ev.KV.Value) != "a3" || ev.PrevKV == nil || string(ev.PrevKV.Value) != "a2" {
		t.Fatalf("watch from reopen revision: %+v", ev)
	}
}

func TestSecondOpenTimesOut(t *testing.T) {
	s := openTemp(t, nil)
	if _, err := Open(s.Path(), &Options{LockTimeout: 50 * time.Millisecond}); err == nil {
		t.Fatal("second Open of a locked file succeeded")
	}
}

func TestWatchFallsBehindHistory(t *testing.T) {
	s := openTemp(t, &Options{History: 4})
	ctx := t.Context()
	for range 10 {
		if _, err := s.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp("/k", nil)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Revisions 7..10 are retained: from 6 works, from 5 is compacted.
	ch := s.Watch(ctx, "/", 6)
	if ev := <-ch; ev.Err != nil || ev.Rev != 7 {
		t.Fatalf("watch from 6: %+v, want rev 7", ev)
	}
	ev := <-s.Watch(ctx, "/", 5)
	if !errors.Is(ev.Err, store.ErrCompacted) {
		t.Fatalf("watch from 5: %+v, want ErrCompacted", ev)
	}
	// A multi-key txn larger than the history is dropped whole.
	ops := make([]store.Op, 6)
	for i := range ops {
		ops[i] = store.PutOp("/big/"+string(rune('a'+i)), nil)
	}
	if _, err := s.Txn(ctx, store.Txn{Then: ops}); err != nil {
		t.Fatal(err)
	}
	ev = <-s.Watch(ctx, "/", 10)
	if !errors.Is(ev.Err, store.ErrCompacted) {
		t.Fatalf("watch across an oversized txn: %+v, want ErrCompacted", ev)
	}
}

// TestListPageCompacted: a listing whose revision has left the history is
// refused with ErrCompacted, and listing again from revision 0 works.
func TestListPageCompacted(t *testing.T) {
	s := openTemp(t, &Options{History: 8})
	ctx := t.Context()
	for _, k := range []string{"/a", "/b", "/c"} {
		if _, err := s.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(k, []byte(k))}}); err != nil {
			t.Fatal(err)
		}
	}
	_, r, more, err := s.ListPage(ctx, "/", "", 1, 0)
	if err != nil || !more {
		t.Fatalf("first page: more %v, err %v", more, err)
	}
	for range 20 {
		if _, err := s.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp("/z", []byte("z"))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := s.ListPage(ctx, "/", "/a", 1, r); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("page at compacted revision %d: err %v, want ErrCompacted", r, err)
	}
	if kvs, _, _, err := s.ListPage(ctx, "/", "", 10, 0); err != nil || len(kvs) != 4 {
		t.Fatalf("listing again: %d keys, err %v", len(kvs), err)
	}
}
