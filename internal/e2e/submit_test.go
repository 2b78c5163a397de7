package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// run runs 'allot job run' against url: the connection flags go before
// the command, since what follows the command is the command's.
func jobRun(t *testing.T, url, token string, args ...string) result {
	t.Helper()
	return allotAt(t, url, "", append([]string{"job", "run", "--token", token}, args...)...)
}

// TestSubmitRefusesWhatCanNeverRun submits, through the CLI, jobs that
// can never run on the example fleet: each is refused with exit status 2,
// its reason and what would fit; a job that merely must wait is accepted.
func TestSubmitRefusesWhatCanNeverRun(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	for _, tc := range []struct {
		name string
		r    func() result
		want []string
	}{
		{"larger than the fleet", func() result {
			return jobRun(t, serverURL, research, "--instances", "100", "--gpus", "8", "--gpu-model", "H100", "--", "train")
		}, []string{"allot: SkuNotAvailable: ", "room for ", "of 100 instances of 8×H100", "the most that exists: ", "eastus "}},
		{"no InfiniBand for T4", func() result {
			return allot(t, research, "job", "submit", "-f", filepath.Join(root, "examples/refused/t4-ring.yaml"))
		}, []string{"allot: TopologyUnsatisfiable: ", "no infiniband cluster", "clusters with infiniband: ", "eastus/eastus-ib1 (H100)"}},
		{"wrong case of a GPU model", func() result {
			return jobRun(t, serverURL, research, "--gpus", "8", "--gpu-model", "h100", "--", "train")
		}, []string{"SkuNotAvailable", `no node has GPU model "h100" (did you mean H100?)`, "(field resources.gpu_models[0])"}},
		{"no zero noise", func() result {
			return jobRun(t, serverURL, research, "--gpus", "8", "--gpu-model", "B200", "--", "train")
		}, []string{"8×B200 per instance"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			if r.code != 2 {
				t.Errorf("exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.err, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.err)
				}
			}
			if strings.Contains(r.err, "0 mCPU") || strings.Contains(r.err, "0 MiB") {
				t.Errorf("stderr names CPU or memory the job did not ask for:\n%s", r.err)
			}
		})
	}
	// Over HTTP: 400 with the code.
	status, body := send(t, serverURL, "POST", "/v1/jobs", research, map[string]any{"name": "big",
		"resources": map[string]any{"instance_count": 100, "gpus_per_instance": 8, "gpu_models": []string{"H100"}}})
	var e struct{ Code, Message string }
	if _ = json.Unmarshal(body, &e); status != 400 || e.Code != "SkuNotAvailable" {
		t.Errorf("POST 100×8 H100: %d %s, want 400 SkuNotAvailable", status, body)
	}
	// A job that must wait (its reservation's window is in 2027) is accepted.
	id := strings.TrimSpace(must(t, adminToken, "job", "submit", "-f", filepath.Join(root, "examples/jobs/acme-2027.yaml")))
	must(t, adminToken, "job", "cancel", id)
}

// TestValidationReportsEveryError submits a file with problems in several
// fields of several documents: all are reported at once, each with its
// file, line and field, and the name meant is suggested.
func TestValidationReportsEveryError(t *testing.T) {
	needServer(t)
	path := writeFile(t, "bad.yaml", `name: a
tenant: research
command: [x]
resources:
  gpus_per_instance: 99
priority: standrd
---
name: b
tenant: research
command: [x]
resoures: {gpus_per_instance: 1}
placement: {interconnect: InfiniBand}
`)
	r := allot(t, tokenFor(t, "research"), "job", "submit", "-f", path)
	if r.code != 2 {
		t.Errorf("exit %d, want 2: %s", r.code, r.err)
	}
	for _, w := range []string{"bad.yaml:5:", "resources.gpus_per_instance: must be between 0 and 64",
		"bad.yaml:6:", "priority: ", "did you mean standard?", "bad.yaml:11:", "resoures: unknown field", "did you mean resources?",
		"bad.yaml:12:", "placement.interconnect", "did you mean infiniband?"} {
		if !strings.Contains(r.err, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.err)
		}
	}
}

