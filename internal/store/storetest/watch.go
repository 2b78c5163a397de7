package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/store"
)

// next returns the next event from ch or fails after waitFor.
func next(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed early")
		}
		if ev.Err != nil {
			t.Fatalf("watch error: %v", ev.Err)
		}
		return ev
	case <-time.After(waitFor):
		t.Fatal("no watch event")
	}
	panic("unreachable")
}

// quiet checks that nothing arrives on ch for a short while.
func quiet(t *testing.T, ch <-chan store.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
		t.Fatal("watch channel closed")
	case <-time.After(50 * time.Millisecond):
	}
}

type change struct {
	typ   store.OpType
	key   string
	value string
	rev   int64
	prev  string // "" when no PrevKV
}

func wantEvent(t *testing.T, ev store.Event, want change) {
	t.Helper()
	got := change{typ: ev.Type, key: ev.KV.Key, value: string(ev.KV.Value), rev: ev.Rev}
	if ev.PrevKV != nil {
		got.prev = string(ev.PrevKV.Value)
	}
	if got != want {
		t.Fatalf("event %+v, want %+v", got, want)
	}
	if ev.KV.ModRev != ev.Rev {
		t.Fatalf("event KV.ModRev %d, want Rev %d", ev.KV.ModRev, ev.Rev)
	}
}

func testWatchOrder(t *testing.T, s store.Store) {
	ch := s.Watch(ctx(t), "/", rev(t, s))
	r1 := put(t, s, "/a", "1")
	r2 := put(t, s, "/a", "2")
	r3, err := s.Txn(ctx(t), store.Txn{Then: []store.Op{
		store.PutOp("/c", []byte("c")), store.DeleteOp("/a"), store.PutOp("/b", []byte("b")),
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantEvent(t, next(t, ch), change{store.Put, "/a", "1", r1, ""})
	ev := next(t, ch)
	wantEvent(t, ev, change{store.Put, "/a", "2", r2, "1"})
	if ev.KV.CreateRev != r1 {
		t.Fatalf("CreateRev %d, want %d", ev.KV.CreateRev, r1)
	}
	// One revision's events arrive together, in key order.
	wantEvent(t, next(t, ch), change{store.Delete, "/a", "", r3, "2"})
	wantEvent(t, next(t, ch), change{store.Put, "/b", "b", r3, ""})
	wantEvent(t, next(t, ch), change{store.Put, "/c", "c", r3, ""})
	quiet(t, ch)
}

func testWatchPrefix(t *testing.T, s store.Store) {
	ch := s.Watch(ctx(t), "/jobs/", 0)
	put(t, s, "/nodes/n1", "n")
	put(t, s, "/jobsx", "x")
	r := put(t, s, "/jobs/j1", "j")
	wantEvent(t, next(t, ch), change{store.Put, "/jobs/j1", "j", r, ""})
	quiet(t, ch)
}

func testWatchReplay(t *testing.T, s store.Store) {
	var revs []int64
	for _, v := range []string{"1", "2", "3", "4"} {
		revs = append(revs, put(t, s, "/k", v))
	}
	// From the second write: replays writes three and four, then goes live.
	ch := s.Watch(ctx(t), "/k", revs[1])
	wantEvent(t, next(t, ch), change{store.Put, "/k", "3", revs[2], "2"})
	wantEvent(t, next(t, ch), change{store.Put, "/k", "4", revs[3], "3"})
	quiet(t, ch)
	r := put(t, s, "/k", "5")
	wantEvent(t, next(t, ch), change{store.Put, "/k", "5", r, "4"})

	// From revision 0 on a store that began empty: everything.
	all := s.Watch(ctx(t), "/k", 0)
	for i, v := range []string{"1", "2", "3", "4", "5"} {
		if ev := next(t, all); string(ev.KV.Value) != v {
			t.Fatalf("replay event %d: value %q, want %q", i, ev.KV.Value, v)
		}
	}
	// From a future revision: nothing until that revision passes.
	future := s.Watch(ctx(t), "/k", r+1)
	put(t, s, "/k", "6")
	quiet(t, future)
	r8 := put(t, s, "/k", "7")
	wantEvent(t, next(t, future), change{store.Put, "/k", "7", r8, "6"})
}

func testListThenWatch(t *testing.T, s store.Store) {
	put(t, s, "/n/1", "a")
	_, listRev, err := s.List(ctx(t), "/n/")
	if err != nil {
		t.Fatal(err)
	}
	r := put(t, s, "/n/2", "b")
	ch := s.Watch(ctx(t), "/n/", listRev)
	wantEvent(t, next(t, ch), change{store.Put, "/n/2", "b", r, ""})
	quiet(t, ch)
}

func testWatchCancel(t *testing.T, s store.Store) {
	wctx, cancel := context.WithCancel(ctx(t))
	ch := s.Watch(wctx, "/", 0)
	put(t, s, "/a", "1")
	next(t, ch)
	cancel()
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				// Writes after cancel must still work.
				put(t, s, "/a", "2")
				return
			}
			if ev.Err != nil {
				t.Fatalf("watch error after cancel: %v", ev.Err)
			}
		case <-deadline:
			t.Fatal("watch channel not closed after cancel")
		}
	}
}

func testClosed(t *testing.T, s store.Store) {
	put(t, s, "/a", "1")
	ch := s.Watch(ctx(t), "/", 1)
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := s.Get(ctx(t), "/a"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("get after close: %v, want ErrClosed", err)
	}
	if _, _, err := s.List(ctx(t), "/"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("list after close: %v, want ErrClosed", err)
	}
	if _, err := s.Txn(ctx(t), store.Txn{Then: []store.Op{store.PutOp("/a", nil)}}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("txn after close: %v, want ErrClosed", err)
	}
	drainClosed(t, ch)
	drainClosed(t, s.Watch(ctx(t), "/", 0))
}

// drainClosed waits for ch to close; any error it carries must be ErrClosed.
func drainClosed(t *testing.T, ch <-chan store.Event) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if ev.Err != nil && !errors.Is(ev.Err, store.ErrClosed) {
				t.Fatalf("watch error %v, want ErrClosed", ev.Err)
			}
		case <-deadline:
			t.Fatal("watch not closed after store Close")
		}
	}
}
