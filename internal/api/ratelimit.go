package api

import (
	"math"
	"sync"
	"time"
)

// limiter is a token bucket per key (a tenant, "admin", or a source
// address): each holds up to burst tokens and refills at rate per second; a
// request takes one. It keeps at most maxKeys buckets: past that it forgets
// the full ones, and while it still has too many, new keys share one.
type limiter struct {
	rate    float64
	burst   float64
	now     func() time.Time
	maxKeys int

	mu      sync.Mutex // guards buckets and pruned
	buckets map[string]*bucket
	pruned  time.Time // when prune last ran
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int, now func() time.Time) *limiter {
	if burst < 1 {
		burst = 1
	}
	return &limiter{rate: rate, burst: float64(burst), now: now, maxKeys: maxBuckets, buckets: map[string]*bucket{}}
}

// maxBuckets bounds a limiter's memory: far more tenants than a fleet has,
// and as many source addresses as matter at once.
const maxBuckets = 100_000

// overflowKey is the bucket that new keys share while the limiter is full.
const overflowKey = "\x00overflow"

// prune forgets the buckets that have refilled by now, at most once a
// second (it walks them all).
func (l *limiter) prune(now time.Time) {
	if now.Sub(l.pruned) < time.Second {
		return
	}
	l.pruned = now
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// allow takes a token for key, or reports how long until one is there.
func (l *limiter) allow(key string) (bool, time.Duration) { return l.allowN(key, 1) }

// allowN takes n tokens for key at once, or none and reports how long
// until n are there; n over the burst takes a full bucket.
func (l *limiter) allowN(key string, n int) (bool, time.Duration) {
	if l == nil || l.rate <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil && len(l.buckets) >= l.maxKeys {
		l.prune(now)
		if len(l.buckets) >= l.maxKeys {
			key = overflowKey
			b = l.buckets[key]
		}
	}
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(l.burst, b.tokens+el*l.rate)
		b.last = now
	}
	want := math.Min(float64(n), l.burst)
	if b.tokens >= want {
		b.tokens -= want
		return true, 0
	}
	wait := time.Duration((want - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

// gate counts what each key (a principal) has running of one costly
// kind, dry runs, and lets at most max run at once.
type gate struct {
	max     int
	mu      sync.Mutex // guards running
	running map[string]int
}

func newGate(max int) *gate { return &gate{max: max, running: map[string]int{}} }

// enter takes a place for key, or reports false when key has max running.
func (g *gate) enter(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[key] >= g.max {
		return false
	}
	g.running[key]++
	return true
}

// leave gives back a place enter took.
func (g *gate) leave(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[key]--; g.running[key] <= 0 {
		delete(g.running, key)
	}
}

// retryAfter is a wait in whole seconds, at least 1, for Retry-After.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
