package scenario

import (
	"context"
	"fmt"
	"math"

	"github.com/allot-dev/allot/internal/stats"
)

// MinFleet is the answer of FindMinFleet.
type MinFleet struct {
	// Factor is the smallest factor of the grid at which at least
	// MinPassRate of the seeds meet every target; 0 when none does.
	Factor float64 `json:"factor"`
	GPUs   int     `json:"gpus"`
	// Grid lists every factor tried, in order, with its pass rate.
	Grid []Trial `json:"grid"`
}

// Trial is one factor of the grid run over the seeds.
type Trial struct {
	Factor float64 `json:"factor"`
	GPUs   int     `json:"gpus"`
	// Met counts the seeds that met every target, of Seeds; a factor at
	// which the world cannot be built (a reservation larger than the
	// scaled region) meets on none.
	Met      int     `json:"met"`
	Seeds    int     `json:"seeds"`
	PassRate float64 `json:"pass_rate"`
	// Lo and Hi bound the pass rate (Wilson, 95 %).
	Lo float64 `json:"pass_rate_lo"`
	Hi float64 `json:"pass_rate_hi"`
}

func (m *MinFleet) String() string {
	if m.Factor == 0 {
		return "none of the grid"
	}
	return fmt.Sprintf("×%g (%d GPUs)", m.Factor, m.GPUs)
}

// MinPassRate is the share of seeds that must meet every target for a
// fleet factor to count as enough.
const MinPassRate = 0.95

// DefaultGrid is the fleet factors FindMinFleet tries without a grid.
var DefaultGrid = []float64{0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2}

// FindMinFleet runs case c over seeds at every fleet factor of grid
// (ascending) and reports the smallest factor at which at least
// MinPassRate of the seeds meet every target (Result.Meets), with the whole
// grid. Nothing assumes the outcome is monotone in the factor: every
// factor is run, and the answer is the smallest that passes, whatever
// comes after it.
func FindMinFleet(ctx context.Context, f *File, base Options, c Case, seeds []int64, grid []float64, parallel int) (*MinFleet, error) {
	if len(grid) == 0 {
		grid = DefaultGrid
	}
	m := &MinFleet{}
	for _, factor := range grid {
		if !(factor > 0) || factor > 100 || math.IsNaN(factor) {
			return nil, fmt.Errorf("fleet factor %g: want a number in (0, 100]", factor)
		}
		t := Trial{Factor: factor, Seeds: len(seeds)}
		o := base
		o.Factor = factor
		if w, err := f.Build(factor, c.Strategy); err == nil {
			for _, n := range w.Fleet.Nodes {
				t.GPUs += w.Fleet.Catalog[n.SKU].GPUs
			}
			runs, err := Sweep(ctx, f, o, []Case{c}, seeds, parallel)
			if err != nil {
				return nil, err
			}
			ok := make([]bool, len(runs[0]))
			for i, r := range runs[0] {
				ok[i] = r.Meets
				if r.Meets {
					t.Met++
				}
			}
			t.PassRate, t.Lo, t.Hi = stats.PassRate(ok)
		}
		m.Grid = append(m.Grid, t)
		if m.Factor == 0 && t.Seeds > 0 && float64(t.Met) >= MinPassRate*float64(t.Seeds) {
			m.Factor, m.GPUs = factor, t.GPUs
		}
	}
	return m, nil
}
