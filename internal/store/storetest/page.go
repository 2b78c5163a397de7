package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/allot-dev/allot/internal/store"
)

// pages reads prefix with ListPage, limit keys a page, starting at rev (0:
// the current revision), and returns the pages joined and their revision.
func pages(t *testing.T, s store.Store, prefix string, limit int, rev int64) ([]store.KV, int64) {
	t.Helper()
	var (
		out   []store.KV
		after string
		first = true
	)
	for n := 0; ; n++ {
		kvs, r, more, err := s.ListPage(ctx(t), prefix, after, limit, rev)
		if err != nil {
			t.Fatalf("page %d of %q after %q at %d: %v", n, prefix, after, rev, err)
		}
		if len(kvs) > limit {
			t.Fatalf("page %d: %d keys, limit %d", n, len(kvs), limit)
		}
		if more && len(kvs) == 0 {
			t.Fatalf("page %d: empty, but more", n)
		}
		if !first && r != rev {
			t.Fatalf("page %d at revision %d, asked %d", n, r, rev)
		}
		first, rev = false, r
		out = append(out, kvs...)
		if !more {
			return out, rev
		}
		after = kvs[len(kvs)-1].Key
		if n > 10000 {
			t.Fatal("paging does not end")
		}
	}
}

func wantListing(t *testing.T, what string, got, want []store.KV) {
	t.Helper()
	norm := func(kvs []store.KV) []store.KV {
		out := make([]store.KV, len(kvs))
		for i, kv := range kvs {
			if kv.Value == nil {
				kv.Value = []byte{}
			}
			out[i] = kv
		}
		return out
	}
	if d := cmp.Diff(norm(want), norm(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// testListPage: pages of any size join into exactly List's result, in key
// order, at List's revision.
func testListPage(t *testing.T, s store.Store) {
	for i := range 23 {
		put(t, s, fmt.Sprintf("/jobs/%02d", i), fmt.Sprint("v", i))
	}
	for _, k := range []string{"/job", "/jobsx", "/nodes/n1", "/a"} {
		put(t, s, k, k)
	}
	for _, prefix := range []string{"/jobs/", ""} {
		want, wantRev, err := s.List(ctx(t), prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 2, 5, 22, 23, 24, 1000} {
			got, r := pages(t, s, prefix, limit, 0)
			if r != wantRev {
				t.Errorf("prefix %q limit %d: revision %d, want %d", prefix, limit, r, wantRev)
			}
			wantListing(t, fmt.Sprintf("prefix %q limit %d", prefix, limit), got, want)
		}
	}
	none, _, more, err := s.ListPage(ctx(t), "/tokens/", "", 10, 0)
	if err != nil || len(none) != 0 || more {
		t.Errorf("empty prefix: %v more %v err %v", none, more, err)
	}
	// An after outside the prefix: before it lists all, past it lists none.
	kvs, _, _, err := s.ListPage(ctx(t), "/jobs/", "/a", 100, 0)
	if err != nil || len(kvs) != 23 {
		t.Errorf("after before the prefix: %d keys, err %v; want 23", len(kvs), err)
	}
	kvs, _, more, err = s.ListPage(ctx(t), "/jobs/", "/jobsz", 100, 0)
	if err != nil || len(kvs) != 0 || more {
		t.Errorf("after past the prefix: %d keys, more %v, err %v", len(kvs), more, err)
	}
}

// testListPageOneRevision: pages read after the first keep to its revision
// while keys are created, updated and deleted around them.
func testListPageOneRevision(t *testing.T, s store.Store) {
	for i := range 20 {
		put(t, s, fmt.Sprintf("/jobs/%02d", i*2), fmt.Sprint("v", i))
	}
	want, r0, err := s.List(ctx(t), "/jobs/")
	if err != nil {
		t.Fatal(err)
	}
	first, r, more, err := s.ListPage(ctx(t), "/jobs/", "", 4, 0)
	if err != nil || r != r0 || !more {
		t.Fatalf("first page: rev %d (want %d), more %v, err %v", r, r0, more, err)
	}
	put(t, s, "/jobs/01", "new, before the cursor")
	put(t, s, "/jobs/07", "new, ahead")
	put(t, s, "/jobs/99", "new, at the end")
	put(t, s, "/jobs/10", "updated")
	put(t, s, "/jobs/10", "updated again")
	del(t, s, "/jobs/12")
	del(t, s, "/jobs/02") // already read
	if _, err := s.Txn(ctx(t), store.Txn{Then: []store.Op{store.DeleteOp("/jobs/14"), store.PutOp("/jobs/15", []byte("x")),
		store.PutOp("/jobs/16", []byte("y"))}}); err != nil {
		t.Fatal(err)
	}
	del(t, s, "/jobs/16")
	put(t, s, "/jobs/16", "recreated")
	for i := 0; i < 20; i++ { // a run of new keys, more than a page
		put(t, s, fmt.Sprintf("/jobs/30/%02d", i), "new")
	}
	got := append([]store.KV{}, first...)
	rest, _ := pages(t, s, "/jobs/", 4, r0)
	// pages restarts from the first key; keep what follows the first page.
	for _, kv := range rest {
		if kv.Key > first[len(first)-1].Key {
			got = append(got, kv)
		}
	}
	wantListing(t, "pages at the first page's revision", got, want)
	for _, limit := range []int{1, 3, 100} {
		all, r := pages(t, s, "/jobs/", limit, r0)
		if r != r0 {
			t.Errorf("limit %d: revision %d, want %d", limit, r, r0)
		}
		wantListing(t, fmt.Sprintf("listing again at %d, limit %d", r0, limit), all, want)
	}
	now, rNow, err := s.List(ctx(t), "/jobs/")
	if err != nil {
		t.Fatal(err)
	}
	cur, r := pages(t, s, "/jobs/", 3, 0)
	if r != rNow {
		t.Errorf("current listing at %d, want %d", r, rNow)
	}
	wantListing(t, "current listing", cur, now)
}

func testListPageInvalid(t *testing.T, s store.Store) {
	r := put(t, s, "/a", "a")
	for _, tc := range []struct {
		name   string
		prefix string
		limit  int
		rev    int64
	}{
		{"zero limit", "/", 0, 0},
		{"negative limit", "/", -1, 0},
		{"negative revision", "/", 1, -1},
		{"future revision", "/", 1, r + 5},
		{"bad prefix", "/\xff", 1, 0},
	} {
		if _, _, _, err := s.ListPage(ctx(t), tc.prefix, "", tc.limit, tc.rev); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", tc.name, err)
		}
	}
}
