package serving

import (
	"fmt"
	"math"
	"sort"
)

// GPU is the public figures of one GPU model that the model uses.
type GPU struct {
	Name string
	// TFLOPS is the dense FP16/BF16 tensor-core throughput, in 10¹² FLOP/s
	// (without sparsity).
	TFLOPS float64
	// BandwidthGBs is the memory bandwidth, in 10⁹ bytes/s.
	BandwidthGBs float64
	// MemoryGiB is the GPU memory.
	MemoryGiB float64
}

// GPUs are the GPU models of the built-in catalog, from NVIDIA's
// datasheets (docs/serving-model.md): H100 SXM5 80 GB, A100 SXM4 80 GB,
// T4.
var GPUs = map[string]GPU{
	"H100": {Name: "H100", TFLOPS: 989, BandwidthGBs: 3350, MemoryGiB: 80},
	"A100": {Name: "A100", TFLOPS: 312, BandwidthGBs: 2039, MemoryGiB: 80},
	"T4":   {Name: "T4", TFLOPS: 65, BandwidthGBs: 320, MemoryGiB: 16},
}

// Efficiencies of a serving engine (docs/serving-model.md).
const (
	// MFU is the share of the dense FLOP/s a prefill reaches.
	MFU = 0.5
	// MBU is the share of the memory bandwidth a decode step reaches.
	MBU = 0.6
	// TensorParallelEfficiency is what each GPU beyond a replica's first
	// adds, as a share of one GPU.
	TensorParallelEfficiency = 0.9
	// MemoryUtilisation is the share of GPU memory the engine may use for
	// weights and KV cache (vLLM's gpu_memory_utilization default); the
	// rest is activations and the CUDA context.
	MemoryUtilisation = 0.9
)

// Model is a served model as the world model needs it.
type Model struct {
	// ParamsB is the parameter count in billions.
	ParamsB float64 `yaml:"params_b" json:"params_b"`
	// BytesPerParam is 2 for FP16/BF16 weights, 1 for INT8/FP8.
	BytesPerParam float64 `yaml:"bytes_per_param" json:"bytes_per_param"`
	// KVKiBPerToken is the KV cache one token of context keeps, in KiB:
	// 2 (K and V) × layers × KV heads × head dimension × bytes per value.
	KVKiBPerToken float64 `yaml:"kv_kib_per_token" json:"kv_kib_per_token"`
	// MaxBatch bounds the requests a replica decodes at once.
	MaxBatch int `yaml:"max_batch" json:"max_batch"`
}

// DefaultModel is the model of an endpoint that states none: an 8-billion
// parameter model in INT8 with grouped-query attention (Llama-3-8B's
// shape: 32 layers, 8 KV heads of 128, FP16 cache: 128 KiB a token).
var DefaultModel = Model{ParamsB: 8, BytesPerParam: 1, KVKiBPerToken: 128, MaxBatch: 64}

// Limits of a Model.
const (
	MaxParamsB = 10_000
	MaxBatch   = 4096
)

// Check reports the first field of m out of range, named as in YAML.
func (m Model) Check() (field string, err error) {
	switch {
	case !(m.ParamsB > 0) || m.ParamsB > MaxParamsB:
		return "params_b", fmt.Errorf("must be a number of billions of parameters above 0 and at most %d, got %g", MaxParamsB, m.ParamsB)
	case !(m.BytesPerParam > 0) || m.BytesPerParam > 8:
		return "bytes_per_param", fmt.Errorf("must be above 0 and at most 8 (2 for FP16, 1 for INT8), got %g", m.BytesPerParam)
	case !(m.KVKiBPerToken > 0) || m.KVKiBPerToken > 1<<20:
		return "kv_kib_per_token", fmt.Errorf("must be a positive number of KiB, got %g", m.KVKiBPerToken)
	case m.MaxBatch < 1 || m.MaxBatch > MaxBatch:
		return "max_batch", fmt.Errorf("must be between 1 and %d, got %d", MaxBatch, m.MaxBatch)
	}
	return "", nil
}

