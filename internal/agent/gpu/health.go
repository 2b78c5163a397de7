package gpu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Health reads what is wrong with a host's GPUs, for the agent's health
// checks: a node whose GPUs have problems is drained until they are gone.
type Health interface {
	// Watch gathers, until ctx ends, the events of devs that no check can
	// read later (NVML's XIDs), and then returns nil. It returns an error
	// at once where it cannot watch them.
	Watch(ctx context.Context, devs []Device) error
	// Problems lists what is wrong with devs now, one line each, none when
	// they are fit for work. An error means it could not tell.
	Problems(devs []Device) ([]string, error)
}

// NVMLHealth reads GPU health through NVML: a GPU gone (not found by its
// UUID, or lost), uncorrectable ECC errors since the driver loaded, pages
// waiting to be retired or rows to be remapped at the next reset, a row
// remap that failed, and critical XIDs since Watch began, but those an
// application causes itself (as NVIDIA's Kubernetes device plugin skips
// them). Counters a GPU does not keep (NOT_SUPPORTED) are passed over.
type NVMLHealth struct {
	mu   sync.Mutex
	xids map[string][]string // by UUID: "XID 79 at 12:00:01"
}

// appXIDs are XIDs an application causes (a fault in its own kernels, a
// page fault, a timeout): they end that application, not the GPU.
var appXIDs = []uint64{13, 31, 43, 45, 68, 109}

// Problems checks every device of devs.
func (h *NVMLHealth) Problems(devs []Device) ([]string, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml init: %s", nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	var out []string
	for _, d := range devs {
		for _, p := range deviceProblems(d.UUID) {
			out = append(out, fmt.Sprintf("GPU %d (%s): %s", d.Index, d.UUID, p))
		}
		h.mu.Lock()
		for _, x := range h.xids[d.UUID] {
			out = append(out, fmt.Sprintf("GPU %d (%s): %s", d.Index, d.UUID, x))
		}
		h.mu.Unlock()
	}
	return out, nil
}

// deviceProblems reads one GPU's counters; NVML is initialised.
func deviceProblems(uuid string) []string {
	dev, ret := nvml.DeviceGetHandleByUUID(uuid)
	if ret != nvml.SUCCESS {
		return []string{fmt.Sprintf("not found: %s (fallen off the bus?)", nvml.ErrorString(ret))}
	}
	var out []string
	lost := func(ret nvml.Return) bool {
		if ret == nvml.ERROR_GPU_IS_LOST {
			out = append(out, "lost: "+nvml.ErrorString(ret))
			return true
		}
		return false
	}
	n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	if lost(ret) {
		return out
	}
	if ret == nvml.SUCCESS && n > 0 {
		out = append(out, fmt.Sprintf("%d uncorrectable ECC errors since the driver loaded", n))
	}
	if pending, ret := dev.GetRetiredPagesPendingStatus(); ret == nvml.SUCCESS && pending == nvml.FEATURE_ENABLED {
		out = append(out, "pages wait to be retired at the next GPU reset")
	}
	if _, _, pending, failed, ret := dev.GetRemappedRows(); ret == nvml.SUCCESS {
		switch {
		case failed:
			out = append(out, "a row remap failed: the GPU needs replacing")
		case pending:
			out = append(out, "rows wait to be remapped at the next GPU reset")
		}
	}
	return out
}

// Watch records the critical XIDs of devs until ctx ends. A host whose
// driver delivers none (no device registers for them) is left to the
// counters: Watch says so.
func (h *NVMLHealth) Watch(ctx context.Context, devs []Device) error {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml init: %s", nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	set, ret := nvml.EventSetCreate()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml event set: %s", nvml.ErrorString(ret))
	}
	defer set.Free()
	registered := 0
	for _, d := range devs {
		dev, ret := nvml.DeviceGetHandleByUUID(d.UUID)
		if ret != nvml.SUCCESS {
			continue // Problems says so
		}
		if dev.RegisterEvents(nvml.EventTypeXidCriticalError, set) == nvml.SUCCESS {
			registered++
		}
	}
	if registered == 0 {
		return errors.New("no GPU here delivers XID events")
	}
	for ctx.Err() == nil {
		e, ret := set.Wait(1000)
		if ret != nvml.SUCCESS && ret != nvml.ERROR_TIMEOUT {
			select { // not a busy loop on a driver that fails at once
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if ret != nvml.SUCCESS || e.EventType != nvml.EventTypeXidCriticalError || slices.Contains(appXIDs, e.EventData) {
			continue
		}
		uuid, ret := e.Device.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		h.Record(uuid, e.EventData, time.Now())
	}
	return nil
}

// Record notes a critical XID of the GPU uuid at t, as Watch does; it
// stays among the GPU's problems until the agent restarts (a GPU that
// reported one needs a reset, and the agent a restart after it).
func (h *NVMLHealth) Record(uuid string, xid uint64, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.xids == nil {
		h.xids = map[string][]string{}
	}
	const keep = 4 // the first few say what happened
	if len(h.xids[uuid]) < keep {
		h.xids[uuid] = append(h.xids[uuid], fmt.Sprintf("XID %d at %s", xid, t.UTC().Format(time.RFC3339)))
	}
}
