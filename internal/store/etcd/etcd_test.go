package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
	"github.com/allot-dev/allot/internal/store/storetest"
)

// waitFor bounds every wait on a watch in these tests.
const waitFor = 15 * time.Second

// open returns a store on cluster c under a prefix no other store of the
// test uses, closed when the test ends.
func open(t *testing.T, c *etcdtest.Cluster, prefix string) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Endpoints: c.Endpoints(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store suite on one member, each test in a fresh
// prefix of the same cluster.
func TestConformance(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, c, fmt.Sprintf("/conformance/%d", n.Add(1)))
	})
}

func put(t *testing.T, s store.Store, key, value string) int64 {
	t.Helper()
	r, err := s.Txn(t.Context(), store.Txn{Then: []store.Op{store.PutOp(key, []byte(value))}})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return r
}

// next returns the next event of ch, failing on an error event or a wait
// longer than waitFor.
func next(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
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

// TestRevisionsAreEtcds: the store's revisions, and its keys, are the ones
// etcd itself reports, under the prefix.
func TestRevisionsAreEtcds(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, "/tenant-a")
	other := open(t, c, "/tenant-ab")
	r1 := put(t, s, "/jobs/x", "1")
	r2 := put(t, other, "/jobs/x", "other") // another installation moves the revision
	r3 := put(t, s, "/jobs/x", "2")
	if !(r1 < r2 && r2 < r3) {
		t.Fatalf("revisions %d, %d, %d do not increase", r1, r2, r3)
	}
	resp, err := s.Client().Get(t.Context(), "/tenant-a//jobs/x")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get: %v %v", resp, err)
	}
	if kv := resp.Kvs[0]; string(kv.Value) != "2" || kv.ModRevision != r3 || kv.CreateRevision != r1 {
		t.Fatalf("etcd has %s at %d/%d, want 2 at %d/%d", kv.Value, kv.CreateRevision, kv.ModRevision, r1, r3)
	}
	if s.EtcdKey("/jobs/x") != "/tenant-a//jobs/x" || s.Prefix() != "/tenant-a/" {
		t.Fatalf("key %q prefix %q", s.EtcdKey("/jobs/x"), s.Prefix())
	}
	// Neither store lists or watches the other's keys.
	kvs, rev, err := s.List(t.Context(), "")
	if err != nil || len(kvs) != 1 || string(kvs[0].Value) != "2" || rev < r3 {
		t.Fatalf("list: %+v at %d, %v", kvs, rev, err)
	}
	ch := other.Watch(t.Context(), "", 0)
	if ev := next(t, ch); ev.Rev != r2 || string(ev.KV.Value) != "other" {
		t.Fatalf("other's watch: %+v", ev)
	}
	// A prefix longer than allowed is refused by name.
	if _, err := Open(t.Context(), Config{Endpoints: c.Endpoints(), Prefix: string(make([]byte, MaxPrefixLen+1))}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("long prefix: %v", err)
	}
}

// TestWatchAfterCompaction: a watch from a compacted revision ends with
// ErrCompacted; listing again and watching from the list revision sees the
// next change and nothing twice. A page at a compacted revision fails the
// same way.
func TestWatchAfterCompaction(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, "/compact")
	ctx := t.Context()
	first := put(t, s, "/jobs/a", "1")
	_, pageRev, more, err := s.ListPage(ctx, "/jobs/", "", 1, 0)
	if err != nil || more {
		t.Fatalf("page: more %v, err %v", more, err)
	}
	put(t, s, "/jobs/b", "1")
	last := put(t, s, "/jobs/a", "2")
	if _, err := s.Client().Compact(ctx, last, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-s.Watch(ctx, "/jobs/", first):
		if !errors.Is(ev.Err, store.ErrCompacted) {
			t.Fatalf("watch from compacted %d: %+v, want ErrCompacted", first, ev)
		}
	case <-time.After(waitFor):
		t.Fatal("no compaction error")
	}
	if _, _, _, err := s.ListPage(ctx, "/jobs/", "", 1, pageRev); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("page at compacted %d: %v, want ErrCompacted", pageRev, err)
	}
	kvs, rev, err := s.List(ctx, "/jobs/")
	if err != nil || len(kvs) != 2 || rev != last {
		t.Fatalf("relist: %+v at %d (want %d), %v", kvs, rev, last, err)
	}
	ch := s.Watch(ctx, "/jobs/", rev)
	r := put(t, s, "/jobs/c", "1")
	if ev := next(t, ch); ev.Rev != r || ev.KV.Key != "/jobs/c" {
		t.Fatalf("after relist: %+v, want /jobs/c at %d", ev, r)
	}
	select {
	case ev := <-ch:
		t.Fatalf("unexpected %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestConformanceThreeMembers runs the store suite on a three-member
// cluster, the store's client spread over all of them.
func TestConformanceThreeMembers(t *testing.T) {
	c := etcdtest.Start(t, 3)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, c, fmt.Sprintf("/conformance/%d", n.Add(1)))
	})
}

