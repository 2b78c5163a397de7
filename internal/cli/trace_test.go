package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/trace/openb"
)

// TestTraceOpenbVariantRunsInFrag: a generated variant loads with the openb
// reader, lands on the share asked, is the same file for the same seed, and
// runs in 'allot sim frag'.
func TestTraceOpenbVariantRunsInFrag(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, seed string) []byte {
		t.Helper()
		path := filepath.Join(dir, name)
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{"trace", "openb-variant", "--kind", "multigpu", "--pct", "30",
			"--seed", seed, "--pods", openbDir + "openb_pod_list_default.csv",
			"--nodes", openbDir + "openb_node_list_gpu_node.csv", "-o", path}, &stdout, &stderr)
		if code != ExitOK {
			t.Fatalf("exit %d, stderr: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "wrote "+path) || !strings.Contains(stdout.String(), "multigpu 30.") {
			t.Errorf("stdout = %q", stdout.String())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := gen("a.csv", "5"), gen("b.csv", "5"), gen("c.csv", "6")
	if !bytes.Equal(a, b) {
		t.Errorf("seed 5 twice gave different files")
	}
	if bytes.Equal(a, c) {
		t.Errorf("seeds 5 and 6 gave the same file")
	}
	pods, err := openb.ReadPods(bytes.NewReader(a), "a.csv")
	if err != nil {
		t.Fatal(err)
	}
	if s := openb.Share(openb.MultiGPU, pods); s < 29.5 || s > 30.5 {
		t.Errorf("multi-GPU share %.2f %%, want 30", s)
	}

	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "frag", "--nodes", openbDir + "openb_node_list_gpu_node.csv",
		"--pods", filepath.Join(dir, "a.csv"), "--policy", "bestfit", "--seeds", "42", "-o", "json"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("sim frag on the variant: exit %d, stderr: %s", code, stderr.String())
	}
	var rep simFragReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) == 0 || rep.Points[0].Median < 50 {
		t.Errorf("sim frag on the variant: %+v", rep)
	}
}

func TestTraceOpenbVariantUsageErrors(t *testing.T) {
	base := []string{"trace", "openb-variant", "--pods", openbDir + "openb_pod_list_default.csv",
		"--nodes", openbDir + "openb_node_list_gpu_node.csv"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no kind", []string{"--pct", "5", "-o", "-"}, "--kind is required"},
		{"no pct", []string{"--kind", "cpu", "-o", "-"}, "--pct is required"},
		{"no output", []string{"--kind", "cpu", "--pct", "5"}, "-o FILE is required"},
		{"unknown kind", []string{"--kind", "gpu", "--pct", "5", "-o", "-"}, `kind "gpu"`},
		{"pct out of range", []string{"--kind", "gpushare", "--pct", "120", "-o", "-"}, "pct 120"},
		{"pct not a number", []string{"--kind", "gpushare", "--pct", "x", "-o", "-"}, "pct"},
		{"missing pods file", []string{"--kind", "cpu", "--pct", "5", "-o", "-", "--pods", "/nonexistent.csv"}, "load pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), append(append([]string{}, base...), tt.args...), &stdout, &stderr)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d (stderr: %s)", code, ExitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tt.want)
			}
		})
	}
}
