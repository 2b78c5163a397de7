package openb

import (
	"io"

	"github.com/allot-dev/allot/internal/trace/csvtable"
)

// Node is one row of an openb node list.
type Node struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	Model     string // GPU model; empty for CPU-only nodes
}

// maxGPUs bounds the GPUs of one node, so a typo cannot allocate gigabytes.
const maxGPUs = 1024

// ReadNodes reads a node list; file names the input in errors.
func ReadNodes(r io.Reader, file string) ([]Node, error) {
	t, err := csvtable.Open(r, file, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}, ErrFormat)
	if err != nil {
		return nil, err
	}
	var out []Node
	for {
		ok, err := t.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		var n Node
		if n.Name, err = t.Need("sn"); err != nil {
			return nil, err
		}
		if n.CPUMilli, err = t.Int("cpu_milli", true, 0); err != nil {
			return nil, err
		}
		if n.MemoryMiB, err = t.Int("memory_mib", true, 0); err != nil {
			return nil, err
		}
		g, err := t.Int("gpu", true, maxGPUs)
		if err != nil {
			return nil, err
		}
		n.GPUs = int(g)
		n.Model = t.Str("model")
		if n.GPUs > 0 && n.Model == "" {
			return nil, t.Errorf("model", "empty for a node with %d GPUs", n.GPUs)
		}
		out = append(out, n)
	}
}

// ReadNodesFile reads the node list at path.
func ReadNodesFile(path string) ([]Node, error) { return csvtable.ReadFile(path, ReadNodes) }
