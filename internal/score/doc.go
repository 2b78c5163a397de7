// Package score holds allot's placement policies: one sched.Scorer per
// policy, built by name with New. Six reproduce the policies of the FGD
// paper (ATC'23) as its simulator runs them, integer scores and all, so
// that ties fall the same way: random (seeded), dotprod, clustering,
// packing, bestfit and fgd. The seventh, allot, is allot's default.
//
// # Fragmentation
//
// fgd and allot measure a node's GPU fragmentation against a target
// workload (TargetWorkload: the most frequent request shapes covering 95 %
// of a pod list, renormalised). F(n) = Σ p_t · f(n, t), where f counts all
// idle GPU milli of n when shape t asks for no GPU, may not use n's GPU
// model, or does not fit (GPUs or CPU), and otherwise only the free milli of
// GPUs too small for t. fgd scores int(100·sigmoid((F(n) − F(n′))/1000)),
// n′ being n after the placement. F is cached per node and generation
// (sched.NodeInfo.Gen) and the delta per node, generation and request
// shape, so only the node bound last is recomputed for the next request.
//
// # allot
//
// allot keeps FGD's score and its target workload (built from the same
// input: the whole pod list, as the paper's FGD is given) and changes what
// decides among equals. FGD's integer score is coarse: a delta of less than
// about 40 milli-GPU does not change it, so most decisions end in a tie that
// the paper settles by a random node rank. allot settles it by how full the
// node's GPUs will be after the placement (best fit, worth less than one
// score point, so it never overrides a fragmentation difference), which
// keeps idle GPUs together for the whole-GPU and multi-GPU pods still to
// come. Within a node, a fraction goes to the GPU with the largest exact
// (unquantised) ΔF, then to the fullest GPU that fits.
//
// Measured alternatives that did worse on the default workload and were
// dropped: ranking nodes by the exact ΔF (92.7 % allocated at arrived 100 %
// against FGD's 95.2 %: the quantisation acts as useful slack), the exact
// ΔF as secondary key (94.3 %), and target shares weighted by GPU demand
// instead of pod count (94.1 %).
//
// Every scorer keeps caches or random state: one scorer serves one
// goroutine.
package score
