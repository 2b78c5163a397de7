package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/allot-dev/allot/internal/store"
)

func testConcurrentCAS(t *testing.T, s store.Store) {
	const writers = 32
	base := put(t, s, "/lock", "free")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
	)
	for i := range writers {
		wg.Go(func() {
			_, err := s.Txn(ctx(t), store.Txn{
				If:   []store.Cond{store.ModRevIs("/lock", base)},
				Then: []store.Op{store.PutOp("/lock", []byte(strconv.Itoa(i)))},
			})
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, i)
				mu.Unlock()
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("writer %d: %v", i, err)
			}
		})
	}
	// Create-if-absent races too.
	var created sync.Map
	for i := range writers {
		wg.Go(func() {
			_, err := s.Txn(ctx(t), store.Txn{
				If:   []store.Cond{store.Absent("/new")},
				Then: []store.Op{store.PutOp("/new", []byte(strconv.Itoa(i)))},
			})
			if err == nil {
				created.Store(i, true)
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("creator %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("CAS winners %v, want exactly one", winners)
	}
	if got := string(get(t, s, "/lock").Value); got != strconv.Itoa(winners[0]) {
		t.Fatalf("/lock = %q, want winner %d", got, winners[0])
	}
	n := 0
	created.Range(func(k, _ any) bool {
		n++
		if got := string(get(t, s, "/new").Value); got != strconv.Itoa(k.(int)) {
			t.Errorf("/new = %q, want creator %d", got, k)
		}
		return true
	})
	if n != 1 {
		t.Fatalf("%d creators succeeded, want one", n)
	}
}

// testConcurrentIncrements runs read-modify-write loops on a few counters
// from many goroutines; no increment may be lost and no revision reused.
func testConcurrentIncrements(t *testing.T, s store.Store) {
	const (
		workers  = 16
		perW     = 20
		counters = 3
	)
	base := rev(t, s)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		revs = map[int64]bool{}
	)
	for w := range workers {
		wg.Go(func() {
			for i := range perW {
				key := fmt.Sprintf("/ctr/%d", (w+i)%counters)
				for {
					var cur int64
					n := 0
					kv, err := s.Get(ctx(t), key)
					switch {
					case err == nil:
						cur = kv.ModRev
						n, _ = strconv.Atoi(string(kv.Value))
					case !errors.Is(err, store.ErrNotFound):
						t.Errorf("get: %v", err)
						return
					}
					r, err := s.Txn(ctx(t), store.Txn{
						If:   []store.Cond{store.ModRevIs(key, cur)},
						Then: []store.Op{store.PutOp(key, []byte(strconv.Itoa(n+1)))},
					})
					if errors.Is(err, store.ErrConflict) {
						continue
					}
					if err != nil {
						t.Errorf("txn: %v", err)
						return
					}
					mu.Lock()
					if revs[r] {
						t.Errorf("revision %d returned twice", r)
					}
					revs[r] = true
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	kvs, _, err := s.List(ctx(t), "/ctr/")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, kv := range kvs {
		n, _ := strconv.Atoi(string(kv.Value))
		total += n
	}
	if total != workers*perW {
		t.Fatalf("counters sum to %d, want %d", total, workers*perW)
	}
	if r := rev(t, s); r-base != workers*perW {
		t.Fatalf("store rev %d, want %d+%d (one per committed increment)", r, base, workers*perW)
	}
}

func testRevisionsIncrease(t *testing.T, s store.Store) {
	last := rev(t, s)
	for i := range 20 {
		r := put(t, s, fmt.Sprintf("/r/%d", i%4), "v")
		if r != last+1 {
			t.Fatalf("write %d: rev %d, want %d", i, r, last+1)
		}
		if cur := rev(t, s); cur < r {
			t.Fatalf("Rev %d after txn at %d", cur, r)
		}
		last = r
	}
	// Concurrent writers: every returned revision distinct, the watch sees
	// them strictly increasing with no gaps.
	ch := s.Watch(ctx(t), "/p/", last)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if _, err := s.Txn(ctx(t), store.Txn{Then: []store.Op{store.PutOp(fmt.Sprintf("/p/%d", i), nil)}}); err != nil {
				t.Errorf("put: %v", err)
			}
		})
	}
	wg.Wait()
	for range 40 {
		ev := next(t, ch)
		if ev.Rev != last+1 {
			t.Fatalf("watch rev %d, want %d", ev.Rev, last+1)
		}
		last = ev.Rev
	}
}
