package server

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// BenchmarkSnapshot: a cycle's snapshot of a cache of live jobs (half
// queued, half running) in which 500 jobs are submitted and 500 end
// between snapshots, as in bench e2e. Run it with
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 100x ./internal/server/
func BenchmarkSnapshot(b *testing.B) {
	for _, live := range []int{8000, 40000} {
		b.Run(fmt.Sprint(live), func(b *testing.B) {
			c := newCache(slog.New(slog.DiscardHandler), nil)
			rev := int64(0)
			next := 0
			var ids []string
			add := func(n int) {
				for range n {
					if len(ids) >= live {
						rev++
						c.putJobs([]*model.Job{{ID: ids[0], Status: model.JobStatus{State: model.StateSucceeded}}}, rev)
						ids = ids[1:]
					}
					rev++
					st := model.StateRunning
					if next%2 == 0 {
						st = model.StateQueued
					}
					id := newJobID("e2e", time.Unix(0, int64(next)*int64(time.Millisecond)))
					c.putJobs([]*model.Job{{ID: id, Status: model.JobStatus{State: st}}}, rev)
					ids = append(ids, id)
					next++
				}
			}
			add(live)
			c.snapshot()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				add(500)
				b.StartTimer()
				c.snapshot()
			}
		})
	}
}
