package score

import (
	"errors"
	"fmt"
	"slices"

	"github.com/allot-dev/allot/internal/sched"
)

// Sentinel errors of New.
var (
	ErrUnknown    = errors.New("score: unknown policy")
	ErrNoWorkload = errors.New("score: policy needs a target workload")
)

// The paper's largest node, used to scale CPU and GPU into [0, 1].
const (
	maxSpecCPU  = 128000 // milli-cores
	maxSpecGPU  = 8000   // milli-GPU
	maxScore    = 100    // the paper's integer score range is 0..maxScore
	milliPerGPU = 1000
)

// Option configures New.
type Option func(*config)

type config struct {
	seed     int64
	workload Workload
}

// WithSeed seeds policies that draw random numbers (random).
func WithSeed(seed int64) Option { return func(c *config) { c.seed = seed } }

// WithWorkload gives fragmentation-aware policies (fgd, allot) the target
// workload they measure fragmentation against.
func WithWorkload(w Workload) Option { return func(c *config) { c.workload = w } }

var constructors = map[string]func(config) (sched.Scorer, error){
	"random":     newRandom,
	"dotprod":    func(config) (sched.Scorer, error) { return DotProd{}, nil },
	"clustering": func(config) (sched.Scorer, error) { return Clustering{}, nil },
	"packing":    func(config) (sched.Scorer, error) { return Packing{}, nil },
	"bestfit":    func(config) (sched.Scorer, error) { return BestFit{}, nil },
	"fgd":        func(c config) (sched.Scorer, error) { return newFrag(c, "fgd") },
	"allot":      func(c config) (sched.Scorer, error) { return newFrag(c, "allot") },
}

// Names lists the policies New knows, sorted.
func Names() []string {
	var out []string
	for n := range constructors {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// NeedsWorkload reports whether policy name needs WithWorkload.
func NeedsWorkload(name string) bool { return name == "fgd" || name == "allot" }

// New returns the scorer of the named policy. A scorer keeps caches and
// random state, so each goroutine needs its own.
func New(name string, opts ...Option) (sched.Scorer, error) {
	mk, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknown, name, Names())
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	return mk(c)
}

// minMax rescales integer scores to 0..maxScore with integer division, as
// the paper's simulator does; all scores become 0 when they are equal.
func minMax(scores []float64) {
	if len(scores) == 0 {
		return
	}
	lo, hi := int64(scores[0]), int64(scores[0])
	for _, s := range scores {
		lo, hi = min(lo, int64(s)), max(hi, int64(s))
	}
	for i, s := range scores {
		if hi == lo {
			scores[i] = 0
		} else {
			scores[i] = float64((int64(s) - lo) * maxScore / (hi - lo))
		}
	}
}
