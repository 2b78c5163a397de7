package replay

import (
	"context"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/trace/philly"
)

// TestAllotPreemptsForShorterWork: under the allot policy and static
// sharing a job predicted
// short preempts its VC's running job that has outlived its prediction,
// once MinRunTime has passed, and the victim loses only the work since its
// last checkpoint; with PriorityGap negative, or under borrow sharing, it
// waits. The halves of the
// average JCT split the jobs in submit order.
func TestAllotPreemptsForShorterWork(t *testing.T) {
	t0 := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
	jobs := []philly.Job{
		{Line: 2, Submit: t0, Duration: 100_000, GPUs: 8, VC: "a"},
		{Line: 3, Submit: t0.Add(20_000 * time.Second), Duration: 100, GPUs: 4, VC: "a"},
	}
	vcs := []philly.VC{{Name: "a", Nodes: 1}}
	for _, tc := range []struct {
		name        string
		sharing     Sharing
		gap         int
		preemptions int
		first, sec  float64 // JCT of the long job and of the short one
	}{
		// At 20,000 s the long job has run 11 checkpoints (19,800 s): it
		// loses 200 s, resumes when the short one ends at 20,100 s and
		// ends 80,200 s later.
		{"preempts", Static, 0, 1, 20_100 + 80_200, 100},
		{"off", Static, -1, 0, 100_000, 100_000 - 20_000 + 100},
		{"borrow", Borrow, 0, 0, 100_000, 100_000 - 20_000 + 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Jobs: jobs, VCs: vcs, Policy: "allot", Sharing: tc.sharing,
				Checkpoint: 30 * time.Minute, MinRunTime: 30 * time.Minute, PriorityGap: tc.gap, CheckIncremental: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Preemptions != tc.preemptions {
				t.Errorf("%d preemptions, want %d", r.Preemptions, tc.preemptions)
			}
			if r.AvgJCTFirstHalf != tc.first || r.AvgJCTSecondHalf != tc.sec || r.AvgJCT != (tc.first+tc.sec)/2 {
				t.Errorf("avg JCT %.0f (halves %.0f, %.0f), want %.0f (%.0f, %.0f)",
					r.AvgJCT, r.AvgJCTFirstHalf, r.AvgJCTSecondHalf, (tc.first+tc.sec)/2, tc.first, tc.sec)
			}
		})
	}
}

// FuzzPriorityGap replays four jobs of one VC with any gap, submit times,
// durations and GPU counts under allot and static sharing (checked against
// planning from scratch every cycle), and wants every job to finish, no
// sooner than it could.
func FuzzPriorityGap(f *testing.F) {
	f.Add(0, uint16(0), uint16(50), uint16(100), uint16(20000), uint8(8), uint8(4))
	f.Add(-1, uint16(10), uint16(0), uint16(60000), uint16(1), uint8(3), uint8(8))
	f.Add(1, uint16(5000), uint16(5000), uint16(65535), uint16(7), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, gap int, s1, s2, d1, d2 uint16, g1, g2 uint8) {
		t0 := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
		gpus := func(g uint8) int { return 1 + int(g)%8 }
		at := func(s uint16) time.Time { return t0.Add(time.Duration(s) * 10 * time.Second) }
		jobs := []philly.Job{
			{Line: 2, Submit: t0, Duration: 1 + float64(d1)*10, GPUs: gpus(g1), VC: "a"},
			{Line: 3, Submit: at(s1), Duration: 1 + float64(d2), GPUs: gpus(g2), VC: "a"},
			{Line: 4, Submit: at(s1 / 2), Duration: 1 + float64(d1), GPUs: gpus(g2 + 3), VC: "a"},
			{Line: 5, Submit: at(s2), Duration: 1 + float64(d2)*5, GPUs: gpus(g1 + 5), VC: "a"},
		}
		r, err := Run(context.Background(), Config{Jobs: jobs, VCs: []philly.VC{{Name: "a", Nodes: 1}}, Policy: "allot",
			Sharing: Static, MinRunTime: 10 * time.Minute, PriorityGap: gap, CheckIncremental: true})
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, j := range jobs {
			sum += j.Duration
		}
		if r.Jobs != 4 || r.AvgJCT*4 < sum-4 || (gap < 0 && r.Preemptions > 0) {
			t.Fatalf("gap %d: %d jobs, avg JCT %.0f for %.0f s of work, %d preemptions", gap, r.Jobs, r.AvgJCT, sum, r.Preemptions)
		}
	})
}
