package openb

import (
	"github.com/allot-dev/allot/internal/trace/csvtable"

	"io"
	"strings"
)

// MilliPerGPU is the gpu_milli of a whole GPU.
const MilliPerGPU = 1000

// Pod is one row of an openb pod list. Optional columns absent from the
// file read as zero values.
type Pod struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int   // num_gpu
	GPUMilli  int64 // per GPU; below MilliPerGPU means a share of one GPU
	Models    []string
	QoS       string
	Phase     string

	CreationTime, DeletionTime, ScheduledTime int64 // seconds; 0 when absent
}

// Shared reports whether the pod takes a fraction of one GPU.
func (p *Pod) Shared() bool { return p.GPUs == 1 && p.GPUMilli < MilliPerGPU }

// TotalMilli is the milli-GPU the pod takes: GPUs × GPUMilli.
func (p *Pod) TotalMilli() int64 { return int64(p.GPUs) * p.GPUMilli }

// ReadPods reads a pod list; file names the input in errors.
func ReadPods(r io.Reader, file string) ([]Pod, error) {
	t, err := csvtable.Open(r, file, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}, ErrFormat)
	if err != nil {
		return nil, err
	}
	var out []Pod
	for {
		ok, err := t.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		p, err := readPod(t)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
}

func readPod(t *csvtable.Table) (Pod, error) {
	var p Pod
	var err error
	if p.Name, err = t.Need("name"); err != nil {
		return p, err
	}
	if p.CPUMilli, err = t.Int("cpu_milli", true, 0); err != nil {
		return p, err
	}
	if p.MemoryMiB, err = t.Int("memory_mib", true, 0); err != nil {
		return p, err
	}
	g, err := t.Int("num_gpu", true, maxGPUs)
	if err != nil {
		return p, err
	}
	p.GPUs = int(g)
	if p.GPUMilli, err = t.Int("gpu_milli", true, MilliPerGPU); err != nil {
		return p, err
	}
	switch {
	case p.GPUs == 0 && p.GPUMilli != 0:
		return p, t.Errorf("gpu_milli", "%d for a pod without GPUs", p.GPUMilli)
	case p.GPUs > 0 && p.GPUMilli == 0:
		return p, t.Errorf("gpu_milli", "0 for a pod with %d GPUs", p.GPUs)
	case p.GPUs > 1 && p.GPUMilli != MilliPerGPU:
		return p, t.Errorf("gpu_milli", "%d for a pod with %d GPUs (only one GPU may be shared)", p.GPUMilli, p.GPUs)
	}
	if s := t.Str("gpu_spec"); s != "" {
		for _, m := range strings.Split(s, "|") {
			if m = strings.TrimSpace(m); m != "" {
				p.Models = append(p.Models, m)
			}
		}
	}
	p.QoS, p.Phase = t.Str("qos"), t.Str("pod_phase")
	if p.CreationTime, err = t.Int("creation_time", false, 0); err != nil {
		return p, err
	}
	if p.DeletionTime, err = t.Int("deletion_time", false, 0); err != nil {
		return p, err
	}
	if p.ScheduledTime, err = t.Int("scheduled_time", false, 0); err != nil {
		return p, err
	}
	return p, nil
}

// ReadPodsFile reads the pod list at path.
func ReadPodsFile(path string) ([]Pod, error) { return csvtable.ReadFile(path, ReadPods) }
