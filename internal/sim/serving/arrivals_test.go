package serving

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/allot-dev/allot/internal/trace/azurellm"
)

// firstContext is the context tokens of a testPattern's request 0; request
// i has firstContext+i, so a request's tokens name its index.
const firstContext = 100

// testPattern is n requests whose gaps repeat 0.2, 0.5, 1, 2.3 (a mean of
// exactly 1 over any BlockLen of them) and whose tokens name their index.
func testPattern(n int) *azurellm.Pattern {
	p := &azurellm.Pattern{}
	for i := 0; i < n; i++ {
		p.Gaps = append(p.Gaps, []float64{0.2, 0.5, 1, 2.3}[i%4])
		p.Context = append(p.Context, firstContext+i)
		p.Generated = append(p.Generated, 3*i%97)
	}
	return p
}

// arrival is one request Arrivals gave.
type arrival struct {
	at       float64
	ctx, gen int
}

// collect runs a over [from, to) in spans of a minute at rate and share.
func collect(a *Arrivals, from, to, rate, share float64) []arrival {
	var out []arrival
	for t := from; t < to; t += 60 {
		a.Span(t, min(t+60, to), rate, share, func(at float64, ctx, gen int) {
			out = append(out, arrival{at, ctx, gen})
		})
	}
	return out
}

func newArrivals(p *azurellm.Pattern, seed uint64) *Arrivals {
	return NewArrivals(p, rand.New(rand.NewPCG(seed, 1)))
}

// Over a long span a replica gets rate × share requests a second, in
// order, within the span, each with the tokens of one request of the
// pattern.
func TestArrivalsFollowRateAndShare(t *testing.T) {
	p := testPattern(1000)
	const span = 20_000.0
	for _, tc := range []struct {
		name        string
		rate, share float64
	}{
		{"all of 2/s", 2, 1},
		{"a quarter of 2/s", 2, 0.25},
		{"half of 10/s", 10, 0.5},
		{"a tenth of 30/s", 30, 0.1},
		{"share above 1 is all", 3, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collect(newArrivals(p, 3), 0, span, tc.rate, tc.share)
			want := tc.rate * min(tc.share, 1) * span
			if n := float64(len(got)); math.Abs(n-want) > 0.03*want {
				t.Errorf("%g requests over %g s, want %g within 3 %%", n, span, want)
			}
			for i, r := range got {
				if r.at < 0 || r.at >= span || i > 0 && r.at < got[i-1].at {
					t.Fatalf("request %d at %g: out of order or out of [0, %g)", i, r.at, span)
				}
				if k := r.ctx - firstContext; k < 0 || k >= len(p.Context) || p.Generated[k] != r.gen {
					t.Fatalf("request %d has tokens %d, %d: not a request of the pattern", i, r.ctx, r.gen)
				}
			}
		})
	}
}

// With the whole of the endpoint's requests, a replica reads the pattern
// in blocks of consecutive requests, each after its own gap at the rate.
func TestArrivalsReadThePatternInBlocks(t *testing.T) {
	const rate = 4.0
	for _, n := range []int{1000, 100} { // longer and shorter than a block
		p := testPattern(n)
		got := collect(newArrivals(p, 5), 0, 2000, rate, 1)
		if len(got) < 3*BlockLen {
			t.Fatalf("%d requests", len(got))
		}
		run, blockLen := 1, min(BlockLen, n)
		for i := 1; i < len(got); i++ {
			k := got[i].ctx - firstContext
			if d := got[i].at - got[i-1].at; !near(d, p.Gaps[k]/rate) {
				t.Fatalf("pattern of %d: request %d (pattern's %d) came %g s after the previous, want its gap %g", n, i, k, d, p.Gaps[k]/rate)
			}
			if k == got[i-1].ctx-firstContext+1 {
				run++
				continue
			}
			// A jump ends a block: at least BlockLen−1 requests read (the
			// first block starts after its first request).
			if run < blockLen-1 {
				t.Fatalf("pattern of %d: a block of %d requests ended at request %d, want %d", n, run, i, blockLen)
			}
			run = 1
		}
	}
}