// neverReasons are the reasons a submit is refused with.
var neverReasons = []string{"SkuNotAvailable", "ResidencyForbidden", "TopologyUnsatisfiable", "QuotaExceeded"}

// TestPlanAndSubmitAgree runs 'allot plan' and 'allot job submit' on every
// example job, alone: a job submit refuses is pending in the plan with the
// same reason and detail, and a job submit accepts is not pending with a
// reason that means never.
func TestPlanAndSubmitAgree(t *testing.T) {
	needServer(t)
	files, err := filepath.Glob(filepath.Join(root, "examples/jobs/*.yaml"))
	refusedFiles, err2 := filepath.Glob(filepath.Join(root, "examples/refused/*.yaml"))
	files = append(files, refusedFiles...)
	if err != nil || err2 != nil || len(files) == 0 || len(refusedFiles) == 0 {
		t.Fatalf("no example jobs: %v %v", err, err2)
	}
	refused := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		for n := 0; ; n++ {
			var doc yaml.Node
			if dec.Decode(&doc) != nil {
				break
			}
			out, err := yaml.Marshal(&doc)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "\nafter:") {
				continue // a step of a pipeline alone names a job that is not there
			}
			one := writeFile(t, "job.yaml", string(out))
			var plan struct {
				Pending []struct{ Job, Reason, Detail string }
				Binds   []struct{ Job string }
			}
			p := allot(t, "", "plan", "--fleet", filepath.Join(root, "examples/fleet.yaml"),
				"--tenants", filepath.Join(root, "examples/tenants.yaml"), "--jobs", one, "-o", "json")
			if p.code != 0 || json.Unmarshal([]byte(p.out), &plan) != nil {
				t.Fatalf("%s #%d: plan exit %d: %s%s", file, n, p.code, p.out, p.err)
			}
			s := allot(t, adminToken, "job", "submit", "-f", one)
			name := filepath.Base(file)
			switch {
			case s.code == 0:
				for _, pd := range plan.Pending {
					if slices.Contains(neverReasons, pd.Reason) {
						t.Errorf("%s: submit accepted %s, which plan says is %s: %s", name, pd.Job, pd.Reason, pd.Detail)
					}
				}
				must(t, adminToken, "job", "cancel", strings.TrimSpace(s.out))
			case len(plan.Pending) != 1:
				t.Errorf("%s: submit refused (%s) a job plan does not hold pending: %+v", name, s.err, plan)
			default:
				refused++
				pd := plan.Pending[0]
				if want := "allot: " + pd.Reason + ": " + pd.Detail; !strings.HasPrefix(s.err, want) {
					t.Errorf("%s: submit says\n  %s\nplan says\n  %s", name, strings.TrimSpace(s.err), want)
				}
			}
		}
	}
	if refused == 0 {
		t.Error("no example job is refused at submit; the test compares nothing")
	}
}

