package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
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
			r := decodeE2E(t, out)
			if r.Submitted != tt.jobs || r.Errors != 0 || r.Running != tt.expect || r.JobsPerS <= 0 ||
				r.AllRunningS <= 0 || r.LatencyP99Ms < r.LatencyP50Ms || r.LatencyMaxMs < r.LatencyP99Ms ||
				r.Cycles == 0 || r.RSSPeakMiB <= 0 || r.NodeLayer != "simulated" || r.History != tt.history ||
				(tt.history > 0) != (r.PreloadS > 0) || r.Server != "in-process" {
				t.Fatalf("report %+v", r)
			}
		})
	}
	out, errOut, code := run(t, "bench", "e2e", "--nodes", "1", "--jobs", "2", "--clients", "1")
	if code != ExitOK || !strings.Contains(out, "jobs/s") || !strings.Contains(out, "node layer simulated") ||
		!strings.Contains(out, "cycle split") || !strings.Contains(out, "commit") {
		t.Fatalf("table: exit %d\n%s%s", code, out, errOut)
	}
}

// decodeE2E reads bench e2e's JSON: every field of benchE2EResult is
// there, and the cycle split has every phase, each phase of a cycle that
// binds observed at least once (the watch's may come after the run).
func decodeE2E(t *testing.T, out string) benchE2EResult {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rt := reflect.TypeOf(benchE2EResult{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if _, ok := fields[name]; !ok {
			t.Errorf("JSON lacks %q", name)
		}
	}
	var r benchE2EResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, p := range server.CyclePhases {
		f, ok := r.CycleSplit[p]
		if !ok || (p != "watch" && (f.Count == 0 || f.MeanMs <= 0 || f.P99Ms < f.P50Ms)) {
			t.Errorf("cycle split %s: %+v (present: %v)", p, f, ok)
		}
	}
	return r
}

// bench e2e --server drives 'allot server' on the files --write-fleet
// wrote, as scripts/bench-vs-slurm.sh does (here in the test's process;
// the bench talks to it over HTTP alone), and cancels its jobs at the end.
func TestBenchE2ERemote(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := run(t, "bench", "e2e", "--nodes", "3", "--write-fleet", dir)
	if code != ExitOK || !strings.Contains(out, filepath.Join(dir, "fleet.yaml")) {
		t.Fatalf("--write-fleet: exit %d\n%s%s", code, out, errOut)
	}
	data := filepath.Join(dir, "data")
	srvOut, srvErr, stop := startServer(t, data, "--fleet", filepath.Join(dir, "fleet.yaml"),
		"--tenants", filepath.Join(dir, "tenants.yaml"), "--rate-limit", "0")
	defer func() {
		if c := stop(); c != ExitOK {
			t.Errorf("server exit %d: %s", c, srvErr)
		}
	}()
	url := waitFor(t, srvOut, regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`))[1]
	token, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ALLOT_TOKEN", strings.TrimSpace(string(token)))
	for round := range 2 { // the second finds the GPUs the first canceled free
		out, errOut, code = run(t, "bench", "e2e", "--server", url, "--jobs", "20", "--clients", "3", "-o", "json")
		if code != ExitOK {
			t.Fatalf("round %d: exit %d: %s", round, code, errOut)
		}
		r := decodeE2E(t, out)
		if r.Server != "external" || r.Nodes != 3 || r.GPUsPerNode != 8 || r.Submitted != 20 || r.Running != 20 ||
			r.Errors != 0 || r.JobsPerS <= 0 || r.Cycles == 0 || r.LatencyP99Ms < r.LatencyP50Ms || r.RSSPeakMiB <= 0 {
			t.Fatalf("round %d: report %+v", round, r)
		}
	}
	// Too many for the fleet: those that fit run, the rest wait.
	out, errOut, code = run(t, "bench", "e2e", "--server", url, "--jobs", "30", "--clients", "3", "-o", "json")
	if r := decodeE2E(t, out); code != ExitOK || r.Running != 24 || r.Submitted != 30 {
		t.Fatalf("30 jobs on 24 GPUs: exit %d, %+v: %s", code, r, errOut)
	}
	for _, args := range [][]string{
		{"--server", url, "--nodes", "3"},
		{"--server", url, "--history", "10"},
		{"--server", url, "--write-fleet", dir},
	} {
		if _, errOut, code := run(t, append([]string{"bench", "e2e"}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	t.Setenv("ALLOT_TOKEN", "")
	if _, errOut, code := run(t, "bench", "e2e", "--server", url); code != ExitUsage || !strings.Contains(errOut, "token") {
		t.Errorf("no token: exit %d: %s", code, errOut)
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

// The files --write-fleet writes read back as the fleet and tenancy the
// in-process bench generates.
func TestWriteE2EFiles(t *testing.T) {
	for _, n := range []int{1, 33, 1025} {
		fleetPath, tenantsPath, err := writeE2EFiles(t.TempDir(), n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := spec.ReadFleet(fleetPath)
		if err != nil {
			t.Fatal(err)
		}
		want, err := e2eFleet(n)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Nodes, got.Nodes); diff != "" {
			t.Errorf("%d nodes: nodes differ (-generated +read):\n%s", n, diff)
		}
		if diff := cmp.Diff(want.Regions, got.Regions); diff != "" {
			t.Errorf("%d nodes: regions differ (-generated +read):\n%s", n, diff)
		}
		ten, err := spec.ReadTenancy(tenantsPath, got)
		if err != nil {
			t.Fatal(err)
		}
		wantTen, _ := e2eTenancy(want)
		if diff := cmp.Diff(wantTen.Tenants, ten.Tenants); diff != "" {
			t.Errorf("tenants differ (-generated +read):\n%s", diff)
		}
	}
}
