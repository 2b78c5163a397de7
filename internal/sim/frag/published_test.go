package frag

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/trace/openb"
)

// published reads fgd_published_alloc.csv: median allocation % by
// workload, the paper's policy name and arrived %.
func published(t *testing.T) map[string]map[string]map[int]float64 {
	t.Helper()
	f, err := os.Open(traces + "fgd_published_alloc.csv")
	if err != nil {
		t.Fatalf("the published figures the repository ships (data/traces): %v", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]map[int]float64{}
	for _, r := range rows[1:] {
		wl := strings.TrimPrefix(r[0], "openb_pod_list_")
		pct, err1 := strconv.Atoi(r[2])
		med, err2 := strconv.ParseFloat(r[3], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad row %v", r)
		}
		if out[wl] == nil {
			out[wl] = map[string]map[int]float64{}
		}
		if out[wl][r[1]] == nil {
			out[wl][r[1]] = map[int]float64{}
		}
		out[wl][r[1]][pct] = med
	}
	return out
}

// paperPolicy maps the paper's policy names to allot's.
var paperPolicy = map[string]string{
	"01-Random": "random", "02-DotProd": "dotprod", "03-GpuClustering": "clustering",
	"04-GpuPacking": "packing", "05-BestFit": "bestfit", "06-FGD": "fgd",
}

var paperSeeds = []int64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}

// TestReproducesPaper runs the six paper policies with the paper's ten
// seeds on every workload with published figures, and checks each median
// at arrived 100 % and 130 % within ±1.0 point of the published one. It
// also checks that allot's median at arrived 100 % beats the published FGD
// median, and reaches goalDefault on the default workload.
func TestReproducesPaper(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 seeds × 7 policies × 4 workloads (about 2 minutes on 2 cores)")
	}
	const tolerance = 1.0
	pub := published(t)
	for wl, byPolicy := range pub {
		t.Run(wl, func(t *testing.T) {
			nodes, pods := loadTrace(t, wl)
			for paper, policy := range paperPolicy {
				want, ok := byPolicy[paper]
				if !ok {
					t.Errorf("no published figures for %s", paper)
					continue
				}
				res := runPaper(t, nodes, pods, policy)
				for _, p := range res.Points {
					got := p.Median
					t.Logf("%s %s arrived %d%%: %.2f (published %.2f)", wl, policy, p.ArrivedPct, got, want[p.ArrivedPct])
					if math.Abs(got-want[p.ArrivedPct]) > tolerance {
						t.Errorf("%s at arrived %d%%: median %.2f, published %.2f (±%.1f)", policy, p.ArrivedPct, got, want[p.ArrivedPct], tolerance)
					}
				}
			}
			fgd, ok := byPolicy["06-FGD"][100]
			if !ok {
				t.Fatal("no published FGD figure at arrived 100%")
			}
			got := runPaper(t, nodes, pods, "allot").Points[0].Median
			t.Logf("%s allot arrived 100%%: %.3f vs published FGD %.3f", wl, got, fgd)
			if got <= fgd {
				t.Errorf("allot does not beat published FGD on %s at arrived 100%%: %.3f ≤ %.3f", wl, got, fgd)
			}
			if wl == "default" && got < goalDefault {
				t.Errorf("allot on default at arrived 100%%: %.3f, want ≥ %.1f", got, goalDefault)
			}
		})
	}
}

// goalDefault is issue 12's goal for allot on the default workload at
// arrived 100 % (FGD: 95.23). Round 5's scorer reaches 96.239.
const goalDefault = 96.2

// unpublished are openb workloads without published figures; allot is
// checked against allot's own FGD run on them.
var unpublished = []string{"gpushare20", "gpuspec05"}

// TestAllotBeatsFGDUnpublished checks allot's median at arrived 100 %
// against FGD's, both run here with the paper's seeds, on the shipped
// workloads without published figures.
func TestAllotBeatsFGDUnpublished(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 seeds × 2 policies × 2 workloads (about 20 s on 2 cores)")
	}
	for _, wl := range unpublished {
		t.Run(wl, func(t *testing.T) {
			nodes, pods := loadTrace(t, wl)
			fgd := runPaper(t, nodes, pods, "fgd").Points[0].Median
			got := runPaper(t, nodes, pods, "allot").Points[0].Median
			t.Logf("%s arrived 100%%: allot %.3f, fgd %.3f", wl, got, fgd)
			if got <= fgd {
				t.Errorf("allot does not beat FGD on %s at arrived 100%%: %.3f ≤ %.3f", wl, got, fgd)
			}
		})
	}
}

// runPaper runs policy with the paper's seeds and inflation, reporting
// arrived 100 % and 130 %.
func runPaper(t *testing.T, nodes []openb.Node, pods []openb.Pod, policy string) Result {
	t.Helper()
	res, err := Run(context.Background(), Config{Nodes: nodes, Pods: pods, Policy: policy, Inflate: 1.3,
		Seeds: paperSeeds, Points: []int{100, 130}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