// Profile is what one replica of a Model on GPUs of one model can do.
type Profile struct {
	GPU  string
	GPUs int
	// PrefillTokensPerSec is the prefill stage's rate.
	PrefillTokensPerSec float64
	// WeightsSec is a decode step's floor: reading the weights once.
	WeightsSec float64
	// KVSecPerToken is what each KV token in the batch adds to a step.
	KVSecPerToken float64
	// ComputeSecPerToken is a step's compute per request in the batch.
	ComputeSecPerToken float64
	// KVTokens is how many KV tokens fit beside the weights.
	KVTokens float64
	MaxBatch int
}

// NewProfile is a replica of m on gpus GPUs of model gpu. It fails for an
// unknown GPU model and for weights that do not fit.
func NewProfile(m Model, gpu string, gpus int) (Profile, error) {
	g, ok := GPUs[gpu]
	if !ok {
		return Profile{}, fmt.Errorf("no serving figures for GPU model %q (known: %v)", gpu, gpuNames())
	}
	if gpus < 1 {
		return Profile{}, fmt.Errorf("a replica needs at least one GPU, got %d", gpus)
	}
	if _, err := m.Check(); err != nil {
		return Profile{}, err
	}
	scale := 1 + TensorParallelEfficiency*float64(gpus-1)
	flops := g.TFLOPS * 1e12 * scale * MFU
	bw := g.BandwidthGBs * 1e9 * scale * MBU
	weights := m.ParamsB * 1e9 * m.BytesPerParam
	memory := g.MemoryGiB * (1 << 30) * float64(gpus) * MemoryUtilisation
	kvBytes := m.KVKiBPerToken * 1024
	if weights >= memory {
		return Profile{}, fmt.Errorf("%g B parameters at %g bytes need %.0f GiB for the weights; %d %s GPUs have %.0f GiB usable",
			m.ParamsB, m.BytesPerParam, weights/(1<<30), gpus, gpu, memory/(1<<30))
	}
	flopPerToken := 2 * m.ParamsB * 1e9
	return Profile{GPU: gpu, GPUs: gpus,
		PrefillTokensPerSec: flops / flopPerToken,
		WeightsSec:          weights / bw,
		KVSecPerToken:       kvBytes / bw,
		ComputeSecPerToken:  flopPerToken / flops,
		KVTokens:            math.Floor((memory - weights) / kvBytes),
		MaxBatch:            m.MaxBatch}, nil
}

// Step is the time of one decode step of batch requests holding kvTokens
// of KV cache, without prefill's interference.
func (p Profile) Step(batch int, kvTokens float64) float64 {
	return max(p.WeightsSec+kvTokens*p.KVSecPerToken, float64(batch)*p.ComputeSecPerToken)
}

// Capacity is the requests/s a replica sustains at saturation for
// requests of ctx context and gen generated tokens on average: a full
// batch (as many as memory holds, at most MaxBatch), prefill first, decode
// in the time it leaves. It is a planning figure (the router's weights,
// docs), not a latency.
func (p Profile) Capacity(ctx, gen float64) float64 {
	if ctx+gen <= 0 {
		return math.Inf(1)
	}
	b := min(float64(p.MaxBatch), math.Max(1, math.Floor(p.KVTokens/(ctx+gen))))
	step := p.Step(int(b), b*(ctx+gen))
	// Each request needs ctx/prefill seconds of prefill and gen steps shared
	// by b requests: x requests/s keep the GPU busy x·(ctx/P + gen·step/b).
	return 1 / (ctx/p.PrefillTokensPerSec + gen*step/b)
}

// ServiceTime is how long one request of ctx context and gen generated
// tokens takes on the replica in a batch of batch requests like it: its
// prefill (ctx ÷ PrefillTokensPerSec) and gen decode steps of that batch
// (Step, the batch holding batch × (ctx + gen) KV tokens, at most what
// memory holds). It leaves out the queueing for the prefill stage and for
// room in the batch, which the caller's slots model. allot demo serve
// --gpu turns a traced request's token counts into its service time with
// it, so that a load replayed through a live endpoint costs what it costs
// in the simulator.
func (p Profile) ServiceTime(ctx, gen float64, batch int) float64 {
	batch = max(1, min(batch, p.MaxBatch))
	kv := min(float64(batch)*(ctx+gen), p.KVTokens)
	return ctx/p.PrefillTokensPerSec + gen*p.Step(batch, kv)
}

func gpuNames() []string {
	var out []string
	for n := range GPUs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
