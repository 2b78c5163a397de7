package latency

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Every latency lands in the bucket whose bounds hold it.
func TestBucketBounds(t *testing.T) {
	for _, d := range []time.Duration{0, 1, Min, Min + 1, time.Millisecond, 20 * time.Millisecond, 150 * time.Millisecond, time.Second, time.Hour} {
		i := bucket(d)
		if d > Upper(i) {
			t.Errorf("%s in bucket %d, whose upper bound is %s", d, i, Upper(i))
		}
		if i > 0 && d <= Upper(i-1) {
			t.Errorf("%s in bucket %d, but bucket %d holds up to %s", d, i, i-1, Upper(i-1))
		}
	}
}

// A quantile is never below the true one and at most Growth above it.
func TestQuantileAgainstSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var all []time.Duration
	for range 10000 {
		d := time.Duration(rng.ExpFloat64()*float64(20*time.Millisecond)) + 5*time.Millisecond
		h.Add(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.95, 0.99, 1} {
		want := all[int(q*float64(len(all)))-1]
		got := h.Quantile(q)
		if got < want || float64(got) > float64(want)*Growth {
			t.Errorf("q %.2f: %s, true %s", q, got, want)
		}
	}
	var empty Histogram
	if empty.Quantile(0.95) != 0 {
		t.Error("an empty histogram's p95 is not 0")
	}
}

// Merging is adding; a histogram survives the wire.
func TestMergeAndSparse(t *testing.T) {
	var a, b Histogram
	a.Add(time.Millisecond)
	b.Add(time.Second)
	b.Add(time.Second)
	a.Merge(&b)
	if a.Count() != 3 || a.Quantile(0.5) < time.Second {
		t.Fatalf("merged: %d latencies, median %s", a.Count(), a.Quantile(0.5))
	}
	back, err := FromSparse("latency", a.Sparse())
	if err != nil || back != a {
		t.Fatalf("FromSparse(Sparse) = %v, %v", back.Sparse(), err)
	}
	for _, bad := range []Sparse{{{Buckets, 1}}, {{3, 1}, {3, 1}}, {{4, 1}, {2, 1}}, {{1, 0}}, {{1, MaxCount + 1}}} {
		if _, err := FromSparse("latency", bad); err == nil {
			t.Errorf("FromSparse(%v) accepted", bad)
		}
	}
}

// FromSparse takes whatever a gateway posts: it answers an error or a
// histogram whose count is the sum of the pairs.
func FuzzFromSparse(f *testing.F) {
	f.Add(uint64(3), uint64(5), uint64(7), uint64(1))
	f.Add(uint64(300), uint64(0), uint64(1), uint64(1<<41))
	f.Fuzz(func(t *testing.T, i1, c1, i2, c2 uint64) {
		h, err := FromSparse("latency", Sparse{{i1, c1}, {i2, c2}})
		if err != nil {
			return
		}
		if h.Count() != c1+c2 || h.Quantile(1) == 0 {
			t.Fatalf("count %d of %d+%d", h.Count(), c1, c2)
		}
	})
}
