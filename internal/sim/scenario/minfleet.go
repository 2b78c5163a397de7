package scenario

import (
	"context"
	"fmt"
)

// MinFleet is the answer of FindMinFleet.
type MinFleet struct {
	// Factor is the smallest factor found on which the strategy meets its
	// targets; 0 when none up to MaxFactor does.
	Factor float64 `json:"factor"`
	GPUs   int     `json:"gpus"`
	// Tried lists every factor run, in order, and whether it met.
	Tried []Trial `json:"tried"`
}

// Trial is one run of the search.
type Trial struct {
	Factor float64 `json:"factor"`
	GPUs   int     `json:"gpus"`
	Meets  bool    `json:"meets"`
}

func (m *MinFleet) String() string {
	if m.Factor == 0 {
		return fmt.Sprintf("none ≤ ×%g", MaxFactor)
	}
	return fmt.Sprintf("×%.3g (%d GPUs)", m.Factor, m.GPUs)
}

// Search bounds: the factor is searched in [MinFactor, MaxFactor] to
// within FactorStep.
const (
	MinFactor  = 0.05
	MaxFactor  = 2.0
	FactorStep = 0.02
)

// FindMinFleet bisects the uniform fleet factor for the smallest fleet on
// which the scenario under opt meets its targets (Result.Meets): every
// endpoint's SLO attainment, no guarantee violation, every reservation on
// time. A factor at which the world cannot be built (a reservation larger
// than the scaled region) does not meet. The search assumes that a larger
// fleet meets whenever a smaller one does; Tried shows every run.
func FindMinFleet(ctx context.Context, f *File, opt Options) (*MinFleet, error) {
	m := &MinFleet{}
	try := func(factor float64) (bool, error) {
		o := opt
		o.Factor = factor
		if _, err := f.Build(factor, opt.Strategy); err != nil {
			m.Tried = append(m.Tried, Trial{Factor: factor})
			return false, nil
		}
		res, err := Run(ctx, f, o)
		if err != nil {
			return false, err
		}
		m.Tried = append(m.Tried, Trial{Factor: factor, GPUs: res.GPUs, Meets: res.Meets})
		if res.Meets && (m.Factor == 0 || factor < m.Factor) {
			m.Factor, m.GPUs = factor, res.GPUs
		}
		return res.Meets, nil
	}
	hi := 1.0
	for {
		ok, err := try(hi)
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
		if hi >= MaxFactor {
			return m, nil
		}
		hi = min(hi*1.25, MaxFactor)
	}
	lo := MinFactor
	for hi-lo > FactorStep {
		mid := (lo + hi) / 2
		ok, err := try(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return m, nil
}
