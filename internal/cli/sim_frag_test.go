package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

const openbDir = "../../data/traces/openb/"

func TestSimFragJSON(t *testing.T) {
	if _, err := os.Stat(openbDir); err != nil {
		t.Fatalf("the traces the repository ships (data/traces): %v", err)
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "frag",
		"--nodes", openbDir + "openb_node_list_gpu_node.csv", "--pods", openbDir + "openb_pod_list_default.csv",
		"--policy", "bestfit", "--seeds", "42", "-o", "json"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	var rep simFragReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if rep.Policy != "bestfit" || rep.Workload != "default" || len(rep.Seeds) != 1 {
		t.Errorf("report header = %+v", rep)
	}
	want := []int{80, 90, 95, 100, 110, 120, 130}
	if len(rep.Points) != len(want) {
		t.Fatalf("points = %+v, want arrived %v", rep.Points, want)
	}
	for i, p := range rep.Points {
		if p.ArrivedPct != want[i] || p.Median < 50 || p.Median > 100 || p.Min > p.Median || p.Max < p.Median {
			t.Errorf("point %d = %+v", i, p)
		}
	}
}

func TestSimFragTable(t *testing.T) {
	if _, err := os.Stat(openbDir); err != nil {
		t.Fatalf("the traces the repository ships (data/traces): %v", err)
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "frag",
		"--nodes", openbDir + "openb_node_list_gpu_node.csv", "--pods", openbDir + "openb_pod_list_cpu050.csv",
		"--policy", "packing", "--seeds", "7,8"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "policy packing, workload cpu050, 2 seeds") || !strings.Contains(out, "130") {
		t.Errorf("table output:\n%s", out)
	}
}

func TestSimFragCeiling(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "frag",
		"--nodes", openbDir + "openb_node_list_gpu_node.csv", "--pods", openbDir + "openb_pod_list_default.csv",
		"--policy", "bestfit", "--seeds", "42", "--ceiling", "-o", "json"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	var rep simFragReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	for _, p := range rep.Points {
		if p.Ceiling < p.Median || p.Ceiling > 100 || p.CeilingAll <= 0 {
			t.Errorf("point %+v: want median <= ceiling <= 100 and an all-placed ceiling", p)
		}
	}
	stdout.Reset()
	code = Run(context.Background(), []string{"sim", "frag",
		"--nodes", openbDir + "openb_node_list_gpu_node.csv", "--pods", openbDir + "openb_pod_list_default.csv",
		"--policy", "bestfit", "--seeds", "42", "--ceiling"}, &stdout, &stderr)
	if out := stdout.String(); code != ExitOK || !strings.Contains(out, "ceiling  all placed") {
		t.Errorf("exit %d, table:\n%s", code, out)
	}
}

// TestSimFragFreeAt: --free-at adds, per seed, where the free capacity
// lies, to the table and to the JSON.
func TestSimFragFreeAt(t *testing.T) {
	args := []string{"sim", "frag", "--nodes", openbDir + "openb_node_list_gpu_node.csv",
		"--pods", openbDir + "openb_pod_list_default.csv", "--policy", "bestfit", "--seeds", "42,43", "--free-at", "100"}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), append(args, "-o", "json"), &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	var rep simFragReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if len(rep.Free) != 2 || rep.Free[0].Seed != 42 || rep.Free[1].Seed != 43 {
		t.Fatalf("free reports %+v, want seeds 42 and 43", rep.Free)
	}
	for _, fr := range rep.Free {
		var grouped int64
		for _, g := range fr.Groups {
			grouped += g.FreeMilli
		}
		if fr.ArrivedPct < 100 || len(fr.Groups) == 0 || grouped+1000*int64(fr.IdleGPUs) != fr.FreeMilli {
			t.Errorf("seed %d: %+v", fr.Seed, fr)
		}
	}
	stdout.Reset()
	if code := Run(context.Background(), args, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	for _, want := range []string{"seed 42 at arrived 100.0", "seed 43 at arrived", "GPU HOLDS", "\n810 "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table does not say %q:\n%s", want, stdout.String())
		}
	}
}

func TestSimFragUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown policy", []string{"--policy", "nope"}, "unknown policy"},
		{"bad seeds", []string{"--seeds", "9-1"}, "--seeds"},
		{"bad seed list", []string{"--seeds", "1,x"}, "--seeds"},
		{"bad output", []string{"-o", "yaml"}, "-o"},
		{"bad inflate", []string{"--inflate", "0.5"}, "--inflate"},
		{"free-at below 0", []string{"--free-at", "-1"}, "--free-at"},
		{"free-at past the arrivals", []string{"--free-at", "140"}, "--free-at"},
		{"unknown flag", []string{"--bogus"}, "bogus"},
		{"missing nodes file", []string{"--nodes", "/nonexistent/nodes.csv"}, "load nodes"},
		{"missing pods file", []string{"--nodes", openbDir + "openb_node_list_gpu_node.csv", "--pods", "/nonexistent/pods.csv"}, "load pods"},
		{"pods file is a node list", []string{"--nodes", openbDir + "openb_node_list_gpu_node.csv", "--pods", openbDir + "openb_node_list_gpu_node.csv"}, "missing column"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), append([]string{"sim", "frag"}, tt.args...), &stdout, &stderr)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d (stderr: %s)", code, ExitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tt.want)
			}
		})
	}
}
