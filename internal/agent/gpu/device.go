package gpu

import (
	"context"
	"regexp"
	"strings"
)

// Device is one GPU as a host reports it.
type Device struct {
	Index int
	// Minor is the minor number of the GPU's device node, /dev/nvidiaMINOR,
	// as the driver gives it (NVML's minor number): not its index, which
	// counts the GPUs the driver enumerates in PCI order, where a host may
	// skip or reorder minors. -1 when discovery could not tell.
	Minor     int
	UUID      string
	Name      string // as the driver names it, e.g. "NVIDIA H100 80GB HBM3"
	Model     string // allot's GPU model, e.g. "H100"
	MemoryMiB int64
}

// Discoverer finds the GPUs of this host.
type Discoverer interface {
	Discover(ctx context.Context) ([]Device, error)
}

// modelPattern finds a GPU family in a driver's product name.
var modelPattern = regexp.MustCompile(`\b(RTX \d{4}|[A-Z]{1,2}\d{1,4}[A-Z]?)\b`)

// ModelOf maps a product name to allot's model name: "NVIDIA H100 80GB HBM3"
// → "H100", "Tesla T4" → "T4", "NVIDIA A100-SXM4-80GB" → "A100", "NVIDIA
// GeForce RTX 4090" → "RTX4090". A name
// without a recognisable family is returned trimmed.
func ModelOf(name string) string {
	n := strings.NewReplacer("-", " ", "_", " ").Replace(name)
	for _, m := range modelPattern.FindAllString(n, -1) {
		if strings.HasSuffix(m, "GB") || m == "SXM" || m == "PCIE" {
			continue
		}
		return strings.ReplaceAll(m, " ", "")
	}
	return strings.TrimSpace(name)
}
