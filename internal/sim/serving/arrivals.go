package serving

import (
	"math"
	"math/rand/v2"

	"github.com/allot-dev/allot/internal/trace/azurellm"
)

// BlockLen is how many consecutive requests of the trace Arrivals reads
// before it jumps to a random offset.
const BlockLen = 256

// Arrivals draws the requests of a share of an endpoint's replicas. The
// endpoint's requests follow a trace's pattern at the endpoint's rate;
// each goes to these replicas with a probability (their share of the
// endpoint's capacity), so they see the endpoint's bursts thinned: a burst
// of the whole endpoint reaches every share at once. Within the share a
// Router picks the replica.
type Arrivals struct {
	p     *azurellm.Pattern
	steps []azurellm.Step // p's own (Pattern.Steps) where it has them
	rng   *rand.Rand
	block int // start of the block being read
	off   int // position in it of the last request drawn
	next  float64
	ctx   int // tokens of the pending request
	gen   int
	rate  float64
	share float64
}

// NewArrivals reads p (gaps with a mean of one, package trace/azurellm)
// from random blocks drawn from rng. p must have a request, and as many
// token counts of each kind as gaps, each fitting in 32 bits (a Pattern
// NewPattern made has).
func NewArrivals(p *azurellm.Pattern, rng *rand.Rand) *Arrivals {
	a := &Arrivals{p: p, rng: rng, steps: p.Steps, next: -1}
	if len(a.steps) != len(p.Gaps) {
		steps, err := azurellm.StepsOf(p) // a Pattern built by hand
		if err != nil {
			panic("serving: " + err.Error())
		}
		a.steps = steps
	}
	a.jump()
	return a
}

// blockLen is BlockLen, or the whole pattern when it is shorter.
func (a *Arrivals) blockLen() int { return min(BlockLen, len(a.p.Gaps)) }

func (a *Arrivals) jump() {
	a.block = a.rng.IntN(len(a.p.Gaps) - a.blockLen() + 1)
	a.off = 0
}

// skip moves past k requests of the endpoint's stream and returns the
// pattern time they took; the request reached is the pending one.
func (a *Arrivals) skip(k int) float64 {
	var t float64
	for {
		left := a.blockLen() - 1 - a.off // requests after the current one in its block
		if k <= left {
			i := a.block + a.off
			t += a.steps[i+k].End - a.steps[i].End
			a.off += k
			break
		}
		i := a.block + a.off
		t += a.steps[a.block+a.blockLen()-1].End - a.steps[i].End
		k -= left + 1
		a.jump()
		t += a.p.Gaps[a.block] // the gap into the new block's first request
	}
	s := &a.steps[a.block+a.off]
	a.ctx, a.gen = int(s.Context), int(s.Generated)
	return t
}

// draw is how many of the endpoint's requests pass until one comes to
// this replica: geometric with the replica's share, at least 1; logMiss is
// log(1 − share), 0 for a share of 1.
func (a *Arrivals) draw(logMiss float64) int {
	if logMiss == 0 {
		return 1
	}
	u := 1 - a.rng.Float64() // (0, 1]
	return 1 + int(math.Min(math.Floor(math.Log(u)/logMiss), 1e9))
}

// Span calls fn for every request the share gets in [from, to), in
// order, with its time and token counts, while the endpoint receives rate
// requests/s and the share of them is share (0, 1]. A change of
// rate between spans rescales the wait for the pending request.
func (a *Arrivals) Span(from, to, rate, share float64, fn func(at float64, ctx, gen int)) {
	if !(rate > 0) || !(share > 0) {
		a.next = -1 // nothing pending: the next span starts afresh
		return
	}
	share = min(share, 1)
	logMiss := 0.0
	if share < 1 {
		logMiss = math.Log1p(-share)
	}
	switch {
	case a.next < 0 || a.next < from:
		// Start afresh at a random phase of the wait.
		a.next = from + a.rng.Float64()*a.skip(a.draw(logMiss))/rate
	case rate*share != a.rate*a.share:
		// The wait not yet elapsed at from, at the new rate of this replica.
		a.next = from + (a.next-from)*(a.rate*a.share)/(rate*share)
	}
	a.rate, a.share = rate, share
	for a.next < to {
		fn(a.next, a.ctx, a.gen)
		a.next += a.skip(a.draw(logMiss)) / rate
	}
}
