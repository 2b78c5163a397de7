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
// allot is FGD with a fragmentation measure that looks past the next pod
// and at the node's CPU, and that takes the weights it needs from the run
// and the target workload, not from constants. F gains three terms.
//
// Repeats. FGD asks, for each target shape t, which free GPU milli the
// *next* pod of shape t could not use. Milli that fits that one pod counts
// as usable even when further pods of the same shape could not use it: the
// 60 milli an idle GPU keeps after two 470-milli shares, the odd idle GPU
// left over after a 2- or 4-GPU pod, and GPUs whose node has too little
// free CPU for more than a few pods of t (a G2 node with 8 idle GPUs and 40
// cores free hosts three 11-core one-GPU pods, not eight). allot adds
// ρ · p_t · (free milli − milli that copies of t could fill side by side,
// limited by GPU packing and by CPU). ρ is how much repeats matter: the
// share of the pods placed so far on a node that holds pods whose shape is
// the node's last pod's shape, counted online by the scorer as it is asked
// for GPUs (ChooseGPUs; sched.Chooser calls it once, for the node chosen).
// Before any such pod ρ is Σ p_t², the chance that two pods of the target
// workload share a shape. ρ moves in steps of 1/20 (repeatStep), and each
// step drops the caches so that every node is measured with the same ρ: a
// bound on cost, not a fitted value. On the default workload, seed 42, a
// design run (with the scarcity weights since dropped, no leftover term)
// had ρ at 0.129 after 2,000 such pods and 0.121 after 6,000.
//
// Leftovers. A partly used GPU can only be filled by one-GPU fractions.
// expectedLeft tabulates, for f = 0..1000 free milli, the milli left once
// fractions drawn from the target workload (in proportion to their shares,
// among those that still fit) have filled it: a parameter-free recursion.
// allot adds Σ over partly used GPUs of left[f], weighted by the fractions'
// share of the target's GPU pods.
//
// CPU. A node's free GPU milli is only usable while its free CPU can feed
// the GPU pods that would use it. κ is the target's GPU pods' mean CPU per
// GPU milli (Σ p_t·cpu_t / Σ p_t·gpus_t·milli_t, GPU shapes only); allot
// adds max(0, free milli − free CPU / κ), weighted by the GPU pods' share
// of the target workload (cpuStranded). The term steers GPU pods: it is
// left out of a CPU-only pod's ΔF (the CPU-only pod is measured by FGD's
// terms and the two above), since charging CPU-only pods for it lost on
// the design variant with CPU-only pods (cpu 125 %: -0.033 against +0.696
// uncharged; Measured, below). It was added
// for the multi-GPU variants, where allot steered CPU-heavy pods onto the
// 128-core G3 nodes that the 8-GPU 120-core pods need; there it lifted the
// lead over FGD from +0.087 to +0.510 (multigpu 25 %) and from +0.061 to
// +0.371 (multigpu 40 %) (not traced pod by pod).
//
// allot is given the same input as FGD: the target workload built from the
// whole pod list (TargetWorkload, 95 % coverage), not only the pods arrived
// so far. It keeps FGD's integer score int(100·sigmoid(ΔF/1000)) and its
// ties by node rank; a fraction goes to the GPU with the largest exact ΔF,
// then to the fullest GPU that fits. It is deterministic: the same calls in
// the same order give the same scores.
//
// # Measured
//
// All figures: medians of allocated GPU % at arrived 100 %, seeds 42-51,
// inflate 1.3, and the lead over this repository's FGD, on variants made
// by openb.Variant from the default pod list (internal/sim/frag/
// heldout_test.go lists them). Design was done in two rounds, each on its
// design set only; the held-out sets were run on finished scorers.
//
// Round 2 (the kept scorer). Design set: default and gpushare 30 % s11,
// gpushare 70 % s12, gpuspec 15 % s13, multigpu 25 % s14, cpu 125 % s15,
// multigpu 40 % s16, later also cpu 175 % s17 and gpushare 85 % s18. FGD
// there: 95.234, 94.865, 90.118, 93.610, 96.029, 71.552, 96.792, 60.813,
// 88.323. mean6 is the mean lead over the first six variants:
//
//	candidate                       default  gs30   gs70   spec15 mg25   cpu125 mg40   mean6  cpu175 gs85   mean8
//	round 1's kept scorer           95.733  +0.610 +0.352 +1.650 +0.087 +0.213 +0.061 +0.496
//	+ CPU term, weight GPU share,
//	  charged to CPU-only pods too  95.868  +0.819 +0.629 +2.137 +0.510 -0.033 +0.371 +0.739
//	  the same, weight 1            95.894  +0.853 +0.607 +2.126 +0.506 -0.221 +0.372 +0.707
//	  the same, κ counting the
//	  CPU-only pods' CPU too        95.759  +0.622 +0.490 +2.023 -3.342 +0.046 -8.929 -1.515
//	+ CPU term, not charged to
//	  CPU-only pods                 95.882  +0.831 +0.625 +2.110 +0.510 +0.696 +0.371 +0.857  +0.606 +0.297 +0.756
//	  the same, ρ = 0 (no repeats)  95.880  +0.839 +0.576 +2.103 +0.501 +0.596 +0.398 +0.835
//	  the same, no leftover term    95.846  +0.758 +0.445 +2.127 +0.424 +0.604 +0.306 +0.777
//	  the same, κ and weight per
//	  node (targets its model fits) 95.882  +0.831 +0.625 +2.128 +0.510 +0.696 +0.371 +0.860
//	  the same, leftovers weighted
//	  by fractions / GPU pods       95.899  +0.837 +0.637 +2.139 +0.496 +0.966 +0.338 +0.902  +0.535 +0.352 +0.788  (kept)
//	  the same, leftovers counted
//	  on idle GPUs too              95.892  +0.838 +0.618 +2.109 +0.493 +0.263 +0.370 +0.782  +0.183 +0.346 +0.652
//
// Kept: the last but one row. The repeat term adds little once the CPU
// term is in (+0.02 on mean6, within seed noise; without it gs30 and mg40
// gain up to 0.03, gs70 and cpu125 lose about 0.05 and 0.10); it is kept
// as round 1 chose it, not re-tuned. Not built: the look-ahead
// (placing sampled future pods on each candidate node); the CPU term took
// the time. The fresh held-out run is in BENCHMARKS.md.
//
// Round 1 (the morning's scorer, without the CPU term, leftovers weighted
// by the fractions' share of all pods). Design set: default and the first
// four variants above; lead on gs30 gs70 spec15 mg25, then their mean:
//
//	candidate                                    default  gs30   gs70   spec15 mg25   mean
//	FGD                                          95.234   0      0      0      0      0
//	ρ = 0.5 fixed (the previous allot)           95.515  +0.463 -0.006 +1.578 -0.294 +0.436
//	ρ = 0.5, leftovers at weight 1               95.416  +0.401 +0.365 +1.516 -0.320 +0.490
//	ρ = 0, leftovers at weight 1                 95.166  +0.019 +0.085 +0.022 -0.060 +0.017
//	ρ = 0.5, CPU-limited repeats only (no
//	  packing remainders), leftovers weight 1    95.418  +0.343 +0.460 +1.558 -0.308 +0.513
//	ρ = 0.5, scarcity weights (below)            95.542  +0.468 +0.021 +1.443 -0.171 +0.440
//	ρ = 0.25 fixed, scarcity weights             95.554  +0.616 +0.102 +1.493 -0.100 +0.528
//	ρ online                                     95.648  +0.578 +0.076 +1.713 +0.091 +0.614
//	ρ online, scarcity weights                   95.643  +0.588 +0.060 +1.519 +0.137 +0.576
//	ρ online, leftovers at weight 1              95.567  +0.370 +0.455 +1.681 -0.143 +0.591
//	ρ online, leftovers at fractions' share      95.733  +0.610 +0.351 +1.650 +0.087 +0.675  (kept)
//	  the same, scarcity weights                 95.723  +0.599 +0.532 +1.554 +0.038 +0.681
//	  the same, ρ per target shape               95.692  +0.567 +0.330 +1.665 +0.081 +0.661
//
// Dropped in round 1: scarcity weights (each target's share divided by the
// share of the cluster's GPUs on nodes that could host it when empty,
// renormalised; needs the node list, gains nothing on the mean); a ρ per
// target shape (3 m 40 s of CPU for the five workloads against about 22 s,
// because every step of any shape's ρ clears the caches; no better); the
// target workload at 100 % coverage with scarcity weights (default 95.411,
// mg25 -0.179) and, with round 1's kept scorer, the target at 100 %
// coverage (default 95.502, +0.406 +0.320 +1.726 +0.176, mean +0.657).
// Earlier, for the fixed-ρ allot: ranking nodes by the exact ΔF (92.7 % on
// default: the quantisation acts as useful slack), the exact ΔF as
// secondary key (94.3 %), target shares weighted by GPU demand instead of
// pod count (94.1 %), and, as tie-breaks under FGD's measure, the share of
// the node's GPU capacity in use after placement (default 95.23, cpu050
// 94.90, gpushare20 96.19), the share of non-idle GPUs (noise-level,
// ±0.1), CPU fullness (87.8 on default); ρ = 1 fixed scored default 95.36,
// cpu050 95.27, gpushare40 93.82, multigpu20 95.37, gpushare20 96.50,
// gpuspec05 95.40.
//
// What limits it on default (6,212 GPUs): seed 42, stopped at the first
// pod that brings arrived to 100 %, round 2's scorer before the last
// leftover change left 255,210 milli free: 244,110 on GPUs with under 200
// free (190,190 of it on 1,001 GPUs with exactly 190 free, the sliver an
// 810-milli pod leaves and only the few pods of 160 milli or less can use),
// 11,100 on other partly used GPUs, no idle GPU; FGD left 245,850, 22,120
// and 19,000 idle. 96.2 % would leave about 236,000 free, so the other
// fractions' packing remainders (about 54,000) would have to shrink by a
// third; no candidate came near (best 95.899).
//
// Every scorer keeps caches or random state: one scorer serves one
// goroutine.
package score
