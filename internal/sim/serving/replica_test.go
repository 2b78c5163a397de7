package serving

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// toy is a replica profile of round numbers: a prefill of 1000 tokens/s,
// a step of 10 ms plus 10 µs a KV token (compute never binds below a
// batch of 10), room for 10 000 KV tokens and a batch of 4.
var toy = Profile{GPU: "toy", GPUs: 1, PrefillTokensPerSec: 1000, WeightsSec: 0.01, KVSecPerToken: 1e-5,
	ComputeSecPerToken: 1e-3, KVTokens: 10_000, MaxBatch: 4}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// A request that finds the replica idle is prefilled at once and decodes
// alone, undisturbed by a prefill stage that has nothing else to do.
func TestReplicaServesALoneRequestAtTheRoofline(t *testing.T) {
	h100, err := NewProfile(DefaultModel, "H100", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		p        Profile
		before   [][3]int // earlier requests: at, context, generated
		at       float64
		ctx, gen int
	}{
		{name: "toy", p: toy, at: 5, ctx: 1500, gen: 200},
		{name: "H100", p: h100, at: 0, ctx: 4000, gen: 300},
		{name: "no tokens generated", p: toy, at: 1, ctx: 700, gen: 0},
		{name: "long after earlier work", p: toy, before: [][3]int{{0, 3000, 50}, {1, 3000, 50}}, at: 10_000, ctx: 1500, gen: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReplica(tc.p)
			for _, b := range tc.before {
				r.Serve(float64(b[0]), b[1], b[2])
			}
			o := r.Serve(tc.at, tc.ctx, tc.gen)
			ttft := float64(tc.ctx) / tc.p.PrefillTokensPerSec
			latency := ttft + float64(tc.gen)*tc.p.Step(1, float64(tc.ctx+tc.gen))
			if o.Dropped || !near(o.TTFT, ttft) || !near(o.Latency, latency) {
				t.Errorf("got %+v, want TTFT %.9g and latency %.9g", o, ttft, latency)
			}
		})
	}
}

// Requests that arrive together beyond the batch wait, each for the
// earliest of the batch to leave, and are prefilled in arrival order.
func TestReplicaQueuesBeyondTheBatch(t *testing.T) {
	const n, ctx, gen = 10, 500, 500 // decoding takes 15 times the prefill
	r := NewReplica(toy)
	prefill := float64(ctx) / toy.PrefillTokensPerSec
	var out []Outcome
	for i := 0; i < n; i++ {
		o := r.Serve(0, ctx, gen)
		if o.Dropped {
			t.Fatalf("request %d dropped", i)
		}
		out = append(out, o)
	}
	for i, o := range out {
		// Admitted at once while the batch has room, else when request
		// i−MaxBatch leaves; prefilled once admitted and the previous
		// prefill is done.
		admit := 0.0
		if i >= toy.MaxBatch {
			admit = out[i-toy.MaxBatch].Latency
			if !(o.TTFT > admit) {
				t.Errorf("request %d: first token at %g, before request %d left at %g", i, o.TTFT, i-toy.MaxBatch, admit)
			}
		}
		prev := 0.0
		if i > 0 {
			prev = out[i-1].TTFT
			if !(o.TTFT > prev) {
				t.Errorf("request %d: first token at %g, not after request %d's at %g", i, o.TTFT, i-1, prev)
			}
		}
		if want := max(admit, prev) + prefill; !near(o.TTFT, want) {
			t.Errorf("request %d: TTFT %.9g, want %.9g", i, o.TTFT, want)
		}
	}
	if w := out[toy.MaxBatch].TTFT - out[toy.MaxBatch-1].TTFT; !(w > 2*prefill) {
		t.Errorf("the first request beyond the batch waited %g s more than the last within it; want more than its prefill", w)
	}
}

