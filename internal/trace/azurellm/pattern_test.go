package azurellm

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestNewPattern(t *testing.T) {
	reqs := []Request{
		{At: 0, Context: 5, Generated: 1},
		{At: 1 * time.Second, Context: 6, Generated: 2},
		{At: 1 * time.Second, Context: 7, Generated: 3},
		{At: 4 * time.Second, Context: 8, Generated: 4},
	}
	p, err := NewPattern(reqs, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Mean gap 4s/3: gaps 1s, 0s, 3s become 0.75, 0, 2.25; the first is 1.
	if want := []float64{1, 0.75, 0, 2.25}; !slices.Equal(p.Gaps, want) {
		t.Errorf("gaps %v, want %v", p.Gaps, want)
	}
	if !slices.Equal(p.Context, []int{5, 6, 7, 8}) || !slices.Equal(p.Generated, []int{1, 2, 3, 4}) {
		t.Errorf("tokens %v %v", p.Context, p.Generated)
	}
	// Population variance of 1, .75, 0, 2.25 around 1: (0 + .0625 + 1 + 1.5625)/4.
	if got, want := p.CV(), math.Sqrt(2.625/4); math.Abs(got-want) > 1e-12 {
		t.Errorf("CV %g, want %g", got, want)
	}
	steady, err := NewPattern([]Request{{At: 0, Context: 1}, {At: time.Second, Context: 1}, {At: 2 * time.Second, Context: 1}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := steady.CV(); got != 0 {
		t.Errorf("steady CV %g, want 0", got)
	}
	if got := (&Pattern{}).CV(); got != 0 {
		t.Errorf("empty CV %g, want 0", got)
	}

	for _, tt := range []struct {
		name  string
		reqs  []Request
		short bool
	}{
		{"none", nil, true},
		{"one", []Request{{Context: 1}}, true},
		{"no time", []Request{{At: time.Second, Context: 1}, {At: time.Second, Context: 1}}, true},
		{"out of order", []Request{{At: 0, Context: 1}, {At: 3 * time.Second, Context: 1}, {At: time.Second, Context: 1}, {At: 4 * time.Second, Context: 1}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPattern(tt.reqs, 0)
			if err == nil || p != nil {
				t.Fatalf("NewPattern = %v, %v; want an error", p, err)
			}
			if errors.Is(err, ErrShort) != tt.short {
				t.Fatalf("error %v: wraps ErrShort = %v, want %v", err, !tt.short, tt.short)
			}
		})
	}
}

// TestShippedPatterns checks that the shipped traces' gaps average 1 and
// that both services' arrivals are bursty (CV above 1, Poisson's value).
func TestShippedPatterns(t *testing.T) {
	for _, file := range []string{"AzureLLMInferenceTrace_code.csv", "AzureLLMInferenceTrace_conv.csv"} {
		t.Run(file, func(t *testing.T) {
			reqs, err := ReadRequestsFile("../../../data/traces/azure-llm/" + file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPattern(reqs, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := NewPattern(reqs, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: CV of gaps %.3f over the whole trace, %.3f within minutes", file, whole.CV(), p.CV())
			if len(p.Gaps) != len(reqs) {
				t.Fatalf("%d gaps for %d requests", len(p.Gaps), len(reqs))
			}
			var sum float64
			for _, g := range p.Gaps {
				sum += g
			}
			if mean := sum / float64(len(p.Gaps)); math.Abs(mean-1) > 1e-9 {
				t.Errorf("gaps average %.12f, want 1", mean)
			}
			cv := p.CV()
			t.Logf("%s: %d requests, CV of gaps %.3f", file, len(reqs), cv)
			if cv <= 1 {
				t.Errorf("CV %.3f, want above 1 (bursty)", cv)
			}
		})
	}
}

// StepsOf puts each request's gaps so far beside its token counts, summed
// as a reader that walks the gaps would, and refuses counts that do not
// match the gaps or fit in 32 bits.
func TestStepsOf(t *testing.T) {
	p := &Pattern{Gaps: []float64{1, 0.1, 0.2, 2.7}, Context: []int{10, 20, 30, 40}, Generated: []int{1, 2, 3, 4}}
	steps, err := StepsOf(p)
	if err != nil {
		t.Fatal(err)
	}
	end := 0.0
	for i, s := range steps {
		end += p.Gaps[i]
		if s.End != end || int(s.Context) != p.Context[i] || int(s.Generated) != p.Generated[i] {
			t.Fatalf("step %d is %+v, want end %v, %d and %d tokens", i, s, end, p.Context[i], p.Generated[i])
		}
	}
	for name, bad := range map[string]*Pattern{
		"a count short":   {Gaps: []float64{1, 1}, Context: []int{1}, Generated: []int{1, 1}},
		"too many tokens": {Gaps: []float64{1}, Context: []int{math.MaxInt32 + 1}, Generated: []int{1}},
		"negative tokens": {Gaps: []float64{1}, Context: []int{1}, Generated: []int{-1}},
	} {
		if _, err := StepsOf(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
