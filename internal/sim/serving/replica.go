package serving

import "math"

// Defaults of a Replica.
const (
	// DefaultTimeout is how long a request waits for admission before its
	// client gives up.
	DefaultTimeout = 60.0
	// PrefillWindow is the time constant, in seconds, of the prefill
	// stage's busy share that slows decoding.
	PrefillWindow = 10.0
	// MaxPrefillShare caps that share: decoding always gets a tenth.
	MaxPrefillShare = 0.9
)

// Outcome is what one request saw. Dropped requests (not admitted within
// the timeout, or larger than the replica's memory) have infinite times.
type Outcome struct {
	TTFT, Latency float64
	Dropped       bool
}

// Replica is one replica's state: the requests in its batch and its
// prefill stage. Serve must be called in arrival order.
type Replica struct {
	p       Profile
	Timeout float64

	batch       slots   // admitted requests by the time they leave
	kv          float64 // KV tokens they hold
	prefillFree float64 // when the prefill stage is next free
	load        float64 // prefill seconds, decayed with PrefillWindow
	loadAt      float64
	popped      []slot // scratch: slots taken while admitting
}

// NewReplica is an empty replica of profile p.
func NewReplica(p Profile) *Replica {
	return &Replica{p: p, Timeout: DefaultTimeout}
}

// Profile is the replica's profile.
func (r *Replica) Profile() Profile { return r.p }

// Serve serves a request arriving at at (seconds) with ctx context and gen
// generated tokens. See the package documentation for the steps.
func (r *Replica) Serve(at float64, ctx, gen int) Outcome {
	need := float64(ctx + gen)
	if need > r.p.KVTokens {
		return dropped()
	}
	// 1. Admission: retire what has left by at, then wait, in order of
	// leaving, for a place in the batch and room in memory.
	r.retire(at)
	admit := at
	r.popped = r.popped[:0]
	for len(r.batch) >= r.p.MaxBatch || r.kv+need > r.p.KVTokens {
		s := r.batch.pop()
		r.popped = append(r.popped, s)
		r.kv -= s.kv
		admit = max(admit, s.leaves)
	}
	if admit-at > r.Timeout {
		for _, s := range r.popped { // nobody took their places
			r.batch.push(s)
			r.kv += s.kv
		}
		return dropped()
	}
	// 2. Prefill, first come first served.
	start := max(admit, r.prefillFree)
	prefill := float64(ctx) / r.p.PrefillTokensPerSec
	r.prefillFree = start + prefill
	// The busy share is that of the prefills before this one: its own is
	// over before its decoding starts.
	r.load *= math.Exp(-(at - r.loadAt) / PrefillWindow)
	r.loadAt = at
	share := min(r.load/PrefillWindow, MaxPrefillShare)
	r.load += prefill
	// 3. Decode: one step a token, in the time prefill leaves.
	step := r.p.Step(len(r.batch)+1, r.kv+need) / (1 - share)
	leaves := r.prefillFree + float64(gen)*step
	r.batch.push(slot{leaves: leaves, kv: need})
	r.kv += need
	return Outcome{TTFT: r.prefillFree - at, Latency: leaves - at}
}

// InFlight is how many requests the replica holds at at, admitted and not
// yet done: what a router that sends each request to the replica with the
// fewest in flight reads. at must not precede the arrival last served.
func (r *Replica) InFlight(at float64) int {
	r.retire(at)
	return len(r.batch)
}

// retire takes the requests that have left by at out of the batch.
func (r *Replica) retire(at float64) {
	for len(r.batch) > 0 && r.batch[0].leaves <= at {
		r.kv -= r.batch.pop().kv
	}
}

func dropped() Outcome {
	return Outcome{TTFT: math.Inf(1), Latency: math.Inf(1), Dropped: true}
}

// slot is an admitted request: when it leaves the batch and the KV tokens
// it holds until then.
type slot struct{ leaves, kv float64 }

// slots is a binary min-heap by leaving time (container/heap's layout,
// without its interface boxing: Serve runs for every request).
type slots []slot

// push and pop move the element being placed as a hole moves: a parent
// or child steps into the hole, the element is written once where the
// hole stops (the heap comes out as with swaps at every step).
func (h *slots) push(x slot) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].leaves <= x.leaves {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = x
}

func (h *slots) pop() slot {
	s := *h
	top := s[0]
	n := len(s) - 1
	x := s[n]
	s = s[:n]
	i := 0
	for {
		l, m, least := 2*i+1, -1, x.leaves
		if l < n && s[l].leaves < least {
			m, least = l, s[l].leaves
		}
		if r := l + 1; r < n && s[r].leaves < least {
			m = r
		}
		if m < 0 {
			break
		}
		s[i] = s[m]
		i = m
	}
	if n > 0 {
		s[i] = x
	}
	*h = s
	return top
}