// A request needs room in memory for its context and generated tokens:
// one larger than the replica's memory is dropped, and one that does not
// fit beside those decoding waits for one to leave.
func TestReplicaWaitsForMemory(t *testing.T) {
	p := toy
	p.KVTokens = 1000
	type req struct {
		at       float64
		ctx, gen int
	}
	for _, tc := range []struct {
		name string
		reqs []req
		// check is given the outcomes.
		check func(t *testing.T, o []Outcome)
	}{
		{"larger than memory", []req{{0, 900, 101}}, func(t *testing.T, o []Outcome) {
			if !o[0].Dropped || !math.IsInf(o[0].TTFT, 1) || !math.IsInf(o[0].Latency, 1) {
				t.Errorf("1001 tokens on a replica of 1000: %+v, want dropped with infinite times", o[0])
			}
		}},
		{"exactly the memory", []req{{0, 900, 100}}, func(t *testing.T, o []Outcome) {
			if o[0].Dropped || !near(o[0].TTFT, 0.9) {
				t.Errorf("1000 tokens on a replica of 1000: %+v, want served, TTFT 0.9 s", o[0])
			}
		}},
		{"waits for room", []req{{0, 400, 200}, {0, 300, 200}}, func(t *testing.T, o []Outcome) {
			// 600 + 500 tokens > 1000: the second starts its prefill when
			// the first leaves.
			if want := o[0].Latency + 0.3; o[1].Dropped || !near(o[1].TTFT, want) {
				t.Errorf("second request %+v, want TTFT %.9g (after the first left at %.9g)", o[1], want, o[0].Latency)
			}
		}},
		{"fits beside", []req{{0, 400, 200}, {0, 200, 200}}, func(t *testing.T, o []Outcome) {
			// 600 + 400 tokens fit: only the prefill stage is waited for.
			if want := o[0].TTFT + 0.2; o[1].Dropped || !near(o[1].TTFT, want) {
				t.Errorf("second request %+v, want TTFT %.9g", o[1], want)
			}
		}},
		{"room freed by the earliest to leave", []req{{0, 100, 300}, {0, 100, 50}, {0, 100, 400}}, func(t *testing.T, o []Outcome) {
			// 400 + 150 held; the third (500) needs the second's 150, which
			// leaves before the first.
			if !(o[1].Latency < o[0].Latency) {
				t.Fatalf("setup: the second (%g) should leave before the first (%g)", o[1].Latency, o[0].Latency)
			}
			if want := o[1].Latency + 0.1; o[2].Dropped || !near(o[2].TTFT, want) {
				t.Errorf("third request %+v, want TTFT %.9g (after the second left)", o[2], want)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReplica(p)
			var o []Outcome
			for _, q := range tc.reqs {
				o = append(o, r.Serve(q.at, q.ctx, q.gen))
			}
			tc.check(t, o)
		})
	}
}

// A request whose admission would take longer than the timeout is dropped
// and leaves the replica as it found it: the next request is served as if
// it had not come.
func TestReplicaTimeoutDropsWithoutTakingASlot(t *testing.T) {
	p := toy
	p.KVTokens = 2000
	p.MaxBatch = 2
	for _, tc := range []struct {
		name    string
		before  float64 // the waiting request comes this long before the first leaves
		dropped bool
	}{
		{"far past the timeout", 21, true},
		{"just past the timeout", 1.2, true},
		{"within the timeout", 0.8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with, without := NewReplica(p), NewReplica(p)
			with.Timeout, without.Timeout = 1, 1
			// The first holds 1100 tokens for about 21 s; the waiting
			// request's 1000 do not fit beside them.
			first := with.Serve(0, 100, 1000)
			without.Serve(0, 100, 1000)
			at := first.Latency - tc.before
			w := with.Serve(at, 300, 700)
			if w.Dropped != tc.dropped {
				t.Fatalf("a request waiting %g s with a timeout of 1 s: %+v, want dropped %v", tc.before, w, tc.dropped)
			}
			if w.Dropped && (!math.IsInf(w.TTFT, 1) || !math.IsInf(w.Latency, 1)) {
				t.Errorf("dropped with finite times: %+v", w)
			}
			// The next (200 tokens) fits beside the first at once.
			got := with.Serve(at+0.1, 100, 100)
			alone := without.Serve(at+0.1, 100, 100)
			if tc.dropped && got != alone {
				t.Errorf("after a dropped request the next saw %+v; without it %+v", got, alone)
			}
			if !tc.dropped && !(got.TTFT > alone.TTFT) {
				t.Errorf("after an admitted request the next saw %+v; without it %+v: want it slower (prefilled after it)", got, alone)
			}
		})
	}
}

// Prefill goes first: decoding after a busy prefill stage is slower, by
// the stage's decayed busy share over the last PrefillWindow seconds,
// never by more than MaxPrefillShare.
func TestReplicaPrefillSlowsDecode(t *testing.T) {
	const ctx, gen = 100, 100
	lone := float64(gen) * toy.Step(1, ctx+gen)
	for _, tc := range []struct {
		name     string
		requests int // of 1 s of prefill each, one a second, gone before the probe
		share    float64
	}{
		{"idle", 0, 0},
		{"nine seconds busy", 9, 0},
		{"forty seconds busy", 40, MaxPrefillShare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReplica(toy)
			at := float64(tc.requests) // the last leaves as the probe comes
			share := tc.share
			for i := 0; i < tc.requests; i++ {
				if o := r.Serve(float64(i), 1000, 0); o.Dropped || o.Latency > 1+1e-9 {
					t.Fatalf("setup: request %d %+v, want done within its second", i, o)
				}
				if tc.share == 0 {
					share += math.Exp(-(at-float64(i))/PrefillWindow) / PrefillWindow
				}
			}
			o := r.Serve(at, ctx, gen)
			decode := o.Latency - o.TTFT
			if want := lone / (1 - share); !near(decode, want) {
				t.Errorf("decode %.9g s, want %.9g (%g alone, busy share %.4f)", decode, want, lone, share)
			}
			if tc.requests > 0 && !(decode > lone) {
				t.Errorf("decode %g s after a busy prefill stage, no slower than %g alone", decode, lone)
			}
		})
	}
}

// The batch's heap gives its slots back by leaving time, earliest first,
// whatever order they came in and however pushes and pops interleave.
func TestSlotsPopInLeavingOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h slots
	var want []float64 // what h holds, sorted
	for step := range 5000 {
		if len(want) == 0 || rng.IntN(3) > 0 {
			x := float64(rng.IntN(50)) // ties too
			h.push(slot{leaves: x, kv: x})
			i, _ := slices.BinarySearch(want, x)
			want = slices.Insert(want, i, x)
			continue
		}
		if got := h.pop(); got.leaves != want[0] || got.kv != got.leaves {
			t.Fatalf("step %d: popped %+v, want leaving at %v", step, got, want[0])
		}
		want = want[1:]
	}
}
