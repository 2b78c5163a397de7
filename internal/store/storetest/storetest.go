package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/allot-dev/allot/internal/store"
)

// Run runs every conformance test against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"GetPutDelete", testGetPutDelete},
		{"GetNotFound", testGetNotFound},
		{"CreateRevSurvivesUpdateNotDelete", testCreateRev},
		{"ConflictStaleModRev", testConflictStale},
		{"ConflictCreateExisting", testConflictCreateExisting},
		{"ConflictWritesNothing", testConflictWritesNothing},
		{"MultiOpTxnOneRevision", testMultiOp},
		{"NoopTxnKeepsRevision", testNoopTxn},
		{"InvalidInput", testInvalidInput},
		{"ListPrefixOrder", testListPrefix},
		{"ListPageJoinsToList", testListPage},
		{"ListPageOneRevision", testListPageOneRevision},
		{"ListPageInvalid", testListPageInvalid},
		{"WatchOrder", testWatchOrder},
		{"WatchPrefix", testWatchPrefix},
		{"WatchReplayFromRevision", testWatchReplay},
		{"WatchListThenWatch", testListThenWatch},
		{"WatchCancel", testWatchCancel},
		{"ConcurrentCASOneWinner", testConcurrentCAS},
		{"ConcurrentIncrements", testConcurrentIncrements},
		{"RevisionsStrictlyIncrease", testRevisionsIncrease},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// waitFor bounds every wait on a watch channel.
const waitFor = 10 * time.Second

func ctx(t *testing.T) context.Context { return t.Context() }

func put(t *testing.T, s store.Store, key, value string) int64 {
	t.Helper()
	rev, err := s.Txn(ctx(t), store.Txn{Then: []store.Op{store.PutOp(key, []byte(value))}})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return rev
}

func del(t *testing.T, s store.Store, key string) int64 {
	t.Helper()
	rev, err := s.Txn(ctx(t), store.Txn{Then: []store.Op{store.DeleteOp(key)}})
	if err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
	return rev
}

func get(t *testing.T, s store.Store, key string) store.KV {
	t.Helper()
	kv, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return kv
}

func rev(t *testing.T, s store.Store) int64 {
	t.Helper()
	r, err := s.Rev(ctx(t))
	if err != nil {
		t.Fatalf("rev: %v", err)
	}
	return r
}

func wantKV(t *testing.T, got, want store.KV) {
	t.Helper()
	if got.Value == nil {
		got.Value = []byte{}
	}
	if want.Value == nil {
		want.Value = []byte{}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("KV mismatch (-want +got):\n%s", d)
	}
}

func testGetPutDelete(t *testing.T, s store.Store) {
	r1 := put(t, s, "/jobs/a", "v1")
	wantKV(t, get(t, s, "/jobs/a"), store.KV{Key: "/jobs/a", Value: []byte("v1"), CreateRev: r1, ModRev: r1})
	r2 := put(t, s, "/jobs/a", "v2")
	if r2 <= r1 {
		t.Fatalf("second put rev %d, want > %d", r2, r1)
	}
	wantKV(t, get(t, s, "/jobs/a"), store.KV{Key: "/jobs/a", Value: []byte("v2"), CreateRev: r1, ModRev: r2})
	r3 := put(t, s, "/jobs/empty", "")
	wantKV(t, get(t, s, "/jobs/empty"), store.KV{Key: "/jobs/empty", Value: []byte{}, CreateRev: r3, ModRev: r3})
	del(t, s, "/jobs/a")
	if _, err := s.Get(ctx(t), "/jobs/a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: err %v, want ErrNotFound", err)
	}
}

func testGetNotFound(t *testing.T, s store.Store) {
	_, err := s.Get(ctx(t), "/nodes/missing")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
}

