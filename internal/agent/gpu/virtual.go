package gpu

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Virtual is a declared set of GPUs for hosts without them (tests, demos).
type Virtual struct {
	Devices []Device
}

// Discover returns the declared devices.
func (v Virtual) Discover(context.Context) ([]Device, error) { return v.Devices, nil }

// ParseVirtual reads "virtual:8xH100-80GB" (count, model, optional memory
// in GB) into devices with stable fake UUIDs derived from node and index.
func ParseVirtual(spec, node string) (Virtual, error) {
	rest, ok := strings.CutPrefix(spec, "virtual:")
	if !ok {
		return Virtual{}, fmt.Errorf("--gpus %q: want auto or virtual:COUNTxMODEL[-MEMGB], e.g. virtual:8xH100-80GB", spec)
	}
	count, model, ok := strings.Cut(rest, "x")
	if !ok {
		return Virtual{}, fmt.Errorf("--gpus %q: want COUNTxMODEL after virtual:, e.g. 8xH100", spec)
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > 64 {
		return Virtual{}, fmt.Errorf("--gpus %q: count %q must be between 1 and 64", spec, count)
	}
	var memMiB int64 = 16 * 1024
	if m, gb, ok := strings.Cut(model, "-"); ok {
		g, err := strconv.Atoi(strings.TrimSuffix(gb, "GB"))
		if err != nil || g < 1 || g > 4096 {
			return Virtual{}, fmt.Errorf("--gpus %q: memory %q must look like 80GB", spec, gb)
		}
		model, memMiB = m, int64(g)*1024
	}
	if model == "" {
		return Virtual{}, fmt.Errorf("--gpus %q: the GPU model is empty", spec)
	}
	v := Virtual{Devices: make([]Device, n)}
	for i := range v.Devices {
		v.Devices[i] = Device{Index: i, Minor: i, UUID: fmt.Sprintf("GPU-virtual-%s-%d", node, i), Name: "virtual " + model,
			Model: model, MemoryMiB: memMiB}
	}
	return v, nil
}
