package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// A tiny `allot bench e2e` run (the CI smoke test; its figures are not
// checked) brings every job that fits to Running and reports per-job
// latencies, with a preloaded history the server starts on.
func TestBenchE2E(t *testing.T) {
	tests := []struct {
		name                         string
		nodes, jobs, history, expect int
	}{
		{"fits", 3, 20, 0, 20},
		{"more jobs than GPUs, with history", 2, 20, 30, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, "bench", "e2e", "--nodes", strconv.Itoa(tt.nodes), "--jobs", strconv.Itoa(tt.jobs),
				"--clients", "3", "--history", strconv.Itoa(tt.history), "-o", "json")
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var r benchE2EResult
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if r.Submitted != tt.jobs || r.Errors != 0 || r.Running != tt.expect || r.JobsPerS <= 0 ||
				r.AllRunningS <= 0 || r.LatencyP99Ms < r.LatencyP50Ms || r.LatencyMaxMs < r.LatencyP99Ms ||
				r.Cycles == 0 || r.RSSPeakMiB <= 0 || r.NodeLayer != "simulated" || r.History != tt.history ||
				(tt.history > 0) != (r.PreloadS > 0) {
				t.Fatalf("report %+v", r)
			}
		})
	}
	out, errOut, code := run(t, "bench", "e2e", "--nodes", "1", "--jobs", "2", "--clients", "1")
	if code != ExitOK || !strings.Contains(out, "jobs/s") || !strings.Contains(out, "node layer simulated") {
		t.Fatalf("table: exit %d\n%s%s", code, out, errOut)
	}
}

func TestBenchE2EUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "0"},
		{"--jobs", "0"},
		{"--clients", "0"},
		{"--history", "-1"},
		{"-o", "yaml"},
	} {
		_, errOut, code := run(t, append([]string{"bench", "e2e"}, args...)...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

// The generated fleet is valid and names its nodes as the Slurm peer
// counts them: n nodes of 8 GPUs.
func TestE2EFleet(t *testing.T) {
	for _, n := range []int{1, 8, 1025, 3000} {
		f, err := e2eFleet(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Nodes) != n || f.Nodes[0].Name != "gpu00001" || f.GPUCount("bench", "H100") != 8*n {
			t.Fatalf("%d nodes: %d nodes, first %s, %d GPUs", n, len(f.Nodes), f.Nodes[0].Name, f.GPUCount("bench", "H100"))
		}
		if _, err := e2eTenancy(f); err != nil {
			t.Fatal(err)
		}
	}
}
