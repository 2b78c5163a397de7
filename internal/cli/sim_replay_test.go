package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const phillyDir = "../../data/traces/philly/"

func TestSimReplayJSON(t *testing.T) {
	if _, err := os.Stat(phillyDir); err != nil {
		t.Fatalf("the traces the repository ships (data/traces): %v", err)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "replay",
		"--jobs", phillyDir + "philly_jobs.csv", "--vcs", phillyDir + "philly_vc.csv",
		"--policy", "fifo,allot", "--sharing", "static", "--cluster-scale", "0.25", "--limit", "2000",
		"-o", "json", "--report", dir}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr is not a terminal, yet got %q", stderr.String())
	}
	var res []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, stdout.String())
	}
	if len(res) != 2 || res[0]["policy"] != "fifo" || res[1]["policy"] != "allot" {
		t.Fatalf("runs = %v", res)
	}
	for _, k := range []string{"avg_jct", "median_jct", "p99_jct", "avg_queueing_delay", "median_queueing_delay",
		"p99_queueing_delay", "gpu_utilisation", "makespan", "preemptions", "gpu_hours_lost", "jobs",
		"skipped_unknown_vc", "never_fit", "tenants", "wall_seconds", "avg_jct_first_half", "avg_jct_second_half"} {
		if _, ok := res[0][k]; !ok {
			t.Errorf("output lacks %s", k)
		}
	}
	tenants := res[0]["tenants"].([]any)
	if len(tenants) != 11 {
		t.Errorf("%d tenants, want 11", len(tenants))
	}
	for _, f := range []string{"index.html", "utilisation.png", "queueing_cdf.png", "tenants-1.png", "tenants-2.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

func TestSimReplayTableAndErrors(t *testing.T) {
	if _, err := os.Stat(phillyDir); err != nil {
		t.Fatalf("the traces the repository ships (data/traces): %v", err)
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "replay",
		"--jobs", phillyDir + "philly_jobs.csv", "--vcs", phillyDir + "philly_vc.csv",
		"--policy", "sjf", "--cluster-scale", "0.25", "--limit", "500"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	for _, want := range []string{"sjf", "borrow", "704", "tenant", "6214e9", "1st half", "2nd half", "sjf, borrow: multi-node jobs' queueing delay p99 "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	bad := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(bad, []byte("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,x,1,1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "lifo"}, `unknown policy "lifo"`},
		{[]string{"--sharing", "shared"}, `sharing "shared"`},
		{[]string{"-o", "yaml"}, `-o "yaml"`},
		{[]string{"--priority-gap", "0"}, "--priority-gap 0"},
		{[]string{"--hold-after", "-5m"}, "--hold-after -5m0s: want 0 (off) or more"},
		{[]string{"--walltime", "0.5"}, "--walltime 0.5: want 0 (none) or at least 1"},
		{[]string{"--walltime", "NaN"}, "--walltime NaN: want 0 (none) or at least 1"},
		{[]string{"--jobs", bad}, "jobs.csv:2:21: column duration"},
	} {
		stdout.Reset()
		stderr.Reset()
		args := append([]string{"sim", "replay", "--jobs", phillyDir + "philly_jobs.csv", "--vcs", phillyDir + "philly_vc.csv", "--limit", "10"}, tc.args...)
		if code := Run(context.Background(), args, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), ExitUsage, tc.want)
		}
	}
}