// TestDirectorySubmitAllOrNothing submits a directory in which one job can
// never run: nothing is submitted and the job is named; without it, every
// job is.
func TestDirectorySubmitAllOrNothing(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	dir := t.TempDir()
	stamp := time.Now().Format("150405.000")
	files := map[string]string{
		"a.yaml": "name: dir-a-" + stamp + "\ntenant: research\ncommand: [x]\nresources: {gpu_milli: 100, gpu_models: [T4]}\n",
		"b.yaml": "name: dir-b-" + stamp + "\ntenant: research\ncommand: [x]\narray: 0-1\nresources: {gpu_milli: 100, gpu_models: [T4]}\n",
		"c.yaml": "name: dir-c-" + stamp + "\ntenant: research\ncommand: [x]\nresources: {instance_count: 2, gpus_per_instance: 4, gpu_models: [T4]}\nplacement: {interconnect: infiniband}\n",
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ours := func() int {
		var l struct{ Jobs []job }
		if err := json.Unmarshal([]byte(must(t, research, "job", "list", "--all", "-o", "json")), &l); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, j := range l.Jobs {
			if strings.Contains(j.Name, stamp) && j.State != "Canceled" {
				n++
			}
		}
		return n
	}
	r := allot(t, research, "job", "submit", "-f", dir)
	if r.code != 2 || r.out != "" || !strings.Contains(r.err, "allot: job 3 dir-c-"+stamp+": TopologyUnsatisfiable: ") ||
		!strings.Contains(r.err, "none was submitted") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant 2, nothing, and job 3 named", r.code, r.out, r.err)
	}
	if n := ours(); n != 0 {
		t.Fatalf("%d jobs submitted by a refused directory", n)
	}
	if err := os.Remove(filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	ids := strings.Fields(must(t, research, "job", "submit", "-f", dir))
	if len(ids) != 3 || ours() != 3 {
		t.Fatalf("submitted %v, want 3 jobs (a, b[0], b[1])", ids)
	}
	if j := showJob(t, research, ids[2]); j.Name != "dir-b-"+stamp+"[1]" {
		t.Errorf("third job is %q, want dir-b-%s[1]", j.Name, stamp)
	}
	must(t, research, append([]string{"job", "cancel"}, ids[0])...)
	must(t, research, "job", "cancel", ids[1])
	must(t, research, "job", "cancel", ids[2])
}

// TestJobRunArrayUnderUp runs a job array inline under 'allot up', whose
// agents run the commands: each member sees its index as
// ALLOT_ARRAY_INDEX. A job without a command is refused there.
func TestJobRunArrayUnderUp(t *testing.T) {
	needServer(t)
	url, admin := startUp(t, t.TempDir())
	r := jobRun(t, url, admin, "--tenant", "research", "--array", "0-2", "--gpu-milli", "250", "--gpu-model", "T4",
		"--name", "idx", "--", "sh", "-c", "echo index=$ALLOT_ARRAY_INDEX")
	ids := strings.Fields(r.out)
	if r.code != 0 || len(ids) != 3 {
		t.Fatalf("job run --array 0-2: exit %d, IDs %v\n%s", r.code, ids, r.err)
	}
	for i, id := range ids {
		deadline := time.Now().Add(30 * time.Second)
		var j job
		for {
			_ = json.Unmarshal([]byte(allotAtMust(t, url, admin, "job", "show", id, "-o", "json")), &j)
			if j.State == "Succeeded" || j.State == "Failed" || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if want := []string{"idx[0]", "idx[1]", "idx[2]"}[i]; j.State != "Succeeded" || j.Name != want {
			t.Errorf("%s: %s %s (%s), want %s Succeeded", id, j.Name, j.State, j.Detail, want)
			continue
		}
		if log := allotAtMust(t, url, admin, "job", "logs", id); !strings.Contains(log, "index="+[]string{"0", "1", "2"}[i]+"\n") {
			t.Errorf("%s log lacks index=%d:\n%s", id, i, log)
		}
	}
	status, body := send(t, url, "POST", "/v1/jobs", admin, map[string]any{"name": "nocmd", "tenant": "research",
		"resources": map[string]any{"gpu_milli": 250, "gpu_models": []string{"T4"}}})
	var e struct{ Code, Field string }
	if _ = json.Unmarshal(body, &e); status != 400 || e.Code != "InvalidSpec" || e.Field != "command" {
		t.Errorf("a job without a command under up: %d %s, want 400 InvalidSpec naming command", status, body)
	}
}

// TestJobRunInline submits a command without a job file with a tenant's
// token: the job takes the token's tenant and the program's name.
func TestJobRunInline(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	r := jobRun(t, serverURL, research, "--gpu-milli", "100", "--gpu-model", "T4", "--", "python", "eval.py", "--gpus", "2")
	id := strings.TrimSpace(r.out)
	if r.code != 0 || id == "" {
		t.Fatalf("job run: exit %d, %q\n%s", r.code, r.out, r.err)
	}
	var j struct {
		Name, Tenant string
		Spec         struct{ Command []string }
	}
	if err := json.Unmarshal([]byte(must(t, research, "job", "show", id, "-o", "json")), &j); err != nil {
		t.Fatal(err)
	}
	if j.Name != "python" || j.Tenant != "research" || strings.Join(j.Spec.Command, " ") != "python eval.py --gpus 2" {
		t.Errorf("job %+v, want python of research running the whole command", j)
	}
	must(t, research, "job", "cancel", id)
}
