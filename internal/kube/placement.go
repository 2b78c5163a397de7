package kube

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// formatGPUs writes GPU indices as AnnotationGPUs holds them: 0,1,2.
func formatGPUs(gpus []int) string {
	s := make([]string, len(gpus))
	for i, g := range gpus {
		s[i] = strconv.Itoa(g)
	}
	return strings.Join(s, ",")
}

// parseGPUs reads AnnotationGPUs: distinct GPU indices from 0 to 63,
// comma-separated.
func parseGPUs(v string) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("want GPU indices such as 0,1, got %q", v)
	}
	var out []int
	seen := uint64(0)
	for _, s := range strings.Split(v, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || g < 0 || g > 63 {
			return nil, fmt.Errorf("want GPU indices from 0 to 63, got %q in %q", s, v)
		}
		if seen&(1<<g) != 0 {
			return nil, fmt.Errorf("GPU %d is named twice in %q", g, v)
		}
		seen |= 1 << g
		out = append(out, g)
	}
	return out, nil
}

// slot is one pod's share of a gang's placement.
type slot struct {
	pod  string
	node string
	gpus []int
}

// formatPlacement writes a gang's placement as AnnotationPlacement holds
// it: pod=node:gpus, one per pod, separated by ;, in instance order
// (p-0=n1:0,1;p-1=n2:0,1). A CPU-only pod has no GPUs: p-2=n3:.
func formatPlacement(slots []slot) string {
	s := make([]string, len(slots))
	for i, x := range slots {
		s[i] = x.pod + "=" + x.node + ":" + formatGPUs(x.gpus)
	}
	return strings.Join(s, ";")
}

// parsePlacement reads AnnotationPlacement.
func parsePlacement(v string) ([]slot, error) {
	var out []slot
	pods := map[string]bool{}
	for i, part := range strings.Split(v, ";") {
		pod, rest, ok := strings.Cut(part, "=")
		node, gpus, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 || pod == "" || node == "" {
			return nil, fmt.Errorf("entry %d: want pod=node:gpus, got %q", i, part)
		}
		if pods[pod] {
			return nil, fmt.Errorf("entry %d: pod %s is placed twice", i, pod)
		}
		pods[pod] = true
		x := slot{pod: pod, node: node}
		if gpus != "" {
			g, err := parseGPUs(gpus)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %w", i, err)
			}
			x.gpus = g
		}
		out = append(out, x)
	}
	return out, nil
}

// allocations turns a Bind's placements into a job's allocations.
func allocations(ps []sched.Placement) []model.Allocation {
	out := make([]model.Allocation, len(ps))
	for i, p := range ps {
		out[i] = model.Allocation{Node: p.Node, GPUs: p.GPUs, GPUMilli: p.GPUMilli}
	}
	return out
}