// TestWatchSurvivesMemberRestart: on three members, a watch goes on through
// another endpoint while the member it used is down, writes go on, and the
// restarted member catches up with what it missed.
func TestWatchSurvivesMemberRestart(t *testing.T) {
	c := etcdtest.Start(t, 3)
	// The store knows members 0 and 1 only, and each is stopped in turn:
	// whichever one the watch stream is on, it has to move at least once.
	s, err := Open(t.Context(), Config{Endpoints: c.Endpoints()[:2], Prefix: "/ha"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	ch := s.Watch(ctx, "/jobs/", put(t, s, "/start", "x"))
	want := int64(0)
	write := func(i int) {
		t.Helper()
		// A write racing the stop may fail once; its retry must land.
		for try := 0; ; try++ {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			r, err := s.Txn(wctx, store.Txn{Then: []store.Op{store.PutOp(fmt.Sprintf("/jobs/%03d", i), []byte("v"))}})
			cancel()
			if err == nil {
				want = r
				return
			}
			if try == 5 {
				t.Fatalf("write %d: %v", i, err)
			}
		}
	}
	seen := map[string]bool{}
	read := func(upTo int64) {
		t.Helper()
		for {
			ev := next(t, ch)
			if seen[ev.KV.Key] {
				t.Fatalf("%s delivered twice", ev.KV.Key)
			}
			seen[ev.KV.Key] = true
			if ev.Rev == upTo {
				return
			}
		}
	}
	for i := range 10 {
		write(i)
	}
	read(want)
	for down := range 2 {
		t0 := time.Now()
		c.Stop(down) // seconds when the watch stream is on it: etcd waits for its RPCs
		for i := 10 * (down + 1); i < 10*(down+2); i++ {
			write(i)
		}
		read(want)
		c.Restart(down)
		t.Logf("member %d stopped, 10 writes watched, restarted: %v", down, time.Since(t0))
	}
	if len(seen) != 30 {
		t.Fatalf("watch saw %d keys, want 30", len(seen))
	}
	// The last restarted member caught up: a serializable read from it
	// alone has every key.
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints()[1:2], DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(waitFor)
	for {
		resp, err := cli.Get(ctx, s.EtcdKey("/jobs/"), clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithCountOnly())
		if err == nil && resp.Count == 30 && resp.Header.Revision >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted member has %v keys (want 30), err %v", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEtcdLimits: a Txn within store's limits but above the cluster's is
// refused as invalid, naming the etcd flag, and writes nothing.
func TestEtcdLimits(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, "/limits")
	before, err := s.Rev(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The test cluster takes 4 MiB requests: three 1.5 MiB values exceed it.
	big := make([]byte, store.MaxValueLen)
	_, err = s.Txn(t.Context(), store.Txn{Then: []store.Op{store.PutOp("/a", big), store.PutOp("/b", big), store.PutOp("/c", big)}})
	var ie *store.InvalidError
	if !errors.As(err, &ie) || ie.Field != "then" {
		t.Fatalf("oversized txn: %v, want an InvalidError on then", err)
	}
	t.Log(err)
	// One value at store's limit fits.
	if _, err := s.Txn(t.Context(), store.Txn{Then: []store.Op{store.PutOp("/a", big)}}); err != nil {
		t.Fatalf("value of MaxValueLen: %v", err)
	}
	if r, _ := s.Rev(t.Context()); r != before+1 {
		t.Fatalf("rev %d, want %d", r, before+1)
	}
}

// TestOpenUnreachable: Open gives up within its dial timeout with an error
// naming the endpoint.
func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := Open(t.Context(), Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: 300 * time.Millisecond})
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open took %v", d)
	}
	t.Log(err)
	if _, err := Open(t.Context(), Config{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("no endpoints: %v", err)
	}
}
