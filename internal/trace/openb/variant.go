package openb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// VariantKind names a family of workloads derived from one pod list, as the
// FGD paper (ATC'23) varies its default workload.
type VariantKind string

// The workload families. Pct means, for each:
const (
	// GPUShare: the share of the GPU milli requested that shared-GPU pods
	// (one GPU, gpu_milli < 1000) ask for.
	GPUShare VariantKind = "gpushare"
	// GPUSpec: the share of GPU pods that require one GPU model.
	GPUSpec VariantKind = "gpuspec"
	// MultiGPU: the share of the GPU milli requested that pods of two or
	// more GPUs ask for.
	MultiGPU VariantKind = "multigpu"
	// CPUOnly: the CPU milli of CPU-only pods as a share of the CPU milli of
	// the GPU pods.
	CPUOnly VariantKind = "cpu"
)

// VariantKinds lists the kinds in the order help texts show them.
var VariantKinds = []VariantKind{GPUShare, GPUSpec, MultiGPU, CPUOnly}

// ErrVariant is wrapped by every error about the inputs of Variant.
var ErrVariant = errors.New("openb: bad variant")

// VariantSpec says which variant to derive.
type VariantSpec struct {
	Kind VariantKind
	Pct  float64 // see the kinds
	Seed uint64  // the same inputs and seed give the same pods
}

// maxPct bounds Pct per kind: a share of milli or pods cannot pass 100 %,
// multi-GPU pods at 100 % would leave no single-GPU pod (and need endless
// copies), and CPU-only demand is bounded only to keep files finite.
var maxPct = map[VariantKind]float64{GPUShare: 100, GPUSpec: 100, MultiGPU: 95, CPUOnly: 1000}

// maxVariantPods bounds the pods of a variant, so a large Pct on a small
// trace cannot exhaust memory.
const maxVariantPods = 1_000_000

// Variant derives a workload of kind v.Kind from pods (a pod list such as
// openb_pod_list_default) and nodes (the node list it runs on), so that the
// kind's share reaches v.Pct within one pod's contribution:
//
//   - gpushare: every GPU pod is replaced, in place, by a copy of a GPU pod
//     of the trace drawn uniformly from the shared-GPU pods while the
//     shared share of the GPU milli so far is below Pct, else from the other
//     GPU pods. CPU-only pods stay.
//   - gpuspec: every GPU pod's model constraint is cleared; then
//     round(Pct % of the GPU pods), chosen uniformly, each require one
//     model drawn in proportion to the GPUs of that model on the nodes that
//     could hold the pod (enough GPUs, CPU and memory) — the trace's own
//     model distribution.
//   - multigpu: copies of the trace's multi-GPU pods, drawn uniformly, are
//     appended while their share of the GPU milli is below Pct; above it,
//     multi-GPU pods chosen uniformly are removed until it is not.
//   - cpu: the same with CPU-only pods (those asking some CPU) and their
//     CPU milli against Pct % of the GPU pods' CPU milli.
//
// Pods are renamed openb-pod-NNNN in their order, so the name order is the
// file order as in the shipped traces. Inputs it cannot honour are errors
// wrapping ErrVariant that name the field; it never panics.
func Variant(pods []Pod, nodes []Node, v VariantSpec) ([]Pod, error) {
	top, ok := maxPct[v.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: kind %q: want gpushare, gpuspec, multigpu or cpu", ErrVariant, v.Kind)
	}
	if math.IsNaN(v.Pct) || v.Pct < 0 || v.Pct > top {
		return nil, fmt.Errorf("%w: pct %g: want 0 to %g for kind %s", ErrVariant, v.Pct, top, v.Kind)
	}
	gpuPods := 0
	for i := range pods {
		if err := checkPod(&pods[i]); err != nil {
			return nil, err
		}
		if pods[i].GPUs > 0 {
			gpuPods++
		}
	}
	if gpuPods == 0 {
		return nil, fmt.Errorf("%w: pods: no pod asks for a GPU", ErrVariant)
	}
	r := rand.New(rand.NewPCG(v.Seed, 0x6f70656e62)) // stream: "openb"
	p := v.Pct / 100
	var out []Pod
	var err error
	switch v.Kind {
	case GPUShare:
		out, err = gpuShare(pods, p, r)
	case GPUSpec:
		out, err = gpuSpec(pods, nodes, p, r)
	case MultiGPU:
		out, err = multiGPU(pods, p, r)
	case CPUOnly:
		out, err = cpuOnly(pods, p, r)
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Name = fmt.Sprintf("openb-pod-%04d", i)
	}
	return out, nil
}

