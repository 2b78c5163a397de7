package replay

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/trace/philly"
)

// TestCostPerTenantMatchesTrace replays the first 2,000 jobs under static
// sharing, strict FIFO and no spread penalty (so no job is preempted or
// slowed, and each runs its trace duration rounded up to the second), and
// checks each VC's cost, to the cent, against the test's own sum from the
// trace: the GPUs each job's instances hold (an uneven gang whole nodes)
// × its seconds × the catalog's on-demand price of one GPU of the
// replay's SKU.
func TestCostPerTenantMatchesTrace(t *testing.T) {
	jobs, vcs := loadTrace(t)
	const limit = 2000
	cfg := sliceConfig(jobs, vcs, "fifo", Static)
	cfg.Limit, cfg.SpreadPenalty, cfg.CheckIncremental = limit, -1, false
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Preemptions != 0 || r.Jobs == 0 {
		t.Fatalf("%d preemptions over %d jobs: the test wants some jobs and none preempted", r.Preemptions, r.Jobs)
	}
	perGPUHour := model.BuiltinCatalog()["ND96-A100x8-IB"].PricePerHour / 8
	if r.USDPerGPUHour != perGPUHour {
		t.Errorf("billed at $%v per GPU-hour, want the catalog's on-demand ND96-A100x8-IB over 8 GPUs, $%v", r.USDPerGPUHour, perGPUHour)
	}

	// The test's own bill, from the trace: the first limit jobs in submit
	// order, less those of unknown VCs and those that never fit.
	order := append([]philly.Job(nil), jobs...)
	sort.SliceStable(order, func(a, b int) bool {
		if !order[a].Submit.Equal(order[b].Submit) {
			return order[a].Submit.Before(order[b].Submit)
		}
		return order[a].Line < order[b].Line
	})
	order = order[:limit]
	known := map[string]bool{}
	for _, v := range vcs {
		known[v.Name] = true
	}
	never := map[int]bool{}
	for _, n := range r.NeverFitJobs {
		never[n.Line] = true
	}
	gpuSeconds := map[string]float64{}
	for _, j := range order {
		if !known[j.VC] || never[j.Line] {
			continue
		}
		held := j.GPUs
		if nodes := (j.GPUs + 7) / 8; j.GPUs > 8 && j.GPUs%nodes != 0 {
			held = 8 * nodes
		}
		gpuSeconds[j.VC] += float64(held) * math.Ceil(j.Duration)
	}
	cents := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	total := 0.0
	for _, tu := range r.Tenants {
		want := gpuSeconds[tu.Name] / 3600 * perGPUHour
		total += want
		if cents(tu.USD) != cents(want) || math.Abs(tu.GPUHours-gpuSeconds[tu.Name]/3600) > 1e-9 {
			t.Errorf("VC %s: $%s for %.3f GPU-hours; the trace adds up to $%s for %.3f", tu.Name, cents(tu.USD), tu.GPUHours,
				cents(want), gpuSeconds[tu.Name]/3600)
		}
	}
	if cents(r.USD) != cents(total) || total == 0 {
		t.Errorf("total $%s; the trace adds up to $%s", cents(r.USD), cents(total))
	}
	t.Logf("%d jobs, %d VCs: $%s at $%.4f per GPU-hour", r.Jobs, len(r.Tenants), cents(r.USD), r.USDPerGPUHour)
}

// TestCostBillsLostWork: a borrower evicted by its VC's owner pays for
// the GPUs it held until the eviction, the lost work included, and again
// for its second run (TestReclaim's timeline); an uneven gang pays for the
// whole nodes it holds.
func TestCostBillsLostWork(t *testing.T) {
	t0 := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		jobs    []philly.Job
		vcs     []philly.VC
		preempt int
		want    map[string]float64 // GPU-seconds per VC
	}{
		{"evicted borrower", []philly.Job{
			{Line: 2, Submit: t0, Duration: 7200, GPUs: 16, VC: "a"},
			{Line: 3, Submit: t0.Add(3000 * time.Second), Duration: 100, GPUs: 8, VC: "b"},
		}, []philly.VC{{Name: "a", Nodes: 1}, {Name: "b", Nodes: 1}}, 1,
			// a: 16 GPUs for 3000 s, evicted (1200 s lost), then 5400 s more.
			map[string]float64{"a": 16 * (3000 + 5400), "b": 8 * 100}},
		{"uneven gang", []philly.Job{{Line: 2, Submit: t0, Duration: 10.5, GPUs: 20, VC: "c"}},
			[]philly.VC{{Name: "c", Nodes: 3}}, 0,
			map[string]float64{"c": 24 * 11}}, // 3 × 8 GPUs for 11 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Jobs: tc.jobs, VCs: tc.vcs, Policy: "allot", Sharing: Borrow,
				Checkpoint: 30 * time.Minute, CheckIncremental: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Preemptions != tc.preempt {
				t.Fatalf("%d preemptions, want %d", r.Preemptions, tc.preempt)
			}
			for _, tu := range r.Tenants {
				if w := tc.want[tu.Name]; tu.GPUHours*3600 != w || math.Abs(tu.USD-w/3600*r.USDPerGPUHour) > 1e-9 {
					t.Errorf("VC %s: %.0f GPU-seconds, $%.4f; want %.0f", tu.Name, tu.GPUHours*3600, tu.USD, w)
				}
			}
		})
	}
}
