package azurellm

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrShort is wrapped by NewPattern's error when the requests cannot give
// a pattern.
var ErrShort = errors.New("azurellm: too few requests for a pattern")

// Pattern is the shape of a trace with its rate taken out: gap i is the
// time from request i-1 to request i divided by the mean gap of the window
// of the trace it ends in, so the gaps average 1 in every window and a
// caller replays the trace at mean gap m by waiting Gaps[i]·m before
// request i. The burstiness within a window stays; the rate's drift from
// window to window goes (a caller sets the rate itself, e.g. by a daily
// curve). Context and Generated are the requests' token counts in the
// same order.
type Pattern struct {
	Gaps      []float64 // len(requests); Gaps[0] (no request before it) is taken as the mean, 1
	Context   []int
	Generated []int
	// Steps holds, for readers that skip requests, each request's sum of
	// the gaps up to it and its token counts side by side (NewPattern sets
	// it; nil on a Pattern built by hand, StepsOf makes it). One copy
	// serves every reader: the simulator's many replicas skip through it at
	// random, and their own copies no longer fit a CPU's cache (a third of
	// the week's run time went there), nor do three arrays read at once.
	Steps []Step
}

// NewPattern builds the pattern of requests, which must be at least 2, in
// non-decreasing time order, and span a positive time, with windows of
// window from the first request (0: one window, the whole trace).
func NewPattern(reqs []Request, window time.Duration) (*Pattern, error) {
	n := len(reqs)
	if n < 2 {
		return nil, fmt.Errorf("%w: %d requests, need at least 2", ErrShort, n)
	}
	span := reqs[n-1].At - reqs[0].At
	if span <= 0 {
		return nil, fmt.Errorf("%w: the %d requests span %v, need a positive time", ErrShort, n, span)
	}
	if window <= 0 {
		window = span + 1
	}
	p := &Pattern{Gaps: make([]float64, n), Context: make([]int, n), Generated: make([]int, n)}
	// The sum and count of the gaps ending in each window.
	windows := int((span)/window) + 1
	sum, count := make([]float64, windows), make([]int, windows)
	for i, r := range reqs {
		p.Context[i], p.Generated[i] = r.Context, r.Generated
		if i == 0 {
			continue
		}
		d := r.At - reqs[i-1].At
		if d < 0 {
			return nil, fmt.Errorf("azurellm: request %d comes %v before request %d", i, -d, i-1)
		}
		p.Gaps[i] = float64(d)
		w := int((r.At - reqs[0].At) / window)
		sum[w] += float64(d)
		count[w]++
	}
	p.Gaps[0] = 1
	for i := 1; i < n; i++ {
		w := int((reqs[i].At - reqs[0].At) / window)
		if mean := sum[w] / float64(count[w]); mean > 0 {
			p.Gaps[i] /= mean
		} else {
			p.Gaps[i] = 1 // a window of simultaneous requests: as steady as can be
		}
	}
	steps, err := StepsOf(p)
	if err != nil {
		return nil, err
	}
	p.Steps = steps
	return p, nil
}

// CV is the coefficient of variation of the gaps (standard deviation over
// mean, population form): 1 for Poisson arrivals, above 1 for bursty ones,
// 0 for a steady clock. It is 0 when there are no gaps or they average 0.
func (p *Pattern) CV() float64 {
	if len(p.Gaps) == 0 {
		return 0
	}
	var sum float64
	for _, g := range p.Gaps {
		sum += g
	}
	m := sum / float64(len(p.Gaps))
	if m <= 0 {
		return 0
	}
	var ss float64
	for _, g := range p.Gaps {
		ss += (g - m) * (g - m)
	}
	return math.Sqrt(ss/float64(len(p.Gaps))) / m
}

// MeanTokens is the mean context and generated tokens of a request.
func (p *Pattern) MeanTokens() (context, generated float64) {
	if len(p.Context) == 0 {
		return 0, 0
	}
	var c, g float64
	for i := range p.Context {
		c += float64(p.Context[i])
		g += float64(p.Generated[i])
	}
	n := float64(len(p.Context))
	return c / n, g / n
}

// Step is request i of a Pattern as a reader that skips requests reads
// it: End is Σ Gaps[:i+1], the pattern time from before request 0 to
// request i, so that skipping from request i to request k takes
// Steps[k].End − Steps[i].End.
type Step struct {
	End                float64
	Context, Generated int32
}

// StepsOf is p's Steps, built from its gaps and token counts, which must
// be as many as its gaps and fit in 32 bits.
func StepsOf(p *Pattern) ([]Step, error) {
	if len(p.Context) != len(p.Gaps) || len(p.Generated) != len(p.Gaps) {
		return nil, fmt.Errorf("azurellm: %d gaps, %d context and %d generated counts: need as many of each", len(p.Gaps), len(p.Context), len(p.Generated))
	}
	out := make([]Step, len(p.Gaps))
	end := 0.0
	for i, g := range p.Gaps {
		c, x := p.Context[i], p.Generated[i]
		if c < 0 || x < 0 || c > math.MaxInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("azurellm: request %d: %d context and %d generated tokens: need 0 to %d", i, c, x, math.MaxInt32)
		}
		end += g
		out[i] = Step{End: end, Context: int32(c), Generated: int32(x)}
	}
	return out, nil
}
