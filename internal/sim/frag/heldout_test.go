package frag

import (
	"fmt"
	"slices"
	"testing"

	"github.com/allot-dev/allot/internal/trace/openb"
)

// variant is a workload derived from openb_pod_list_default by
// openb.Variant.
type variant struct {
	kind openb.VariantKind
	pct  float64
	seed uint64
}

func (v variant) String() string { return fmt.Sprintf("%s%g-s%d", v.kind, v.pct, v.seed) }

// The sets of generated variants (BENCHMARKS.md, "Placement on unseen
// variants"), in the order they were made:
//
//   - designVariants: rounds 2 to 5 of allot's scorer were designed, and
//     every candidate measured, on them and the default workload (the last
//     three were added for round 3).
//   - seenVariants: round 2's first held-out set. Run on three round-2
//     scorers in turn, then part of the design set of rounds 3 to 5.
//   - seen2Variants: round 2's fresh held-out set, run once on the frozen
//     round-2 scorer. Not designed on in round 3, but its two losses
//     (cpu225, gpuspec40) chose round 3's direction, so it is not unseen.
//   - seen3Variants: made after round 3's first scorer (the GPU-model
//     charge) was frozen and run once on it: all twelve ahead, median
//     +0.677. Round 3's second term (node classes) was designed without it.
//   - seen4Variants: made after round 3's final scorer (both terms) was
//     frozen and run once on it: eleven of twelve ahead, median +0.571,
//     cpu240 -0.038. Round 4 designed on designVariants, seenVariants and
//     four variants of the later sets (cpu225-s202, cpu190-s309,
//     cpu240-s411, multigpu70-s408), the CPU-heavy rows above all.
//   - seen5Variants: round 4's held-out set, made after round 4's scorer
//     was frozen and run once on it (ahead on all twelve, median +1.627).
//   - heldOutVariants: made after round 5's scorer (the packing plan) was
//     frozen and run once on it. Round 5 compared its candidates on
//     designVariants, seenVariants and the default workload only; it ran
//     the seen-2 to seen-5 sets once, on the frozen scorer. The issue's
//     goal is asserted on this set.
//
// No two sets share a seed or a kind-and-percentage (TestDisjointVariants),
// and none uses the percentages of the FGD paper's own variant files
// (gpushare 20-100 by 20, gpuspec 10/20/25/33, multigpu 20-50 by 10, cpu
// 50-250 by 50) or the shipped gpuspec05.
var (
	designVariants = []variant{
		{openb.GPUShare, 30, 11}, {openb.GPUShare, 70, 12},
		{openb.GPUSpec, 15, 13}, {openb.MultiGPU, 25, 14},
		{openb.CPUOnly, 125, 15}, {openb.MultiGPU, 40, 16},
		{openb.CPUOnly, 175, 17}, {openb.GPUShare, 85, 18},
		{openb.GPUSpec, 45, 21}, {openb.CPUOnly, 210, 22},
		{openb.GPUShare, 95, 23},
	}
	seenVariants = []variant{
		{openb.CPUOnly, 75, 101}, {openb.CPUOnly, 150, 102},
		{openb.GPUSpec, 8, 103}, {openb.GPUSpec, 30, 104},
		{openb.GPUShare, 55, 105}, {openb.GPUShare, 90, 106},
		{openb.MultiGPU, 15, 107}, {openb.MultiGPU, 45, 108},
	}
	seen2Variants = []variant{
		{openb.CPUOnly, 60, 201}, {openb.CPUOnly, 225, 202},
		{openb.GPUSpec, 12, 203}, {openb.GPUSpec, 40, 204},
		{openb.GPUShare, 45, 205}, {openb.GPUShare, 65, 206},
		{openb.MultiGPU, 35, 207}, {openb.MultiGPU, 55, 208},
	}
	seen3Variants = []variant{
		{openb.GPUShare, 35, 301}, {openb.GPUShare, 75, 302},
		{openb.GPUSpec, 18, 303}, {openb.GPUSpec, 37, 304},
		{openb.GPUSpec, 50, 305}, {openb.MultiGPU, 28, 306},
		{openb.MultiGPU, 48, 307}, {openb.CPUOnly, 90, 308},
		{openb.CPUOnly, 190, 309}, {openb.CPUOnly, 110, 310},
		{openb.GPUShare, 97, 311}, {openb.MultiGPU, 60, 312},
	}
	seen4Variants = []variant{
		{openb.GPUShare, 25, 401}, {openb.GPUShare, 50, 402},
		{openb.GPUSpec, 22, 403}, {openb.GPUSpec, 42, 404},
		{openb.GPUSpec, 60, 405}, {openb.MultiGPU, 32, 406},
		{openb.MultiGPU, 52, 407}, {openb.MultiGPU, 70, 408},
		{openb.CPUOnly, 80, 409}, {openb.CPUOnly, 165, 410},
		{openb.CPUOnly, 240, 411}, {openb.GPUShare, 92, 412},
	}
	seen5Variants = []variant{
		{openb.GPUShare, 38, 501}, {openb.GPUShare, 68, 502},
		{openb.GPUSpec, 27, 503}, {openb.GPUSpec, 48, 504},
		{openb.GPUSpec, 55, 505}, {openb.MultiGPU, 18, 506},
		{openb.MultiGPU, 38, 507}, {openb.MultiGPU, 65, 508},
		{openb.CPUOnly, 70, 509}, {openb.CPUOnly, 135, 510},
		{openb.CPUOnly, 230, 511}, {openb.CPUOnly, 265, 512},
	}
	heldOutVariants = []variant{
		{openb.GPUShare, 28, 601}, {openb.GPUShare, 58, 602},
		{openb.GPUShare, 88, 603}, {openb.GPUSpec, 17, 604},
		{openb.GPUSpec, 35, 605}, {openb.GPUSpec, 52, 606},
		{openb.MultiGPU, 22, 607}, {openb.MultiGPU, 42, 608},
		{openb.MultiGPU, 58, 609}, {openb.CPUOnly, 85, 610},
		{openb.CPUOnly, 145, 611}, {openb.CPUOnly, 195, 612},
	}
)

