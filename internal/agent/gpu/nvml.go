package gpu

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML discovers GPUs through the NVIDIA Management Library. It needs
// libnvidia-ml.so at run time, which only hosts with the driver have.
type NVML struct{}

// Discover initialises NVML, reads every device, and shuts NVML down.
func (NVML) Discover(context.Context) ([]Device, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml init: %s", nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %s", nvml.ErrorString(ret))
	}
	out := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		dev, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d: %s", i, nvml.ErrorString(ret))
		}
		name, ret := dev.GetName()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d name: %s", i, nvml.ErrorString(ret))
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d uuid: %s", i, nvml.ErrorString(ret))
		}
		mem, ret := dev.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d memory: %s", i, nvml.ErrorString(ret))
		}
		minor, ret := dev.GetMinorNumber()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d minor number: %s", i, nvml.ErrorString(ret))
		}
		out = append(out, Device{Index: i, Minor: minor, UUID: uuid, Name: name, Model: ModelOf(name), MemoryMiB: int64(mem.Total >> 20)})
	}
	return out, nil
}

// Auto tries NVML first and falls back to nvidia-smi, as `--gpus auto` does.
type Auto struct {
	NVML Discoverer
	SMI  Discoverer
}

// DefaultAuto is NVML, then nvidia-smi on $PATH.
func DefaultAuto() Auto { return Auto{NVML: NVML{}, SMI: SMI{}} }

// Discover returns what the first way that works finds.
func (a Auto) Discover(ctx context.Context) ([]Device, error) {
	devs, _, err := a.DiscoverWay(ctx)
	return devs, err
}

// DiscoverWay is Discover that also says which way found the GPUs: "NVML"
// or "nvidia-smi".
func (a Auto) DiscoverWay(ctx context.Context) ([]Device, string, error) {
	devs, nerr := a.NVML.Discover(ctx)
	if nerr == nil && len(devs) > 0 {
		return devs, "NVML", nil
	}
	devs, serr := a.SMI.Discover(ctx)
	if serr != nil {
		return nil, "", fmt.Errorf("no GPUs found: %v; %v", nerr, serr)
	}
	return devs, "nvidia-smi", nil
}
