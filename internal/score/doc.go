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
// and the target workload, not from constants. F gains three terms, a
// look-ahead replaces it on nodes whose CPU is short, and ΔF gains a
// charge for taking a GPU model's capacity that the pods limited to that
// model will need, and one for breaking a node a rare shape needs. Before
// any of that, a fraction keeps to a packing plan (round 5, below).
//
// Plan (round 5). Once the cluster is full, what a policy allocates is
// the capacity less the free milli stranded on partly used GPUs, and that
// is set by how the fractions were packed: which sizes share a GPU. The
// best packing of the target's fractions is a cutting-stock LP (package
// cutstock); its dual prices each size s at u_s, the share of a GPU a
// fraction of s is worth (default: 810 → 1, 650/590/550 → ⅔, 470/460 →
// ½, 370/320 → ⅓, 230 → ¼, 220 → 1/12, 160 → 0). worth[f] is the most a
// GPU with f free milli can still take at those prices (a knapsack over
// the target's sizes), and a fraction of s put where f is free loses
// loss(s, f) = 1000·(worth[f] − worth[f−s] − u_s) ≥ 0 milli of planned
// capacity: 0 where the plan puts s (beside fractions it belongs with, or
// on an idle GPU when some pattern holds s), more where s takes room the
// plan keeps for larger fractions (a 320 beside a 470 takes a second
// 470's room: ½ − ⅓ of a GPU, 167 milli). A size the target lacks is
// priced at worth[s], what the plan would put in its room. allot places
// a fraction where it loses least, before any other consideration: the
// node's score is lowered by 101 × the loss, and on a node the GPU with
// the least loss is taken, then the best ΔF. Among nodes of equal loss
// FGD's measure and its charges decide as before; whole-GPU and CPU-only
// pods are untouched. It is an online primal-dual rule for bin packing
// with a known item distribution; sum-of-squares, the classic
// distribution-free rule, did far worse here (Measured, round 5). The plan
// has no parameter: the LP is solved once, on the target workload FGD is
// given (shares per million pods), and ties in the LP fall as gonum's
// simplex leaves them (the same every run).
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
// uncharged; Measured, below). It was added for the multi-GPU variants,
// where it lifted the lead over FGD at arrived 100 % from +0.087 to +0.510
// (multigpu 25 %) and from +0.061 to +0.371 (multigpu 40 %). Round 2
// believed it kept CPU-heavy pods off the 128-core G3 nodes that the 8-GPU
// 120-core pods need; round 3 traced it and found the opposite (with the
// repeat term it still sends them there; see Hosts, below).
//
// GPU models. FGD's measure pulls pods that may use any GPU model onto the
// models few targets accept: a target that may not use a node's model
// counts all of the node's free milli as fragment, so filling a node of a
// small model lowers F most. On the gpuspec variants (pods limited to one
// model, drawn in proportion to each model's GPUs) the pods that could go
// anywhere filled T4, P100, V100 and G3 first, and the pods limited to them
// then failed while G2 kept idle GPUs: at gpuspec 45 %, arrived 100 %, the
// mean over seeds 42-51 had 571,000 milli of failed pods under allot
// (554,000 under FGD), all of them limited to a model other than G2, and
// 293 idle G2 GPUs left; scarcity weights (round 1, below) raised the
// weight of the limited targets and so the pull too. allot charges a GPU
// pod that may use more than one model τ_m · its milli in ΔF on a node of
// model m, τ_m = min(1, need_m · free / free_m): need_m is the share of
// the target's GPU milli that only m can take (a target limited to k
// models counts 1/k on each), free the free milli over all models and
// free_m m's, so need_m · free is what m's own pods would ask of the free
// capacity if the target workload filled it, and τ_m the chance that milli
// of m taken by another pod is milli one of them will miss (capped at 1: a
// probability). A pod limited to one model is not charged: the capacity is
// kept for it, and all its candidate nodes share the model. free_m sums the
// nodes the scorer has measured, each as of its generation when last
// scored; the pod ChooseGPUs places is counted at once (so a node no later
// pod fits is not left at its free capacity before its last pod), and the
// node is read again when next scored, so pods that leave and placements
// tried and undone are caught up. With no target limited to a model there
// is no charge and allot is as before (reserve.go).
//
// Hosts. Some pods fit one class of node only (a class: GPUs, CPU and
// memory capacity): in the default trace the 8-GPU pods of 120 cores fit
// only the 39 128-core G3 nodes. They are rare, so the 95 % target leaves
// them out, and a G3 node looks like a G2 node with spare CPU: the repeat
// and CPU terms send CPU-heavy one-GPU pods there, and by arrived 90 % no
// G3 node is left whole for the 8-GPU 120-core pods (Measured, round 3,
// hosts). allot learns such shapes from the run: a placed GPU pod without
// a model limit whose shape fits the capacity of one class only, among the
// classes of the nodes scored so far (a pod is scored on every node it
// fits, so the other classes it fits are known), is limited to that
// class. For each such shape s, need_s is its share of the GPU milli
// placed so far, hosts_s its milli times the nodes that could host it now,
// and τ_s = min(1, need_s · free / hosts_s), free the free milli over all
// nodes: as τ_m for GPU models, the chance that a host taken from s is one
// a pod of s will miss. A GPU pod that fits another class and would leave
// a node unable to host s pays τ_s · its milli in ΔF; pods of s, CPU-only
// pods and model-limited pods pay nothing. Nodes are counted as for the
// GPU-model charge (each as of its generation when last scored, the placed
// pod at once). With no one-class shape placed there is no charge
// (hosts.go).
//
// CPU-short nodes (round 4). On a node whose free CPU could not feed its
// free GPU milli at the rate κ (cpuStranded > 0), F misjudges what a
// placement strands: the next-pod and repeat terms ask whether pods fit
// the free CPU, not how the CPU will be spent, so on the CPU-heavy
// variants CPU-only pods and CPU-hungry GPU pods went to nodes whose GPUs
// they then starved. There allot measures a placement by a look-ahead
// (rollout.go): R(n) is the GPU milli left once GPU pods drawn from the
// target (among the shapes that still fit, by GPUs and CPU, in proportion
// to their shares) have filled the node, averaged over 8 futures of at
// most 64 pods read from one fixed stream of uniforms, plus FGD's
// next-pod measure over the GPU targets that may use the node's model.
// ΔF is R(n) − R(n′), plus the CPU term's change for a GPU pod, less the
// two charges below; a fraction goes to the GPU F would choose. R is a
// function of the node's state (model, free CPU, multiset of free milli)
// and memoised by it. Nodes whose CPU can feed their GPUs keep F: round
// 3's look-ahead on every node broke idle nodes that multi-GPU pods need
// (Measured, round 4).
//
// allot is given the same input as FGD: the target workload built from the
// whole pod list (TargetWorkload, 95 % coverage), not only the pods arrived
// so far (the host charge learns its shapes from the pods placed, as the
// repeat weight does). It keeps FGD's integer score
// int(100·sigmoid(ΔF/1000)), ΔF less the GPU-model and host charges, and
// its ties by node rank; a fraction goes to the GPU with the largest exact
// ΔF, then to the fullest GPU that fits. It is deterministic: the same
// calls in the same order give the same scores.
//
// # Measured
//
// All figures: medians of allocated GPU % at arrived 100 %, seeds 42-51,
// inflate 1.3, and the lead over this repository's FGD, on variants made
// by openb.Variant from the default pod list (internal/sim/frag/
// heldout_test.go lists them). Design was done in five rounds, each on
// its design set only; the held-out sets were run on finished scorers.
//
// Round 5 (round 4's scorer plus the plan). Where round 4 lost on
// default: seed 42, when the cluster had no idle GPU left (arrived
// 95.884 %, nothing failed before), 255,710 milli were free on partly
// used GPUs. 190,000 of it were lone 810s (190 each, which only the 106
// pods of 160 milli or less can use: unavoidable), the rest fractions
// paired against the plan: 37 GPUs of 470+320 (210 free each, where a
// 320 belongs beside a 650 and a 470 beside a 470), 24 of 590+230, 26 of
// 550+320, 27 of 650+230, 14 of 470+370. Offline best-fit decreasing of
// the fractions placed by arrived 100 % would still leave 238,400 free
// (96.16 %), so no better tie-break of FGD's measure would do; the pairing
// has to look at the whole workload. A model of the experiment with GPUs only (no
// nodes, CPU or models; whole-GPU pods take any idle GPUs) placed the
// fractions of seeds 42-51 by three online rules: best fit 95.930 (round
// 4's allot: 95.905), sum of squares (the free amount whose count grows
// least; Csirik et al.) 94.274, the plan's least loss then best fit
// 96.315; the plan with ties to the emptiest GPU 85.471, to a random one
// 95.832: among equal losses the fullest GPU must win, which on the
// cluster FGD's measure and the node rank see to. Candidates on the
// cluster, lead over FGD (mean over default and the 19 variants of the
// design and seen sets at arrived 90 / 95 / 100 %, median and smallest
// at 100 %; default at 100 %):
//
//	candidate                                        90 %   95 %   100 %  median  least  default
//	round 4's scorer (before)                        +1.425 +1.610 +1.745 +0.939 +0.135 95.905
//	sum of squares first, then the score             (default only)                      94.248
//	round 4's score first, sum of squares on ties    (default only)                      95.686
//	plan charged in ΔF: fgdScore(ΔF − loss)          +1.552 +1.778 +1.969 +1.148 +0.417 96.070
//	plan first (loss before the score)               +1.641 +1.892 +2.161 +1.529 +0.515 96.239  (kept)
//	  the same, leftover term from the plan
//	  (f − 1000·worth[f]) in place of expectedLeft   +1.617 +1.882 +2.160 +1.544 +0.515 96.247
//	  the same, no leftover term                     +1.620 +1.884 +2.154 +1.545 +0.542 96.241
//
// Kept: the plan first, round 4's scorer otherwise unchanged. Charging the
// loss in ΔF lets FGD's measure outbid it (a loss of 167 milli is four
// score points), and gpushare85-s18 falls from +1.477 to +0.990. With the
// plan first the leftover term decides little (it only moves fractions,
// which the plan now places); replacing it or dropping it is within seed
// noise (the CPU-heavy rows move by up to ±0.4, both ways) and it is kept
// as round 2 made it rather than re-chosen. Placing fractions cluster-wide
// by best fit among equal losses before the score (96.188 on default, an
// earlier prototype) lost to letting FGD's measure and the rank break those
// ties. The host charge now reads the GPU the fraction would take (a
// fraction that takes an idle GPU breaks a node for a wide shape even
// where a partly used GPU has room), which changed no figure here. Seed 42
// after the change: the cluster fills at arrived 96.272 % with 231,560
// milli free (exactly the GPU-only model's figures): 183,540 on lone 810s,
// the rest in pairs the plan makes (470+470 60, 650+320 30, 590+370 40).
// At arrived 100 % the medians over seeds 42-51 are 96.239 on default
// (min 96.190; round 4 95.905) and every design and seen row leads by more
// than before. What it costs: one seed of default (45) and one of
// gpushare30-s11 now fail the 8-GPU 120-core pods from arrived 44 %
// (minimum at arrived 80 % 79.65 and 79.59, round 4 79.99 and 79.95):
// the plan opens more idle GPUs for fractions, and the CPU term takes
// them on the 128-core G3 nodes, the only hosts of those pods, before the
// host charge has seen one of them (in seed 45 the first arrives at
// 43.9 %; round 4 kept five G3 nodes whole until then by no design of its
// own). Medians at 90-95 % are unchanged on every multi-GPU row. Cost: 4.7
// to 8.4 s for 10 seeds on the variants, as round 4 (2 cores).
//
// Round 4 (round 3's scorer plus the look-ahead on CPU-short nodes).
// Design set: round 3's twenty rows and default, and four rows of later
// sets that round 3 lost or barely won: cpu225-s202, cpu240-s411,
// cpu190-s309, multigpu70-s408. Round 3's look-ahead (rollout.go,
// unchanged in its sizes) was put back and switched on by the request or
// the node. FGD on the added rows at arrived 100 %: 52.913, 51.064,
// 58.396, 98.064. Lead over FGD at arrived 100 %, and the mean over the
// 23 variants at arrived 90 / 95 / 100 % (`allot sim frag --pods FILE`):
//
//	                  round 3  CPU-only  every    CPU-short  CPU-only pods  short before
//	                  (before) pods      pod      nodes      or short nodes or after
//	default           +0.663   +0.669    +0.614   +0.671     +0.663         +0.676
//	cpu75-s101        +1.016   +0.813    +1.899   +1.918     +1.536         +1.406
//	cpu125-s15        +0.966   +0.093    +5.434   +3.131     +3.983         +3.438
//	cpu150-s102       +0.651   +0.020    +6.327   +3.606     +4.355         +3.973
//	cpu175-s17        +0.561   +0.384    +7.495   +4.451     +4.118         +3.910
//	cpu190-s309       +0.147   -0.283    +7.178   +3.930     +4.867         +4.512
//	cpu210-s22        +0.281   +0.290    +6.134   +4.450     +4.405         +4.518
//	cpu225-s202       -0.066   +0.280    +5.729   +4.482     +4.145         +3.937
//	cpu240-s411       -0.039   +0.240    +4.738   +4.460     +4.238         +4.688
//	gpuspec45-s21     +4.555   +4.564    +4.577   +4.521     +4.492         +4.564
//	multigpu25-s14    +0.551   +0.528    +0.548   +0.598     +0.595         +0.610
//	mean 90 %         +0.671   +0.604    +2.064   +1.800     +1.847         +1.800
//	mean 95 %         +0.775   +0.701    +2.445   +1.956     +2.020         +1.961
//	mean 100 %        +0.878   +0.805    +2.711   +2.063     +2.117         +2.073
//
// Kept: CPU-short nodes. Every pod on every node leads most at arrived
// 100 %, but as in round 3 it trails FGD at arrived 90-95 % where idle
// nodes matter (default -0.665 / -0.956, gpushare30-s11 -1.202 / -1.190,
// multigpu25-s14 -0.160 / -0.270, gpushare55-s105 -0.257 at 90 %) and
// lowers default at 100 % (95.848). CPU-only pods alone change little
// and lose cpu125 and cpu150 (the GPU pods that starve a node's GPUs are
// left to F). Adding CPU-only pods on every node, or the node being short
// after the placement rather than before, is within seed noise of the
// kept rule (means +2.117 and +2.073 against +2.063) and adds a case. With
// the kept rule no row trails FGD at arrived 100 %, the multi-GPU rows are
// level with round 3 at arrived 90-95 % (mg25 +0.014 / +0.007, mg40,
// mg15, mg45, mg70 +0.000 at 90 %), gpushare70-s12 at 90 % moves from
// -0.105 to -0.089 and cpu75-s101 at 90 % from +1.028 to +0.500 (at 95 %
// and 100 % it gains). Cost on default: 7.2 s for 10 seeds against 4.8 s
// for round 3's scorer, on the same machine the same hour (BENCHMARKS.md).
//
// Round 3 (round 2's scorer plus the GPU-model charge; the host charge,
// below, came after it). Design
// set: the eight of round 2 and default, the eight of the first held-out
// set (now seen), gpuspec 45 % s21, cpu 210 % s22 and gpushare 95 % s23.
// The charge is 0 without model-limited targets, which only the gpuspec
// variants have (no other of the 20 has one in its target workload), so
// the other 16 keep round 2's figures; the candidates were measured on
// default and the four gpuspec variants. FGD there: 93.610 (spec15),
// 93.376 (spec8), 93.769 (spec30), 91.167 (spec45). mean20 is the mean
// lead over all 20 (round 2's scorer: +0.73):
//
//	candidate                                 default  spec15 spec8  spec30 spec45 mean20
//	round 2's scorer                          95.899  +2.138 +2.405 +0.017 -0.276 +0.73
//	charge τ·milli to every GPU pod, no cap   95.899  +2.177 +2.399 +1.999 +4.556
//	  the same, τ minus the lowest τ of the
//	  models the pod accepts                  95.899  +2.162 +2.411 +2.006 +4.526
//	no charge; a target that may not use the
//	  node's model counts nothing (not all)   95.899  +2.183 +2.371 +2.001 +3.752
//	the charge and that together              95.899  +2.168 +2.399 +2.022 +4.502
//	charge, τ capped at 1                     95.899  +2.177 +2.399 +1.999 +4.562 +1.017
//	  the same, pods limited to one model
//	  not charged                             95.899  +2.162 +2.411 +2.023 +4.562 +1.018  (kept)
//	  the same, need_m the larger of the
//	  target's and the placed pods' share             +2.165 +2.435 +2.018 +4.606
//	  the same, need_m the placed pods' only          +2.188 +2.431 +2.024 +4.590
//	  kept + CPU-only pods charged τ·(CPU/κ)  95.899  +2.146 +2.414 +2.007 +4.562
//	  kept, the placed pod not counted
//	  before its bind                         95.899  +2.165 +2.396 +2.005 +4.600
//
// Kept: the cap and the exemption of one-model pods change nothing beyond
// seed noise but give τ its meaning and charge no pod for the capacity kept
// for it. Dropped: τ relative to the lowest (the same or lower; a constant
// charge per request is neutral anyway); counting nothing for targets that
// may not use the model (removes the pull, but without steering the
// shared pods by what each model's own pods need it reaches +3.752 at
// spec45 against +4.562, and adds nothing on top of the charge); need_m
// from the pods placed so far (the target at 95 % coverage leaves out rare
// shapes, and shapes limited to the small models are rare: V100M16's share
// is 0.7 % of the target's GPU milli against 1.3 % of the pod list; the
// online share gains 0.02 to 0.04, within seed noise, and would switch the
// charge on for workloads whose target has no limited shape); charging
// CPU-only pods (no gain). Counting the placed pod before its bind changes
// nothing measurable here (the chosen node is usually scored again soon)
// and is kept for the nodes no later pod fits. What still fails at spec45
// (arrived 100 %, mean over seeds 42-51): 324 pods, 76 of them
// unconstrained, the rest spread over the models (P100 56, V100M16 45,
// G2 44, V100M32 40: the small models' need is under-counted by the
// target); G2 keeps 1 idle GPU (293 before) and 175,000 milli on partly
// used GPUs. Cost: gpuspec 45 % takes 8.9 s for 10 seeds on 2 quiet cores
// against 6.8 s before (more pods placed, and ρ moves more often: 427
// cache flushes over the 10 seeds against 253); default is unchanged
// (2.9 s).
//
// Round 3, hosts (the kept scorer: the above plus the host charge; the
// same design set). The GPU-model charge did not close the gap at arrived
// 90-95 % on the multi-GPU variants. Traced on multigpu 25 % s14, seeds
// 42-51, summed over the seeds: by arrived 90 % FGD failed 1 pod and
// allot 69, by 95 % 3 and 78, all of them 8-GPU 120-core pods (19 of the
// 8,393 pods, outside the target); at arrived 90 % FGD kept 466 G2, 31
// G3 and 15 V100M32 8-GPU nodes idle, allot 609, 0 and 18. allot put
// one-GPU pods on 285 idle G3 nodes (FGD 152) and 8-GPU pods on 77 (FGD
// 201). On an idle node FGD's ΔF is the same for G2 and G3 for every GPU
// shape of the target (ties go by rank); allot's is higher on G3 for
// CPU-heavy one-GPU pods (18.7 cores: -52 on G2, -5 on G3; 24.2 cores:
// -273 and -14, from the repeat term's CPU-limited copies and the CPU
// term) and higher on G2 for the 8-GPU targets (repeat term). No one term
// does it: failures by arrived 90 % with ρ = 0 33, without the leftover
// term 75, without the CPU term 59 (69 with all); the GPU-model charge is
// 0 there. Lead over FGD at arrived 90 / 95 / 100 % (FGD at 90-95 %:
// `allot sim frag --pods FILE`), mean over the 20:
//
//	candidate                                  mean 90/95/100         mg25                 mg40                 mg15                 mg45
//	round 3's GPU-model charge (before)        +0.601 +0.694 +1.018   -0.851 -0.979 +0.496 -0.493 -0.641 +0.338 -0.893 -0.816 +0.901 -0.450 -0.668 +0.360
//	class charge τ·milli on any placement in
//	  the class, τ from its free milli         +0.772 +0.897 +0.982   +0.014 +0.007 +0.543 +0.000 +0.037 +0.388 +0.000 +0.062 +0.930 +0.000 +0.008 +0.315
//	charge only a placement that leaves a node
//	  unable to host s, τ_s · s's milli        +0.763 +0.881 +1.009   +0.014 +0.007 +0.554 +0.000 +0.037 +0.345 +0.000 +0.062 +0.947 +0.000 +0.008 +0.292
//	  the same, CPU-only pods charged too      +0.715 +0.833 +0.962   (cpu 210 %: -0.025 at 100 %)
//	  the same, τ_s · the pod's milli          +0.768 +0.892 +1.028   +0.014 +0.007 +0.551 +0.000 +0.037 +0.388 +0.000 +0.062 +0.929 +0.000 +0.008 +0.314  (kept)
//
// Dropped: the charge on any placement in the class (cpu 175 % +0.535 to
// +0.273, cpu 210 % +0.316 to +0.146 at 100 %: it also pushes pods off G3
// nodes already broken, where the 120-core pods cannot go anyway, and the
// CPU-only pods then take G3's CPU and strand its GPUs); charging τ_s · s's
// milli for a broken host (cpu 175 % +0.365, mg45 +0.292 at 100 %: a
// charge of up to 8,000 keeps G3 from GPU pods longer than the CPU-only
// pods do); charging CPU-only pods (every cpu row lower). Kept: the
// charge τ_s · the pod's milli, as for GPU models. At 100 % it changes
// nothing beyond seed noise (mean +1.028 against +1.018; mg45 -0.046,
// cpu 210 % -0.035, mg25 +0.055, mg40 +0.050, cpu 75 % +0.081, default
// 95.897 against 95.899); at 90 % and 95 % every multi-GPU row is level
// with FGD or ahead (gpushare 70 % s12 stays at -0.105 at 90 %: it has no
// one-class pod and is unchanged, as are gpushare 90 % and cpu 125 %).
// Learning a shape before every class has been scored made one-class
// shapes of the first pods (the classes were read only from nodes pods
// went to): gpushare 70 % moved although it has no such pod; the kept
// version reads every node scored. Cost: 3.1 s for 10 seeds on default,
// gpuspec 45 % 8.5 s against 9.8 s before, under the same load.
//
// Round 3, look-ahead (built and measured on the same design set, not
// kept). A rollout fills the node with GPU pods drawn from the target
// workload (among the shapes that still fit, in proportion to their
// shares, from one fixed stream of uniforms so the value is a function of
// the node's state) and counts the GPU milli left, averaged over 8 futures
// of at most 64 pods; nodes in one state share the value. As a tie-break
// under the quantised score it changed nothing beyond noise (spec45
// -0.280 to -0.340, default 95.897-95.918). As the measure itself, R(n) =
// rollout + FGD's next-pod measure over the targets that may use n's model,
// plus the CPU term for GPU pods, and a fraction on the fullest GPU that
// fits, it led fgd on all 20 at arrived 100 % by a mean of +1.573 (default
// 95.940; cpu125 +3.132, cpu175 +3.542, cpu210 +4.894, spec45 +2.373,
// gs90 +0.147) and ran in 1.9 s on default. The rollout alone lost the
// multi-GPU rows (mg45 -2.024); with the round-3 charge on top only the
// gpuspec rows moved (mean +1.660) and spec45 took 10.2 s. It was not kept
// because of arrived 90-95 %: it breaks idle nodes that multi-GPU pods need
// (on default, 24 8-GPU pods failed by arrived 95 % over seeds 42-51,
// against 1 under FGD; the 8-GPU shape is outside the 95 % target, so
// neither the rollout nor the next-pod term sees it). Lead over FGD at
// arrived 90 % / 95 % (`allot sim frag --pods FILE` prints both), against
// the GPU-model charge scorer's (before the host charge):
//
//	workload        look-ahead       GPU-model charge
//	default         -0.057 -0.192    +0.000 +0.091
//	gpushare30-s11  -0.460 -0.516    +0.000 +0.273
//	multigpu25-s14  -1.063 -1.286    -0.851 -0.979
//	multigpu40-s16  -1.594 -1.800    -0.493 -0.641
//	cpu75-s101      -1.419 +0.426    +0.950 +0.948
//	gpushare55-s105 -1.251 +0.601    -0.011 +0.717
//	multigpu15-s107 -1.159 -1.107    -0.893 -0.816
//	multigpu45-s108 -1.461 -1.579    -0.450 -0.668
//
// Weighting the next-pod term by each target's GPUs did not help (mg40 at
// 90 %: 89.34 against 88.36 unweighted and FGD's 89.96; at 100 % lower). The
// GPU-model charge scorer trailed FGD at 90-95 % on the multi-GPU variants
// too, by less: both fill the G3 nodes the 8-GPU 120-core pods need; the
// host charge (above) keeps them.
//
// Round 2. Design set: default and gpushare 30 % s11,
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
//	  by fractions / GPU pods       95.899  +0.837 +0.637 +2.139 +0.496 +0.966 +0.338 +0.902  +0.535 +0.352 +0.788  (kept in round 2)
//	  the same, leftovers counted
//	  on idle GPUs too              95.892  +0.838 +0.618 +2.109 +0.493 +0.263 +0.370 +0.782  +0.183 +0.346 +0.652
//
// Kept in round 2: the last but one row. The repeat term adds little once
// the CPU term is in (+0.02 on mean6, within seed noise; without it gs30
// and mg40 gain up to 0.03, gs70 and cpu125 lose about 0.05 and 0.10); it
// is kept as round 1 chose it, not re-tuned. (Round 2 did not build the
// look-ahead; round 3 did, above.) The held-out runs are in BENCHMARKS.md.
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
// What limited it on default before round 5 (6,212 GPUs): seed 42,
// stopped at the first pod that brings arrived to 100 %, round 2's scorer
// before the last leftover change left 255,210 milli free: 244,110 on GPUs
// with under 200 free (190,190 of it on 1,001 GPUs with exactly 190 free,
// the sliver an 810-milli pod leaves and only the few pods of 160 milli or
// less can use), 11,100 on other partly used GPUs, no idle GPU; FGD left
// 245,850, 22,120 and 19,000 idle. No tie-break or term of rounds 2 to 4
// came near 96.2 % (best 95.940, round 3's look-ahead); the plan of round
// 5 did (96.239). `allot sim frag --ceiling` bounds what placement can do
// (internal/sim/frag, ceiling.go): packing every fraction that arrives by
// arrived 100 % allows at most 96.18 % (median of seeds 42-51; the same
// for every policy). Round 5 passes it because fractions that arrive once
// the cluster is full fail, as under every policy (in seed 42, 38 810s),
// and the bound is for a policy that places them all.
//
// Every scorer keeps caches or random state: one scorer serves one
// goroutine.
package score
