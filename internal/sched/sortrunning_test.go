package sched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// sortRunning puts running work in the order slices.SortFunc gives with
// victimCmp, from nearly sorted and shuffled orders, ties in cost included.
func TestSortRunningMatchesSortFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 2, 10, 300} {
		for _, swaps := range []int{0, 1, n / 10, n * 5} {
			want := make([]*running, n)
			for i := range want {
				j := &model.Job{ID: fmt.Sprintf("j%04d", rng.IntN(10000))}
				j.Spec.Priority = model.Priority{Class: model.Class(rng.IntN(3)), Value: rng.IntN(2)}
				j.Status.StartedAt = epoch.Add(time.Duration(rng.IntN(4)) * time.Minute)
				want[i] = &running{job: j, cost: float64(rng.IntN(n/3 + 1))}
			}
			slices.SortFunc(want, victimCmp)
			got := slices.Clone(want)
			for range swaps * min(n, 2) / 2 { // none below two jobs
				i, k := rng.IntN(n), rng.IntN(n)
				if swaps < n/2 { // nearly sorted: neighbours
					k = min(i+1, n-1)
				}
				got[i], got[k] = got[k], got[i]
			}
			sortRunning(got, nil)
			for i := range got {
				if victimCmp(got[i], want[i]) != 0 {
					t.Fatalf("n %d, %d swaps: place %d holds %s, want %s", n, swaps, i, got[i].job.ID, want[i].job.ID)
				}
			}
		}
	}
}
