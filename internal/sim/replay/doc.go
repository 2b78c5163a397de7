// Package replay replays the Philly trace (82,247 jobs, Sep–Dec 2017) on
// allot's scheduling core over a virtual clock and measures job completion
// time, queueing delay, utilisation, preemption and each virtual cluster's
// share against its guarantee.
//
// The cluster is the Helios study's (SC'21): every virtual cluster (VC) of
// philly_vc.csv owns that many nodes of 8 GPUs, ⌈nodes × ClusterScale⌉ after
// scaling, laid out in file order in one region and one InfiniBand cluster
// with leaf groups of LeafNodes nodes. Each VC is a tenant in its own
// partition guaranteed its nodes' GPUs. A job of up to 8 GPUs is one
// instance; a larger one is a gang of ⌈g/8⌉ instances of g/instances GPUs
// (8 when that does not divide: 20 GPUs hold 3 × 8, and their nodes get
// back the GPUs each allocation took). Jobs of VCs the file does not list are
// left out and counted, as are jobs larger than all the capacity they may
// use (never_fit).
//
// Every decision is the core's, and the loop is package sim/engine's: the
// trace's arrivals are its events; at each moment something changes — jobs
// arrive (all of one timestamp together), jobs complete, or the protection
// of running work that a pending job waits on ends — the engine asks the
// replay for a sched.Snapshot (Config.Select: the running jobs and the queue
// window below), calls Schedule and commits the Plan with Plan.Apply. The
// replay keeps its books (queues by VC, free GPUs per node, the policy's
// state) and its metrics as the engine's Recorder (recorder.go), and tells
// it how long a bound job runs (Config.RunFor: the spread penalty). A cycle that
// preempts is followed at once by another, so victims may take what is left;
// a job left AwaitingPreemption brings a cycle when the first protection
// ends. The Snapshot holds the running jobs and, of the queue, the window
// that can start in the cycle (see window in queue.go): exactly the core's
// decisions on the whole queue under static sharing, within 1 % under
// borrow sharing (TestWindowMatchesFullQueue), and fast: a cycle costs
// time in the jobs that can start, not in a queue of thousands. Under
// static sharing a cycle looks only at the VCs where something changed.
//
// Sharing:
//   - Static: each VC also holds an open-ended reservation of its node count
//     and its jobs name it, so the core runs them only on the VC's nodes.
//   - Borrow: no reservations. A partition may borrow idle GPUs anywhere;
//     when an owner's job fits its unused guarantee, the core evicts
//     borrowers (ReclaimGuarantee), cheapest lost work first. A victim loses
//     the work since its last checkpoint (every Checkpoint from the start of
//     its attempt; the core sees it as Status.LastCheckpoint) and requeues
//     with the rest. Work is protected for MinRunTime after it starts.
//
// Queue policies set each queued job's Spec.Priority.Value before a cycle;
// the core orders a tenant's queue by it (see Policies and policy.go). The
// core orders tenants by guarantee and fair share before that value, so in
// borrow sharing the policy orders each VC's own queue. The core places
// any queued job that fits (it never holds capacity back for the head of
// the queue), so the replay makes fifo strict by offering the core only a
// VC's jobs in submit order up to the first that cannot start (Helios's
// FIFO); fifo-backfill offers them all, so later jobs fill what the head
// leaves. By default the core preempts only for a higher class, a
// guarantee or a reservation, never for a better priority value, so srtf
// and las order the queue but do not preempt: under static sharing srtf
// equals sjf and las equals fifo. The allot policy under static sharing
// turns on the core's preemption for a better value (Config.PriorityGap,
// sched.Config.PriorityGap): its values are predicted remaining service,
// running work included, so a job predicted short evicts its VC's work
// that has outlived its prediction, once that work has run MinRunTime and
// cheapest lost work first; the window then also counts the GPUs of the
// VC's running work a queued job outranks by the gap (see window).
//
// Result.AvgJCTFirstHalf and AvgJCTSecondHalf split the average JCT between
// the first half of the replayed jobs in submit order and the rest: allot's
// constants were chosen on the first half (BENCHMARKS.md).
//
// Owner wait (borrow sharing): a job counts as an owner job when, at its
// arrival, its VC's held and queued GPUs with it stay within the guarantee
// while another VC holds more than its own; max_owner_wait_s is the longest
// time from submit to start of such a job.
//
// Spread penalty: a job placed on more nodes than ⌈g/8⌉, or on more leaf
// groups than those nodes need (⌈nodes/LeafNodes⌉), runs slower by
// SpreadPenalty of its run time per extra node and per extra leaf group
// (0.1: one extra leaf group makes it 10 % slower). Instances of 6 or 8 GPUs
// always take a node each, so in practice only leaf groups count.
//
// Times are whole seconds from the first submit; a completion is rounded up
// to the next second. Queueing delay is the time from submit to the first
// start; JCT from submit to completion.
//
// Cost (cost.go): every VC is a tenant that pays for the GPU-seconds its
// jobs' allocations hold (an uneven gang its whole nodes; a preempted
// attempt up to its eviction, lost work included) at the on-demand price
// of one GPU of SKU in Region from package price (the fleet's price
// table: the node's rate over its GPUs, as the server bills an instance),
// Result.Tenants[].USD and GPUHours. All work pays on demand: the static
// reservations stand for a VC's own nodes, not capacity bought for a term,
// so the two sharing modes are billed alike, and the trace has no
// spot-class work. The sums are whole GPU-seconds, so cost is as
// deterministic as the rest.
package replay
