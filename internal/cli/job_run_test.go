package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/spec"
)

func TestJobRun(t *testing.T) {
	one := func(check func(t *testing.T, d spec.Document)) func(t *testing.T, body []byte) {
		return func(t *testing.T, body []byte) {
			var d spec.Document
			if err := json.Unmarshal(body, &d); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			check(t, d)
		}
	}
	cases := []commandCase{
		{name: "inline job", args: []string{"job", "run", "--gpus", "8", "--gpu-model", "H100", "--tenant", "acme", "--priority", "spot:5",
			"--", "torchrun", "--nproc-per-node", "8", "train.py"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if d.Name != "torchrun" || d.Tenant != "acme" || d.Priority != "spot:5" || d.Resources.GPUsPerInstance != 8 ||
					strings.Join(d.Resources.GPUModels, ",") != "H100" || strings.Join(d.Command, " ") != "torchrun --nproc-per-node 8 train.py" {
					t.Errorf("document %+v", d)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "flags after the command are the command's", args: []string{"job", "run", "--name", "nb", "python", "-u", "x.py", "--gpus", "3"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if d.Name != "nb" || d.Tenant != "" || d.Resources.GPUsPerInstance != 1 || strings.Join(d.Command, " ") != "python -u x.py --gpus 3" {
					t.Errorf("document %+v; want the token's tenant (none sent) and the command whole", d)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "array", args: []string{"job", "run", "--array", "0-4:2", "--gpu-milli", "250", "-o", "json", "--", "sh", "-c", "echo $ALLOT_ARRAY_INDEX"},
			ex: exchange{method: "POST", path: "/v1/jobs/batch", status: 201,
				body: `{"jobs":[` + queuedJob + `,` + queuedJob + `,` + queuedJob + `]}`,
				checkBody: func(t *testing.T, body []byte) {
					var docs []spec.Document
					if err := json.Unmarshal(body, &docs); err != nil || len(docs) != 3 {
						t.Fatalf("body %s (%v), want three documents", body, err)
					}
					for i, d := range docs {
						if want := []string{"sh[0]", "sh[2]", "sh[4]"}[i]; d.Name != want || d.ArrayIndex == nil || *d.ArrayIndex != 2*i {
							t.Errorf("member %d: %s index %v, want %s", i, d.Name, d.ArrayIndex, want)
						}
					}
				}},
			wantOut: []string{`"id": "j-1"`}},
		{name: "elastic", args: []string{"job", "run", "--instances", "2-8:2", "--gpus", "8", "--", "allot", "demo", "train"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if d.Resources.InstanceCount != 2 || d.Elastic == nil ||
					d.Elastic.MinInstances != 2 || d.Elastic.MaxInstances != 8 || d.Elastic.Step != 2 {
					t.Errorf("instances %d, elastic %+v; want 2, 2-8 step 2", d.Resources.InstanceCount, d.Elastic)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "after a job", args: []string{"job", "run", "--after", "prep-1k8", "--after", "data-2x", "--", "train"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if strings.Join(d.After, ",") != "prep-1k8,data-2x" {
					t.Errorf("after %v, want both jobs", d.After)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "time limit and retries", args: []string{"job", "run", "--timeout", "4h", "--max-retries", "2", "--", "train"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if d.Retry == nil || d.Retry.Timeout != "4h0m0s" || d.Retry.MaxRetries != 2 {
					t.Errorf("retry %+v, want timeout 4h and 2 retries", d.Retry)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "begin at a time", args: []string{"job", "run", "--begin", "2030-01-02T03:04:05Z", "--", "nightly"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if d.Begin != "2030-01-02T03:04:05Z" {
					t.Errorf("begin %q, want 2030-01-02T03:04:05Z", d.Begin)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "begin in six hours", args: []string{"job", "run", "--begin", "6h", "--", "nightly"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				b, err := time.Parse(time.RFC3339, d.Begin)
				if want := time.Now().Add(6 * time.Hour); err != nil || b.Before(want.Add(-time.Minute)) || b.After(want) {
					t.Errorf("begin %q (%v), want six hours from now, %s", d.Begin, err, want.UTC().Format(time.RFC3339))
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "excluded nodes", args: []string{"job", "run", "--exclude", "h100-03,h100-04", "--exclude", "h100-07", "--region", "eastus", "--", "train"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if d.Placement == nil || strings.Join(d.Placement.ExcludeNodes, ",") != "h100-03,h100-04,h100-07" ||
					strings.Join(d.Placement.Regions, ",") != "eastus" || d.Placement.Nodes != nil {
					t.Errorf("placement %+v, want regions [eastus] and three excluded nodes", d.Placement)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "a clean-up step", args: []string{"job", "run", "--after", "train-1", "--after-condition", "any", "--", "cleanup"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if strings.Join(d.After, ",") != "train-1" || d.AfterCond != "any" {
					t.Errorf("after %v, condition %q; want [train-1] and any", d.After, d.AfterCond)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "only on a node", args: []string{"job", "run", "--node", "h100-03", "--", "burn-in"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: one(func(t *testing.T, d spec.Document) {
				if d.Placement == nil || strings.Join(d.Placement.Nodes, ",") != "h100-03" || d.Placement.Regions != nil {
					t.Errorf("placement %+v, want nodes [h100-03] alone", d.Placement)
				}
			})},
			wantOut: []string{"j-1\n"}},
		{name: "dry run", args: []string{"job", "run", "--dry-run", "--gpu-model", "A100", "--", "eval"},
			ex: exchange{method: "POST", path: "/v1/jobs", query: "dry_run=true", status: 200,
				body: `{"id":"eval-1","state":"Queued","reason":"NoReadyNodes","detail":"all 2 capable nodes are Draining: a1, a2","estimated_start":null,"estimate_none":"no start within the horizon"}`,
				checkBody: one(func(t *testing.T, d spec.Document) {
					if d.Name != "eval" {
						t.Errorf("document %+v", d)
					}
				})},
			wantOut: []string{"eval-1 (dry run: not submitted)", "NoReadyNodes", "all 2 capable nodes are Draining: a1, a2", "unknown: no start within the horizon"}},
		{name: "refused", args: []string{"job", "run", "--gpus", "8", "--gpu-model", "B200", "--", "train"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 400,
				body: `{"code":"SkuNotAvailable","message":"no SKU in any region has 8×B200 per instance"}`},
			wantCode: ExitUsage, wantErr: []string{"SkuNotAvailable: no SKU in any region has 8×B200"}},
	}
	// As runCases, but with --server and --token before the command:
	// what follows the command is the command's.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			tc.ex.token = "tok"
			url, hits := stub(t, tc.ex)
			args := append([]string{tc.args[0], tc.args[1], "--server", url, "--token", "tok"}, tc.args[2:]...)
			out, errOut, code := runCLI(t, args...)
			if code != tc.wantCode || hits.Load() != 1 {
				t.Errorf("exit %d, %d requests; want %d and 1\nstdout: %s\nstderr: %s", code, hits.Load(), tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestJobRunImage checks 'job run --image': the image fields of the
// document, with or without a command (the image's entrypoint then, and
// the job named after the image).
func TestJobRunImage(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		name    string
		command []string
		mounts  []mountDoc
	}{
		{[]string{"--image", "nvcr.io/nvidia/pytorch:24.05-py3", "--", "torchrun", "train.py"}, "torchrun", []string{"torchrun", "train.py"}, nil},
		{[]string{"--image", "ghcr.io/team/eval@sha256:" + strings.Repeat("0", 64), "--mount", "/data/sets:/data:ro", "--workdir", "/w"}, "eval", nil,
			[]mountDoc{{"/data/sets", "/data", true}}},
		{[]string{"--image", "oci:/var/lib/allot/images/demo:latest", "--name", "demo"}, "demo", nil, nil},
	} {
		r := runFlags{gpus: 1, instances: "1"}
		fs := newJobRunCmd(&connection{}).Flags()
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		r.image, _ = fs.GetString("image")
		r.workdir, _ = fs.GetString("workdir")
		r.mounts, _ = fs.GetStringArray("mount")
		r.name, _ = fs.GetString("name")
		specs, err := runSpecs(r, fs.Args())
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		s := specs[0]
		if s.Name != tc.name || !slices.Equal(s.Command, tc.command) || s.Container == nil || s.Container.Image != tc.args[1] {
			t.Errorf("%v: job %s, command %q, container %+v", tc.args, s.Name, s.Command, s.Container)
			continue
		}
		var got []mountDoc
		for _, m := range s.Container.Mounts {
			got = append(got, mountDoc{m.Source, m.Target, m.ReadOnly})
		}
		if !slices.Equal(got, tc.mounts) {
			t.Errorf("%v: mounts %+v, want %+v", tc.args, got, tc.mounts)
		}
	}
}

// mountDoc is a mount as the test compares it.
type mountDoc struct {
	source, target string
	ro             bool
}

// TestJobRunErrors checks that a bad flag fails before any request, naming
// the flag, every problem at once.
func TestJobRunErrors(t *testing.T) {
	isolate(t)
	url, hits := stub(t, exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob})
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--gpus", "99", "--instances", "0", "--", "x"}, []string{"--gpus: must be between 0 and 64", "--instances: must be between 1 and 4096"}},
		{[]string{"--instances", "6-2", "--", "x"}, []string{"--instances: must be between min_instances (6) and 4096, got 2"}},
		{[]string{"--instances", "2-7:2", "--", "x"}, []string{"--instances: 2 does not divide max_instances - min_instances"}},
		{[]string{"--instances", "2-4", "--gpu-milli", "500", "--", "x"}, []string{"--instances: an elastic job takes whole GPUs"}},
		{[]string{"--instances", "2:8", "--", "x"}, []string{`--instances "2:8": want a count (4), or a range of instances for an elastic job: A-B or A-B:STEP (2-8:2)`}},
		{[]string{"--instances", "2-", "--", "x"}, []string{`--instances "2-": want a count`}},
		{[]string{"--array", "5-1", "--", "x"}, []string{"--array: ", "runs backwards"}},
		{[]string{"--array", "0-5000", "--", "x"}, []string{"more than 1000 indices"}},
		{[]string{"--priority", "urgnt", "--", "x"}, []string{"--priority: ", "unknown priority class"}},
		{[]string{"--priority", "standrd", "--", "x"}, []string{"did you mean standard?"}},
		{[]string{"--gpus", "0", "--", "x"}, []string{"--gpus or --cpu: a job must ask for GPUs or CPU"}},
		{[]string{"--env", "NOEQUALS", "--", "x"}, []string{"--env \"NOEQUALS\": want NAME=VALUE"}},
		{[]string{"--gpus", "1"}, []string{"requires at least 1 arg"}},
		{[]string{"--begin", "tomorrow", "--", "x"}, []string{`--begin "tomorrow": want an RFC 3339 time (2027-03-01T00:00:00Z), a date (2027-03-01), now, or a duration from now (+24h)`}},
		{[]string{"--after", "p,p", "--", "x"}, []string{`--after: "p" is listed twice`}},
		{[]string{"--timeout", "soon", "--", "x"}, []string{"--timeout: want a duration"}},
		{[]string{"--max-retries", "-1", "--", "x"}, []string{"--max-retries: must be between 0 and 1000"}},
		{[]string{"--exclude", "a,,b", "--", "x"}, []string{"--exclude: must not be empty"}},
		{[]string{"--node", "a,", "--", "x"}, []string{"--node: must not be empty"}},
		{[]string{"--after", "t", "--after-condition", "anny", "--", "x"}, []string{"--after-condition: want ok", "(did you mean any?)"}},
		{[]string{"--after-condition", "any", "--", "x"}, []string{"--after-condition: is any, but the job waits for no job"}},
		{[]string{"--begin", "-1h", "--", "x"}, []string{`--begin "-1h": want an RFC 3339 time (2027-03-01T00:00:00Z), a date (2027-03-01), now, or a duration from now (+24h)`}},
		{[]string{"--image", "Team/Train", "--", "x"}, []string{"--image: ", "lower-case"}},
		{[]string{"--image", "ghcr.io/a/b", "--mount", "/data", "--", "x"}, []string{"--mount: want SOURCE:TARGET"}},
		{[]string{"--image", "ghcr.io/a/b", "--mount", "/d:/allot/work"}, []string{"--mount: /allot/work is where allot mounts the job's own directories"}},
		{[]string{"--image", "ghcr.io/a/b", "--workdir", "rel"}, []string{"--workdir: \"rel\" must be an absolute path"}},
		{[]string{"--workdir", "/w", "--", "x"}, []string{"--image: must not be empty", "need an image"}},
	} {
		_, errOut, code := runCLI(t, append([]string{"job", "run", "--server", url, "--token", "tok"}, tc.args...)...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errOut)
			}
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests for bad flags, want none", hits.Load())
	}
}

// TestJobSubmitArray checks 'job submit --array': one job per index, in
// one batch; a bad range fails before any request.
func TestJobSubmitArray(t *testing.T) {
	isolate(t)
	path := writeJob(t, "name: sweep\ntenant: acme\nresources: {gpus_per_instance: 1}\n")
	url, hits := stub(t, exchange{method: "POST", path: "/v1/jobs/batch", status: 201,
		body: `{"jobs":[` + queuedJob + `,` + queuedJob + `]}`,
		checkBody: func(t *testing.T, body []byte) {
			var docs []spec.Document
			if err := json.Unmarshal(body, &docs); err != nil || len(docs) != 2 || docs[1].Name != "sweep[7]" {
				t.Errorf("body %s (%v), want sweep[3] and sweep[7]", body, err)
			}
		}})
	out, errOut, code := runCLI(t, "job", "submit", "-f", path, "--array", "3,7", "--server", url)
	if code != 0 || hits.Load() != 1 || out != "j-1\nj-1\n" {
		t.Fatalf("exit %d, %d requests, stdout %q: %s", code, hits.Load(), out, errOut)
	}
	_, errOut, code = runCLI(t, "job", "submit", "-f", path, "--array", "9-0", "--server", url)
	if code != ExitUsage || hits.Load() != 1 || !strings.Contains(errOut, "--array: ") {
		t.Errorf("bad --array: exit %d, %d requests: %s", code, hits.Load(), errOut)
	}
}