// checkPod holds a pod to what ReadPods accepts, so API callers get an
// error rather than a variant built on nonsense.
func checkPod(p *Pod) error {
	switch {
	case p.CPUMilli < 0:
		return fmt.Errorf("%w: pod %q: cpu_milli %d is negative", ErrVariant, p.Name, p.CPUMilli)
	case p.MemoryMiB < 0:
		return fmt.Errorf("%w: pod %q: memory_mib %d is negative", ErrVariant, p.Name, p.MemoryMiB)
	case p.GPUs < 0 || p.GPUs > maxGPUs:
		return fmt.Errorf("%w: pod %q: num_gpu %d: want 0 to %d", ErrVariant, p.Name, p.GPUs, maxGPUs)
	case p.GPUMilli < 0 || p.GPUMilli > MilliPerGPU || (p.GPUs == 0) != (p.GPUMilli == 0) ||
		(p.GPUs > 1 && p.GPUMilli != MilliPerGPU):
		return fmt.Errorf("%w: pod %q: gpu_milli %d does not suit num_gpu %d", ErrVariant, p.Name, p.GPUMilli, p.GPUs)
	}
	return nil
}

func clonePod(p Pod) Pod {
	p.Models = slices.Clone(p.Models)
	return p
}

func gpuShare(pods []Pod, p float64, r *rand.Rand) ([]Pod, error) {
	var shared, whole []Pod
	for _, q := range pods {
		switch {
		case q.Shared():
			shared = append(shared, q)
		case q.GPUs > 0:
			whole = append(whole, q)
		}
	}
	if p > 0 && len(shared) == 0 {
		return nil, fmt.Errorf("%w: pct %g: the trace has no shared-GPU pod to draw", ErrVariant, p*100)
	}
	if p < 1 && len(whole) == 0 {
		return nil, fmt.Errorf("%w: pct %g: the trace has no whole-GPU pod to draw", ErrVariant, p*100)
	}
	out := make([]Pod, 0, len(pods))
	var sh, tot float64
	for _, q := range pods {
		if q.GPUs > 0 {
			pool := whole
			if p == 1 || (p > 0 && sh < p*tot) {
				pool = shared
			}
			q = pool[r.IntN(len(pool))]
			tot += float64(q.TotalMilli())
			if q.Shared() {
				sh += float64(q.TotalMilli())
			}
		}
		out = append(out, clonePod(q))
	}
	return out, nil
}

func gpuSpec(pods []Pod, nodes []Node, p float64, r *rand.Rand) ([]Pod, error) {
	out := make([]Pod, len(pods))
	var gpu []int
	for i, q := range pods {
		out[i] = clonePod(q)
		if q.GPUs > 0 {
			out[i].Models = nil
			gpu = append(gpu, i)
		}
	}
	k := int(math.Round(p * float64(len(gpu))))
	if k == 0 {
		return out, nil
	}
	// Models in name order, so draws do not depend on map order.
	var models []string
	for _, n := range nodes {
		if n.GPUs > 0 && !slices.Contains(models, n.Model) {
			models = append(models, n.Model)
		}
	}
	slices.Sort(models)
	type need struct{ gpus, cpu, mem int64 }
	weights := map[need][]int64{}
	weigh := func(q *Pod) []int64 {
		key := need{int64(max(q.GPUs, 1)), q.CPUMilli, q.MemoryMiB}
		if w, ok := weights[key]; ok {
			return w
		}
		w := make([]int64, len(models))
		for _, n := range nodes {
			if n.GPUs > 0 && int64(n.GPUs) >= key.gpus && n.CPUMilli >= key.cpu && n.MemoryMiB >= key.mem {
				w[slices.Index(models, n.Model)] += int64(n.GPUs)
			}
		}
		weights[key] = w
		return w
	}
	var eligible []int
	for _, i := range gpu {
		for _, w := range weigh(&out[i]) {
			if w > 0 {
				eligible = append(eligible, i)
				break
			}
		}
	}
	if len(eligible) < k {
		return nil, fmt.Errorf("%w: pct %g: %d GPU pods must require a model, but only %d fit on any node of the node list",
			ErrVariant, p*100, k, len(eligible))
	}
	for _, e := range r.Perm(len(eligible))[:k] {
		q := &out[eligible[e]]
		w := weigh(q)
		var total int64
		for _, x := range w {
			total += x
		}
		x := r.Int64N(total)
		for m, wm := range w {
			if x < wm {
				q.Models = []string{models[m]}
				break
			}
			x -= wm
		}
	}
	return out, nil
}

