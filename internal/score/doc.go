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
// allot is FGD with a fragmentation measure that looks past the next pod.
// FGD asks, for each target shape t, which free GPU milli the *next* pod of
// shape t could not use. Milli that fits that one pod counts as usable even
// when further pods of the same shape could not use it: the 60 milli an idle
// GPU keeps after two 470-milli shares, the odd idle GPU left over after a
// 2- or 4-GPU pod, and above all GPUs whose node has too little free CPU
// for more than a few pods of t (a G2 node with 8 idle GPUs and 40 cores
// free hosts three 11-core one-GPU pods, not eight). allot counts that
// milli too, at half weight (allotRepeat = 0.5): f(n, t) = FGD's f plus
// ½ · (free milli − milli that copies of t could fill side by side, limited
// by GPU packing and by CPU). Weight 0 is FGD's one-pod view and 1 assumes
// every pod still to come has shape t; the pods to come are a mix, so the
// midpoint was taken once, not fitted: only 0.5 and 1 were measured (1 lost
// to FGD on gpushare40 and multigpu20 by 0.1-0.2 points). Memory is not
// counted (the target shapes, as FGD builds them, have none).
//
// allot is given the same input as FGD: the target workload built from the
// whole pod list (TargetWorkload, 95 % coverage), not only the pods arrived
// so far. It keeps FGD's integer score int(100·sigmoid(ΔF/1000)) and its
// ties by node rank; a fraction goes to the GPU with the largest exact ΔF,
// then to the fullest GPU that fits.
//
// Medians of allocated GPU % at arrived 100 %, seeds 42-51, inflate 1.3
// (`go test -run 'TestReproducesPaper|TestAllotBeatsFGD' ./internal/sim/frag/`):
//
//	workload     allot    fgd here  fgd published
//	default      95.515   95.234    95.23
//	cpu050       95.495   95.061    94.995
//	gpushare40   94.009   94.016    93.955
//	multigpu20   95.665   95.549    95.53
//	gpushare20   96.723   96.437    -
//	gpuspec05    95.490   95.051    -
//
// On gpushare40 allot beats the published FGD median but not this
// repository's FGD run (by 0.007, within seed noise).
//
// Measured alternatives, dropped: ranking nodes by the exact ΔF (92.7 % on
// default: the quantisation acts as useful slack), the exact ΔF as
// secondary key (94.3 %), target shares weighted by GPU demand instead of
// pod count (94.1 %), and, as tie-breaks under FGD's measure, the share of
// the node's GPU capacity in use after placement (default 95.23, cpu050
// 94.90, gpushare20 96.19), the share of non-idle GPUs (noise-level, ±0.1),
// CPU fullness (87.8 on default). The full measure (weight 1) scored
// default 95.36, cpu050 95.27, gpushare40 93.82, multigpu20 95.37,
// gpushare20 96.50, gpuspec05 95.40.
//
// Every scorer keeps caches or random state: one scorer serves one
// goroutine.
package score