func testCreateRev(t *testing.T, s store.Store) {
	r1 := put(t, s, "/k", "a")
	put(t, s, "/k", "b")
	if kv := get(t, s, "/k"); kv.CreateRev != r1 {
		t.Fatalf("CreateRev after update %d, want %d", kv.CreateRev, r1)
	}
	del(t, s, "/k")
	r4 := put(t, s, "/k", "c")
	if kv := get(t, s, "/k"); kv.CreateRev != r4 || kv.ModRev != r4 {
		t.Fatalf("recreated key revs %d/%d, want %d/%d", kv.CreateRev, kv.ModRev, r4, r4)
	}
}

func wantConflict(t *testing.T, err error, key string) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err %v, want ErrConflict", err)
	}
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("err %v does not name key %q", err, key)
	}
}

func testConflictStale(t *testing.T, s store.Store) {
	r1 := put(t, s, "/jobs/a", "v1")
	r2, err := s.Txn(ctx(t), store.Txn{
		If:   []store.Cond{store.ModRevIs("/jobs/a", r1)},
		Then: []store.Op{store.PutOp("/jobs/a", []byte("v2"))},
	})
	if err != nil {
		t.Fatalf("CAS at current rev: %v", err)
	}
	_, err = s.Txn(ctx(t), store.Txn{
		If:   []store.Cond{store.ModRevIs("/jobs/a", r1)},
		Then: []store.Op{store.PutOp("/jobs/a", []byte("stale"))},
	})
	wantConflict(t, err, "/jobs/a")
	wantKV(t, get(t, s, "/jobs/a"), store.KV{Key: "/jobs/a", Value: []byte("v2"), CreateRev: r1, ModRev: r2})
	// A condition on a deleted key's old revision fails too.
	del(t, s, "/jobs/a")
	_, err = s.Txn(ctx(t), store.Txn{
		If:   []store.Cond{store.ModRevIs("/jobs/a", r2)},
		Then: []store.Op{store.PutOp("/jobs/a", []byte("x"))},
	})
	wantConflict(t, err, "/jobs/a")
}

func testConflictCreateExisting(t *testing.T, s store.Store) {
	create := store.Txn{
		If:   []store.Cond{store.Absent("/tenants/t1")},
		Then: []store.Op{store.PutOp("/tenants/t1", []byte("first"))},
	}
	if _, err := s.Txn(ctx(t), create); err != nil {
		t.Fatalf("create absent: %v", err)
	}
	create.Then[0].Value = []byte("second")
	_, err := s.Txn(ctx(t), create)
	wantConflict(t, err, "/tenants/t1")
	if got := string(get(t, s, "/tenants/t1").Value); got != "first" {
		t.Fatalf("value %q, want first", got)
	}
}

func testConflictWritesNothing(t *testing.T, s store.Store) {
	ra := put(t, s, "/a", "a0")
	put(t, s, "/b", "b0")
	before := rev(t, s)
	_, err := s.Txn(ctx(t), store.Txn{
		If: []store.Cond{store.ModRevIs("/a", ra), store.Absent("/b")},
		Then: []store.Op{
			store.PutOp("/a", []byte("a1")),
			store.DeleteOp("/b"),
			store.PutOp("/c", []byte("c1")),
		},
	})
	wantConflict(t, err, "/b")
	if got := rev(t, s); got != before {
		t.Fatalf("rev after failed txn %d, want %d", got, before)
	}
	if got := string(get(t, s, "/a").Value); got != "a0" {
		t.Errorf("/a = %q, want a0", got)
	}
	if got := string(get(t, s, "/b").Value); got != "b0" {
		t.Errorf("/b = %q, want b0", got)
	}
	if _, err := s.Get(ctx(t), "/c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("/c: err %v, want ErrNotFound", err)
	}
}