func multiGPU(pods []Pod, p float64, r *rand.Rand) ([]Pod, error) {
	var other float64
	for _, q := range pods {
		if q.GPUs == 1 {
			other += float64(q.TotalMilli())
		}
	}
	if other == 0 {
		return nil, fmt.Errorf("%w: pods: no single-GPU pod, so the multi-GPU share is 100 %% whatever is drawn", ErrVariant)
	}
	return adjust(pods, p*other/(1-p), func(q *Pod) float64 {
		if q.GPUs > 1 {
			return float64(q.TotalMilli())
		}
		return 0
	}, "multi-GPU", r)
}

func cpuOnly(pods []Pod, p float64, r *rand.Rand) ([]Pod, error) {
	var gpuCPU float64
	for _, q := range pods {
		if q.GPUs > 0 {
			gpuCPU += float64(q.CPUMilli)
		}
	}
	return adjust(pods, p*gpuCPU, func(q *Pod) float64 {
		if q.GPUs == 0 {
			return float64(q.CPUMilli)
		}
		return 0
	}, "CPU-only", r)
}

// adjust brings the amount that member pods (amount > 0) hold to within one
// pod of target: it appends copies of members drawn uniformly while below,
// or removes members chosen uniformly while above.
func adjust(pods []Pod, target float64, amount func(*Pod) float64, what string, r *rand.Rand) ([]Pod, error) {
	var have float64
	var members []int
	for i := range pods {
		if a := amount(&pods[i]); a > 0 {
			have += a
			members = append(members, i)
		}
	}
	keep := make([]bool, len(pods))
	for i := range keep {
		keep[i] = true
	}
	if have > target {
		for _, m := range r.Perm(len(members)) {
			if have <= target {
				break
			}
			keep[members[m]] = false
			have -= amount(&pods[members[m]])
		}
	}
	out := make([]Pod, 0, len(pods))
	for i, q := range pods {
		if keep[i] {
			out = append(out, clonePod(q))
		}
	}
	if have < target && len(members) == 0 {
		return nil, fmt.Errorf("%w: pct: the trace has no %s pod to draw copies from", ErrVariant, what)
	}
	for have < target {
		if len(out) >= maxVariantPods {
			return nil, fmt.Errorf("%w: pct: more than %d pods would be needed", ErrVariant, maxVariantPods)
		}
		q := pods[members[r.IntN(len(members))]]
		have += amount(&q)
		out = append(out, clonePod(q))
	}
	return out, nil
}

// Share is what kind measures on pods, in percent: see the kinds. It is 0
// when its denominator is (no GPU pods, or an unknown kind).
func Share(kind VariantKind, pods []Pod) float64 {
	var num, den float64
	for i := range pods {
		q := &pods[i]
		switch kind {
		case GPUShare, MultiGPU:
			den += float64(q.TotalMilli())
			if (kind == GPUShare && q.Shared()) || (kind == MultiGPU && q.GPUs > 1) {
				num += float64(q.TotalMilli())
			}
		case GPUSpec:
			if q.GPUs > 0 {
				den++
				if len(q.Models) > 0 {
					num++
				}
			}
		case CPUOnly:
			if q.GPUs > 0 {
				den += float64(q.CPUMilli)
			} else {
				num += float64(q.CPUMilli)
			}
		}
	}
	if den == 0 {
		return 0
	}
	return 100 * num / den
}