// goalMedianLead is issue 12's goal on unseen variants: allot ahead of fgd
// on every one, by a median of at least this many points. Round 5's scorer,
// run once on heldOutVariants after it was frozen, led on all twelve, by a
// median of +2.013 (smallest +0.539, multigpu42-s608); round 4's led on its
// own held-out set (now seen5Variants) by +1.627. Earlier held-out runs had
// each trailed on one CPU-heavy variant (round 2: cpu225-s202 -0.066;
// round 3: cpu240-s411 -0.038) and the test then asserted a floor of -0.1
// only.
const goalMedianLead = 0.3

// TestAllotBeatsFGD runs fgd and allot with the paper's seeds at arrived
// 100 % on generated variants of the default workload and logs a row per
// variant (-v prints the table of BENCHMARKS.md). On the held-out set
// allot must lead on every variant and the median lead reach
// goalMedianLead. The design and seen sets are only reported, and only run
// with -v.
func TestAllotBeatsFGD(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 seeds × 2 policies × 12 variants (about 2 minutes on 2 cores; 75 variants and 12 minutes with -v)")
	}
	nodes, base := loadTrace(t, "default")
	lead := func(t *testing.T, set string, v variant) float64 {
		pods, err := openb.Variant(base, nodes, openb.VariantSpec{Kind: v.kind, Pct: v.pct, Seed: v.seed})
		if err != nil {
			t.Fatal(err)
		}
		fgd := runPaper(t, nodes, pods, "fgd").Points[0].Median
		allot := runPaper(t, nodes, pods, "allot").Points[0].Median
		t.Logf("| %-8s | %-16s | %6.3f | %6.3f | %+6.3f |", set, v, fgd, allot, allot-fgd)
		return allot - fgd
	}
	if testing.Verbose() {
		for _, s := range []struct {
			name string
			vs   []variant
		}{{"design", designVariants}, {"seen", seenVariants}, {"seen-2", seen2Variants}, {"seen-3", seen3Variants}, {"seen-4", seen4Variants}, {"seen-5", seen5Variants}} {
			t.Run(s.name, func(t *testing.T) {
				for _, v := range s.vs {
					lead(t, s.name, v)
				}
			})
		}
	}
	t.Run("heldout", func(t *testing.T) {
		var gains []float64
		for _, v := range heldOutVariants {
			d := lead(t, "held-out", v)
			if d <= 0 {
				t.Errorf("%s: allot's lead over fgd at arrived 100%% is %+.3f, want > 0", v, d)
			}
			gains = append(gains, d)
		}
		med := median(gains)
		t.Logf("median lead over fgd on %d held-out variants: %+.3f (goal ≥ %+.2f)", len(gains), med, goalMedianLead)
		if med < goalMedianLead {
			t.Errorf("median lead over fgd on held-out variants %+.3f < %+.2f", med, goalMedianLead)
		}
	})
}

func median(vals []float64) float64 {
	s := slices.Sorted(slices.Values(vals))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}

// TestDisjointVariants keeps the sets of variants apart: no shared seed,
// no shared kind and percentage.
func TestDisjointVariants(t *testing.T) {
	sets := [][]variant{designVariants, seenVariants, seen2Variants, seen3Variants, seen4Variants, seen5Variants, heldOutVariants}
	for i := range sets {
		for j := range i {
			for _, a := range sets[i] {
				for _, b := range sets[j] {
					if a.seed == b.seed || (a.kind == b.kind && a.pct == b.pct) {
						t.Errorf("%s overlaps %s", a, b)
					}
				}
			}
		}
	}
}
