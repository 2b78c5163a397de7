// Package serving is the simulator's model of the world an inference
// endpoint serves: requests with their token counts arrive at a replica,
// wait for room in its batch, are prefilled, and decode one token per step
// of a continuously batched model. It is the world's model, kept apart
// from the autoscaler's (package autoscale plans with an M/M/1 queue per
// replica and a requests/s profile); the simulator measures SLO attainment
// with this one and reports how far the autoscaler's predictions were from
// it.
//
// A replica (Replica) of a Model on GPUs of one GPU model serves requests
// in arrival order:
//
//  1. admission: a request waits until the batch has fewer than
//     Model.MaxBatch requests and its KV cache (context + generated tokens
//     × Model.KVKiBPerToken) fits in the memory the weights leave free;
//     one that would wait longer than Timeout is dropped (the client gives
//     up) and counts as a miss;
//  2. prefill: the prompt's context tokens run through one prefill stage
//     per replica, first come first served, at Profile.PrefillTokensPerSec
//     = MFU × dense FP16 FLOP/s ÷ (2 × parameters). Time to first token
//     (TTFT) is the arrival to the end of its prefill;
//  3. decode: each generated token takes one step of the batch, a step
//     being the longer of reading the weights and the batch's KV cache
//     from memory (÷ MBU × bandwidth) and the batch's compute (2 ×
//     parameters FLOP per token ÷ MFU × FLOP/s) — the roofline of a
//     memory-bound decoder. The batch size and KV tokens are those at the
//     request's admission. Prefill goes first (vLLM's default schedule), so
//     decoding gets only the share of time the prefill stage leaves: the
//     step is divided by 1 − ρ, ρ the prefill stage's busy share over the
//     last PrefillWindow seconds (at most MaxPrefillShare).
//
// A request's latency is the arrival to its last token. A replica of g
// GPUs (tensor parallel) has g times the FLOP/s, bandwidth and memory of
// one, times TensorParallelEfficiency for every GPU beyond the first.
//
// The constants and their public sources are in docs/serving-model.md: per
// GPU model its dense FP16/BF16 tensor FLOP/s, memory bandwidth and memory
// (NVIDIA's datasheets), and the efficiencies MFU and MBU. What the model
// leaves out: speculative decoding, prefix caching, chunked prefill's
// overlap of the two stages, KV-cache preemption and swapping (a request
// waits for memory instead), network time and tokenisation.
//
// Arrivals replays a request trace's pattern (package trace/azurellm):
// inter-arrival gaps normalised to a mean of one, scaled to the rate the
// caller asks for minute by minute, read in blocks of BlockLen
// consecutive requests from random offsets (a block bootstrap), so that
// bursts and token counts stay as the trace has them. A Router sends each
// request to the replica with the fewest in flight, as allot's gateway
// does.
//
// The package is pure: no I/O, no clock, no goroutines; randomness comes
// from the *rand.Rand its caller passes. Times are seconds (float64) on
// the caller's clock.
package serving
