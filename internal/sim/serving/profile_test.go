package serving

import (
	"math"
	"strings"
	"testing"
)

func TestProfileFollowsTheRoofline(t *testing.T) {
	m := Model{ParamsB: 14, BytesPerParam: 2, KVKiBPerToken: 160, MaxBatch: 32}
	p, err := NewProfile(m, "H100", 1)
	if err != nil {
		t.Fatal(err)
	}
	// 989 TFLOPS × 0.5 / (2 × 14e9 FLOP a token).
	if want := 989e12 * MFU / 28e9; math.Abs(p.PrefillTokensPerSec-want) > 1 {
		t.Errorf("prefill %g tokens/s, want %g", p.PrefillTokensPerSec, want)
	}
	// 28 GB of weights at 3.35 TB/s × 0.6.
	if want := 28e9 / (3350e9 * MBU); math.Abs(p.WeightsSec-want) > 1e-9 {
		t.Errorf("weights step %g s, want %g", p.WeightsSec, want)
	}
	a, err := NewProfile(m, "A100", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !(a.PrefillTokensPerSec < p.PrefillTokensPerSec && a.WeightsSec > p.WeightsSec) {
		t.Errorf("an A100 should be slower than an H100: %+v vs %+v", a, p)
	}
	two, err := NewProfile(m, "H100", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r := two.PrefillTokensPerSec / p.PrefillTokensPerSec; math.Abs(r-(1+TensorParallelEfficiency)) > 1e-9 {
		t.Errorf("two GPUs prefill %g× one, want %g×", r, 1+TensorParallelEfficiency)
	}
	if c := p.Capacity(1500, 20); !(c > 1 && c < 100) {
		t.Errorf("capacity %g requests/s is not plausible", c)
	}
}

func TestProfileRefusesWhatDoesNotFit(t *testing.T) {
	for _, tc := range []struct {
		m    Model
		gpu  string
		gpus int
		want string
	}{
		{Model{ParamsB: 70, BytesPerParam: 2, KVKiBPerToken: 320, MaxBatch: 8}, "H100", 1, "need 130 GiB"},
		{Model{ParamsB: 8, BytesPerParam: 2, KVKiBPerToken: 128, MaxBatch: 8}, "T4", 1, "14 GiB usable"},
		{DefaultModel, "B200", 1, `no serving figures for GPU model "B200"`},
		{Model{ParamsB: -1, BytesPerParam: 2, KVKiBPerToken: 1, MaxBatch: 1}, "H100", 1, "params_b"},
	} {
		_, err := NewProfile(tc.m, tc.gpu, tc.gpus)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			if f, _ := tc.m.Check(); f != "" && strings.Contains(tc.want, f) {
				continue
			}
			t.Errorf("%+v on %d %s: err %v, want it to say %q", tc.m, tc.gpus, tc.gpu, err, tc.want)
		}
	}
	if _, err := NewProfile(Model{ParamsB: 70, BytesPerParam: 1, KVKiBPerToken: 320, MaxBatch: 8}, "H100", 2); err != nil {
		t.Errorf("70B INT8 on two H100 should fit: %v", err)
	}
}

// A request's service time is its prefill plus its decode steps: longer
// for more tokens and a fuller batch, never below the prefill alone.
func TestServiceTime(t *testing.T) {
	p, err := NewProfile(DefaultModel, "H100", 1)
	if err != nil {
		t.Fatal(err)
	}
	base := p.ServiceTime(2000, 20, 8)
	if prefill := 2000 / p.PrefillTokensPerSec; base <= prefill {
		t.Errorf("service time %.4f s, not above the prefill %.4f s", base, prefill)
	}
	if p.ServiceTime(2000, 200, 8) <= base || p.ServiceTime(2000, 20, 64) < base || p.ServiceTime(4000, 20, 8) <= base {
		t.Errorf("service time does not grow with tokens or the batch")
	}
	if got := p.ServiceTime(2000, 20, 0); got != p.ServiceTime(2000, 20, 1) {
		t.Errorf("a batch of 0 is not taken as 1: %g", got)
	}
}
