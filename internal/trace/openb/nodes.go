package openb

import "io"

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
	t, err := openTable(r, file, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"})
	if err != nil {
		return nil, err
	}
	var out []Node
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		var n Node
		if n.Name, err = t.need("sn"); err != nil {
			return nil, err
		}
		if n.CPUMilli, err = t.int("cpu_milli", true, 0); err != nil {
			return nil, err
		}
		if n.MemoryMiB, err = t.int("memory_mib", true, 0); err != nil {
			return nil, err
		}
		g, err := t.int("gpu", true, maxGPUs)
		if err != nil {
			return nil, err
		}
		n.GPUs = int(g)
		n.Model = t.str("model")
		if n.GPUs > 0 && n.Model == "" {
			return nil, t.errorf("model", "empty for a node with %d GPUs", n.GPUs)
		}
		out = append(out, n)
	}
}

// ReadNodesFile reads the node list at path.
func ReadNodesFile(path string) ([]Node, error) { return readFile(path, ReadNodes) }