func testMultiOp(t *testing.T, s store.Store) {
	put(t, s, "/x/gone", "old")
	r, err := s.Txn(ctx(t), store.Txn{
		If: []store.Cond{store.Absent("/x/1"), store.Absent("/x/2")},
		Then: []store.Op{
			store.PutOp("/x/2", []byte("two")),
			store.PutOp("/x/1", []byte("one")),
			store.DeleteOp("/x/gone"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	kvs, listRev, err := s.List(ctx(t), "/x/")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.KV{
		{Key: "/x/1", Value: []byte("one"), CreateRev: r, ModRev: r},
		{Key: "/x/2", Value: []byte("two"), CreateRev: r, ModRev: r},
	}
	if d := cmp.Diff(want, kvs); d != "" {
		t.Fatalf("list after multi-op txn (-want +got):\n%s", d)
	}
	if listRev != r {
		t.Fatalf("list rev %d, want %d", listRev, r)
	}
}

func testNoopTxn(t *testing.T, s store.Store) {
	r := put(t, s, "/a", "1")
	got, err := s.Txn(ctx(t), store.Txn{Then: []store.Op{store.DeleteOp("/absent")}})
	if err != nil || got != r {
		t.Fatalf("delete of absent key: rev %d err %v, want %d nil", got, err, r)
	}
	got, err = s.Txn(ctx(t), store.Txn{If: []store.Cond{store.ModRevIs("/a", r)}})
	if err != nil || got != r {
		t.Fatalf("condition-only txn: rev %d err %v, want %d nil", got, err, r)
	}
	if cur := rev(t, s); cur != r {
		t.Fatalf("rev %d, want %d", cur, r)
	}
}

func testInvalidInput(t *testing.T, s store.Store) {
	base := rev(t, s)
	long := string(make([]byte, store.MaxKeyLen+1))
	cases := []struct {
		name string
		txn  store.Txn
	}{
		{"empty key", store.Txn{Then: []store.Op{store.PutOp("", nil)}}},
		{"long key", store.Txn{Then: []store.Op{store.PutOp(long, nil)}}},
		{"bad utf8", store.Txn{Then: []store.Op{store.PutOp("/\xff", nil)}}},
		{"big value", store.Txn{Then: []store.Op{store.PutOp("/v", make([]byte, store.MaxValueLen+1))}}},
		{"bad cond key", store.Txn{If: []store.Cond{store.Absent("")}}},
		{"negative cond", store.Txn{If: []store.Cond{store.ModRevIs("/a", -1)}}},
		{"duplicate op key", store.Txn{Then: []store.Op{store.PutOp("/d", nil), store.DeleteOp("/d")}}},
		{"unknown op", store.Txn{Then: []store.Op{{Key: "/u"}}}},
	}
	for _, tc := range cases {
		if _, err := s.Txn(ctx(t), tc.txn); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := s.Get(ctx(t), ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("get empty key: err %v, want ErrInvalid", err)
	}
	if _, _, err := s.List(ctx(t), "/\xff"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("list bad prefix: err %v, want ErrInvalid", err)
	}
	if r := rev(t, s); r != base {
		t.Errorf("rev after invalid txns %d, want %d", r, base)
	}
}

func testListPrefix(t *testing.T, s store.Store) {
	for _, k := range []string{"/jobs/c", "/jobsx", "/jobs/a", "/nodes/n1", "/jobs/b/1", "/job"} {
		put(t, s, k, k)
	}
	kvs, r, err := s.List(ctx(t), "/jobs/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
		if string(kv.Value) != kv.Key {
			t.Errorf("%s: value %q", kv.Key, kv.Value)
		}
	}
	if d := cmp.Diff([]string{"/jobs/a", "/jobs/b/1", "/jobs/c"}, keys); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	if cur := rev(t, s); r != cur {
		t.Errorf("list rev %d, want store rev %d", r, cur)
	}
	all, _, err := s.List(ctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Errorf("list all: %d keys, want 6", len(all))
	}
	none, _, err := s.List(ctx(t), "/tokens/")
	if err != nil || len(none) != 0 {
		t.Errorf("list empty prefix: %v %v", none, err)
	}
}
