package philly

import (
	"github.com/allot-dev/allot/internal/trace/csvtable"

	"io"
	"strconv"
)

// MaxNodes bounds the nodes of one virtual cluster.
const MaxNodes = 100_000

// VC is one row of philly_vc.csv: a virtual cluster and the nodes of 8 GPUs
// it owns.
type VC struct {
	Name  string
	Nodes int
}

// ReadVCs reads a virtual-cluster file; file names the input in errors.
// A name may appear only once.
func ReadVCs(r io.Reader, file string) ([]VC, error) {
	t, err := csvtable.Open(r, file, []string{"vc", "node num"}, ErrFormat)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []VC
	for {
		ok, err := t.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		var v VC
		if v.Name, err = t.Field("vc"); err != nil {
			return nil, err
		}
		switch {
		case v.Name == "":
			return nil, t.Errorf("vc", "empty")
		case seen[v.Name]:
			return nil, t.Errorf("vc", "%q appears twice", v.Name)
		}
		seen[v.Name] = true
		s, err := t.Field("node num")
		if err != nil {
			return nil, err
		}
		n, perr := strconv.Atoi(s)
		switch {
		case perr != nil:
			return nil, t.Errorf("node num", "%q is not an integer", s)
		case n < 0 || n > MaxNodes:
			return nil, t.Errorf("node num", "%d is outside 0..%d", n, MaxNodes)
		}
		v.Nodes = n
		out = append(out, v)
	}
}

// ReadVCsFile reads the virtual-cluster file at path.
func ReadVCsFile(path string) ([]VC, error) { return csvtable.ReadFile(path, ReadVCs) }
