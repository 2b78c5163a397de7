package bolt

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/store"
)

// TestGroupCommit checks that concurrent Txn calls share commits.
func TestGroupCommit(t *testing.T) {
	s := openTemp(t, nil)
	const n = 256
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			if _, err := s.Txn(t.Context(), store.Txn{Then: []store.Op{store.PutOp(fmt.Sprintf("/g/%d", i), []byte("v"))}}); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	st := s.Stats()
	if st.Txns != n || st.Commits >= n {
		t.Fatalf("stats %+v: want %d txns in fewer commits", st, n)
	}
	t.Logf("%d txns in %d commits", st.Txns, st.Commits)
}

// BenchmarkTxnParallel measures durable Txns per second: each op is one
// small put (a ~200-byte job record) acknowledged after fsync. Clients is
// the number of concurrent callers; group commit lets them share fsyncs.
func BenchmarkTxnParallel(b *testing.B) {
	value := []byte(`{"id":"job-000000","tenant":"research","priority":"batch","gpus":8,"sku":"H100","state":"Queued","submitted":"2025-01-01T00:00:00Z","labels":{"team":"llm"}}`)
	procs := runtime.GOMAXPROCS(0)
	for _, par := range []int{1, 8, 32, 128} {
		// RunParallel starts par*GOMAXPROCS goroutines: the clients.
		b.Run(fmt.Sprintf("clients=%d", par*procs), func(b *testing.B) {
			s := openTemp(b, nil)
			var (
				seq  atomic.Int64
				mu   sync.Mutex
				lats []time.Duration
			)
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					key := fmt.Sprintf("/jobs/%08d", seq.Add(1))
					t0 := time.Now()
					if _, err := s.Txn(b.Context(), store.Txn{
						If:   []store.Cond{store.Absent(key)},
						Then: []store.Op{store.PutOp(key, value)},
					}); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lats = append(lats, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "txns/s")
			if st.Commits > 0 {
				b.ReportMetric(float64(st.Txns)/float64(st.Commits), "txns/commit")
			}
			if len(lats) > 0 {
				slices.Sort(lats)
				b.ReportMetric(float64(lats[len(lats)*50/100].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}
