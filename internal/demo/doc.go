// Package demo holds the programs behind allot demo: a stand-in for an
// inference server (Server: each request takes a fixed service time on one
// of a fixed number of slots, queueing beyond them as on a GPU, and the
// server measures its own load, p95 latency and utilisation and reports
// them), an open-loop load generator (Load: Poisson arrivals at a rate,
// latency percentiles), and a stand-in for a training job (Train: steps,
// checkpoints by the agent's CHECKPOINT marker protocol, resume, a last
// checkpoint when stopped; a gang's ranks in lockstep; an elastic run whose
// rank 0 saves one checkpoint for any world size and whose steps go faster
// with more instances, Throughput).
//
// They need no GPU and nothing of a host but what the agent gives every job
// (internal/agent/launch.Environ): the command line reads ALLOT_JOB_ID,
// ALLOT_ATTEMPT, ALLOT_CHECKPOINT_DIR, ALLOT_JOB_CHECKPOINT_DIR,
// ALLOT_RESUME_FROM, ALLOT_RANK, ALLOT_WORLD_SIZE, ALLOT_MASTER_ADDR/PORT,
// CUDA_VISIBLE_DEVICES and ALLOT_GPU_MILLI and passes them in; this package
// reads no environment itself, so tests drive it directly.
package demo