// A change of rate or share between spans rescales the wait for the
// pending request by the change of the replica's rate; with the whole of
// the endpoint's requests, all that follows is rescaled with it.
func TestArrivalsRescaleAtARateChange(t *testing.T) {
	p := testPattern(1000)
	for _, tc := range []struct {
		name        string
		rate, share float64
		stretch     float64 // of times after 100 s, against the same rate
		whole       bool    // every request follows, not only the first
	}{
		{"twice the rate", 4, 1, 0.5, true},
		{"a third of the rate", 2.0 / 3, 1, 3, true},
		{"half the share", 2, 0.5, 2, false},
		{"twice the rate, half the share", 4, 0.5, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			same, changed := newArrivals(p, 7), newArrivals(p, 7)
			collect(same, 0, 100, 2, 1)
			collect(changed, 0, 100, 2, 1)
			want := collect(same, 100, 200, 2, 1)
			got := collect(changed, 100, 100+100*tc.stretch, tc.rate, tc.share)
			if len(got) == 0 || len(want) == 0 {
				t.Fatalf("%d requests after the change, %d without it", len(got), len(want))
			}
			if !tc.whole {
				got, want = got[:1], want[:1]
			} else if len(got) != len(want) {
				t.Fatalf("%d requests after the change, want %d", len(got), len(want))
			}
			for i := range got {
				w := want[i]
				w.at = 100 + (w.at-100)*tc.stretch
				if got[i].ctx != w.ctx || got[i].gen != w.gen || !near(got[i].at, w.at) {
					t.Fatalf("request %d after the change %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}

// A span at rate or share 0 gives nothing and forgets the pending
// request: the next span starts afresh, as after a gap in time.
func TestArrivalsStartAfreshAfterNothing(t *testing.T) {
	p := testPattern(1000)
	const rate = 0.5
	for _, tc := range []struct {
		name        string
		rate, share float64
	}{
		{"rate 0", 0, 1},
		{"share 0", rate, 0},
		{"rate NaN", math.NaN(), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paused, gap, kept := newArrivals(p, 11), newArrivals(p, 11), newArrivals(p, 11)
			for _, a := range []*Arrivals{paused, gap, kept} {
				collect(a, 0, 100, rate, 1)
			}
			if n := len(collect(paused, 100, 100.5, tc.rate, tc.share)); n != 0 {
				t.Fatalf("%d requests at rate %g share %g", n, tc.rate, tc.share)
			}
			// The request pending at 100 s comes after 100.5 s: paused
			// must forget it; gap's is past by 200 s.
			if next := collect(kept, 100, 200, rate, 1); len(next) == 0 || next[0].at < 100.5 {
				t.Fatalf("setup: the request pending at 100 s comes at %+v, want after 100.5 s", next)
			}
			got := collect(paused, 100.5, 200, rate, 1)
			want := collect(gap, 200, 299.5, rate, 1)
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d requests after the pause, %d after a gap", len(got), len(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.ctx != w.ctx || g.gen != w.gen || !near(g.at-100.5, w.at-200) {
					t.Fatalf("request %d after the pause %+v, after a gap %+v (times from the span's start)", i, g, w)
				}
			}
		})
	}
}

// A fresh start comes at a random phase of the first wait: its first
// request after a uniform share of that request's gap.
func TestArrivalsStartAtARandomPhase(t *testing.T) {
	p := testPattern(1000)
	const rate, starts = 0.5, 400
	a := newArrivals(p, 17)
	var sum float64
	for i := 0; i < starts; i++ {
		from := 100 * float64(i) // the longest wait is 4.6 s: every span starts afresh
		got := collect(a, from, from+10, rate, 1)
		if len(got) == 0 {
			t.Fatalf("no request in [%g, %g)", from, from+10)
		}
		u := (got[0].at - from) / (p.Gaps[got[0].ctx-firstContext] / rate)
		if u < 0 || u >= 1 {
			t.Fatalf("span %d: the first request came after %g of its gap", i, u)
		}
		sum += u
	}
	if m := sum / starts; math.Abs(m-0.5) > 0.05 {
		t.Errorf("first requests came after %g of their gap on average, want 0.5", m)
	}
}

// The same seed gives the same requests; another seed others.
func TestArrivalsAreDeterministic(t *testing.T) {
	p := testPattern(1000)
	a := collect(newArrivals(p, 13), 0, 3600, 5, 0.3)
	b := collect(newArrivals(p, 13), 0, 3600, 5, 0.3)
	c := collect(newArrivals(p, 14), 0, 3600, 5, 0.3)
	if !slices.Equal(a, b) {
		t.Error("two runs of one seed differ")
	}
	if slices.Equal(a, c) {
		t.Error("two seeds give the same requests")
	}
}
