package score

import (
	"cmp"
	"slices"
	"strings"

	"github.com/allot-dev/allot/internal/sched"
)

// Target is one request shape of a target workload and its share of it.
type Target struct {
	GPUs   int
	Milli  int64 // per GPU; 0 for CPU-only
	CPU    int64
	Models []string // accepted GPU models; empty means any
	P      float64  // share of the workload; a Workload's shares sum to 1
}

// Fraction reports whether t asks for part of one GPU.
func (t *Target) Fraction() bool { return t.GPUs == 1 && t.Milli > 0 && t.Milli < milliPerGPU }

// Workload is the distribution of request shapes that fragmentation is
// measured against, most frequent first.
type Workload []Target

// DefaultCoverage is the share of requests the FGD paper's target workload
// covers: the most frequent shapes are kept until they reach it.
const DefaultCoverage = 0.95

// TargetWorkload groups reqs by shape (GPUs, milli per GPU, CPU, GPU
// models; memory is ignored), keeps the most frequent shapes until they
// cover at least coverage of the requests, and renormalises their shares.
// Shapes of equal count keep a fixed order (by shape), so the result is
// deterministic.
func TargetWorkload(reqs []sched.Request, coverage float64) Workload {
	type key struct {
		gpus       int
		milli, cpu int64
		models     string
	}
	counts := map[key]int{}
	models := map[key][]string{}
	for _, r := range reqs {
		k := key{r.GPUs, r.Milli, r.CPU, strings.Join(r.Models, "|")}
		if r.GPUs == 0 {
			k.milli, k.models = 0, ""
		}
		if counts[k] == 0 {
			models[k] = r.Models
		}
		counts[k]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a.gpus, b.gpus), cmp.Compare(a.milli, b.milli),
			cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.models, b.models))
	})
	var w Workload
	kept, need := 0, coverage*float64(len(reqs))
	for _, k := range keys {
		if float64(kept) >= need {
			break
		}
		kept += counts[k]
		var m []string
		if k.gpus > 0 {
			m = models[k]
		}
		w = append(w, Target{GPUs: k.gpus, Milli: k.milli, CPU: k.cpu, Models: m, P: float64(counts[k])})
	}
	for i := range w {
		w[i].P /= float64(kept)
	}
	return w
}
