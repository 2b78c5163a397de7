package openb

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// podHeader is the column order WritePods uses: the full openb pod list.
var podHeader = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
	"qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}

// WritePods writes pods as an openb pod list with all eleven columns, in a
// form ReadPods reads back to the same pods (gpu_spec joins Models with
// "|", so a model may not contain "|" or surrounding spaces).
func WritePods(w io.Writer, pods []Pod) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(podHeader); err != nil {
		return fmt.Errorf("write pods: %w", err)
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, p := range pods {
		for _, m := range p.Models {
			if m == "" || m != strings.TrimSpace(m) || strings.Contains(m, "|") {
				return fmt.Errorf("write pods: pod %q: model %q cannot be written in gpu_spec", p.Name, m)
			}
		}
		row := []string{p.Name, i64(p.CPUMilli), i64(p.MemoryMiB), strconv.Itoa(p.GPUs), i64(p.GPUMilli),
			strings.Join(p.Models, "|"), p.QoS, p.Phase, i64(p.CreationTime), i64(p.DeletionTime), i64(p.ScheduledTime)}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write pods: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write pods: %w", err)
	}
	return nil
}
