package demo

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GPUView is what a process sees of the host's GPUs: the GPUs
// CUDA_VISIBLE_DEVICES names, and the NVIDIA device nodes in its /dev
// (one nvidiaN per GPU, N the driver's minor number, beside the driver's
// control nodes). In a container allot gives only the instance's GPUs,
// both views name the same GPUs (scripts/gpu-check.sh --image compares
// them with the host's).
type GPUView struct {
	Visible []string // CUDA_VISIBLE_DEVICES, in order
	GPUs    []string // the GPUs' device nodes, nvidiaN, by N
	Control []string // the driver's other device nodes (nvidiactl, nvidia-uvm, …), sorted
}

// gpuNode is the name of one GPU's device node.
var gpuNode = regexp.MustCompile(`^nvidia([0-9]+)$`)

// SeeGPUs reads the view of a process whose CUDA_VISIBLE_DEVICES is
// visible and whose device nodes lie in devDir (/dev).
func SeeGPUs(devDir, visible string) (GPUView, error) {
	var v GPUView
	if visible != "" {
		v.Visible = strings.Split(visible, ",")
	}
	ents, err := os.ReadDir(devDir)
	if err != nil {
		return v, fmt.Errorf("read %s: %w", devDir, err)
	}
	var minors []int
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "nvidia") {
			continue
		}
		if m := gpuNode.FindStringSubmatch(name); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				minors = append(minors, n)
				continue
			}
		}
		v.Control = append(v.Control, name)
	}
	slices.Sort(minors)
	for _, n := range minors {
		v.GPUs = append(v.GPUs, fmt.Sprintf("nvidia%d", n))
	}
	slices.Sort(v.Control)
	return v, nil
}

// Check says how v differs from a view of gpus GPUs with devices GPU
// device nodes (-1: either is not checked): CUDA_VISIBLE_DEVICES must
// name gpus distinct GPUs, and /dev hold devices GPU nodes. nil when it
// does not.
func (v GPUView) Check(gpus, devices int) error {
	var problems []string
	distinct := slices.Compact(slices.Sorted(slices.Values(v.Visible)))
	if gpus >= 0 && (len(v.Visible) != gpus || len(distinct) != gpus) {
		problems = append(problems, fmt.Sprintf("CUDA_VISIBLE_DEVICES names %d GPUs (%d distinct), want %d", len(v.Visible), len(distinct), gpus))
	}
	if devices >= 0 && len(v.GPUs) != devices {
		problems = append(problems, fmt.Sprintf("/dev holds %d GPU device nodes (%s), want %d", len(v.GPUs), strings.Join(v.GPUs, ","), devices))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// String writes v as two lines, as scripts/gpu-check.sh reads them:
// "CUDA_VISIBLE_DEVICES=A,B" and "gpu-devices=nvidia0,nvidia2 control=nvidiactl,…".
func (v GPUView) String() string {
	return "CUDA_VISIBLE_DEVICES=" + strings.Join(v.Visible, ",") + "\n" +
		"gpu-devices=" + strings.Join(v.GPUs, ",") + " control=" + strings.Join(v.Control, ",") + "\n"
}
