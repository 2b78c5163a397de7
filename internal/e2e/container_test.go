package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// containerRuntime is the --runtime 'allot up' runs images with here:
// runc where installed (crun refuses hosts whose cgroups are hybrid, as
// this project's test machines are), else crun; it skips the test where
// podman is absent or not root.
func containerRuntime(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("no container runtime: podman is not installed (.ci/run installs it from Debian)")
	}
	if os.Geteuid() != 0 {
		t.Skip("rootful podman needs root")
	}
	for _, r := range []string{"runc", "crun"} {
		if _, err := exec.LookPath(r); err == nil {
			return r
		}
	}
	t.Skip("podman is installed without runc or crun")
	return ""
}

// TestExampleJobsUnderUpInImages is TestExampleJobsUnderUp with every job
// of examples/jobs run from the demo image that 'allot demo image build'
// makes of the allot binary under test: each comes to the same outcome,
// the ones that run in containers of podman.
func TestExampleJobsUnderUpInImages(t *testing.T) {
	needServer(t)
	rt := containerRuntime(t)
	dir := t.TempDir()
	// podman reads a local image only from a lower-case path, which
	// t.TempDir's is not.
	images, err := os.MkdirTemp("", "allot-e2e-images-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(images) })
	r := allotAt(t, "", "", "demo", "image", "build", "--dir", images, "--tag", "e2e")
	if r.code != 0 {
		t.Fatalf("allot demo image build: exit %d\n%s%s", r.code, r.out, r.err)
	}
	image := strings.TrimSpace(r.out)
	if image != "oci:"+images+":e2e" {
		t.Fatalf("demo image build printed %q, want oci:%s:e2e", image, images)
	}
	log := &syncBuffer{}
	data := filepath.Join(dir, "data")
	url, admin, stop, err := startServerArgs(data, log, "up", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "examples/fleet.yaml"), "--tenants", filepath.Join(root, "examples/tenants.yaml"),
		"--log-level", "warn", "--runtime", rt, "--image-dir", images)
	if err != nil {
		t.Fatalf("start allot up: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("server log (last 8 KiB):\n%s", tail(log.String(), 8<<10))
		}
	})
	allotMust(t, url, admin, "job", "submit", "-f", filepath.Join(root, "examples/jobs"), "--set", "image="+image)

	var last []job
	deadline := time.Now().Add(120 * time.Second)
	for {
		var page struct{ Jobs []job }
		if err := json.Unmarshal([]byte(allotMust(t, url, admin, "job", "list", "--all", "-o", "json")), &page); err != nil {
			t.Fatalf("job list -o json: %v", err)
		}
		last = page.Jobs
		settled := len(last) == len(exampleOutcomes)
		for _, j := range last {
			if want, ok := exampleOutcomes[j.Name]; !ok || !outcomeHolds(want, j.State, j.Reason) {
				settled = false
			}
		}
		if settled || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	sort.Slice(last, func(a, b int) bool { return last[a].Name < last[b].Name })
	ran := 0
	for _, j := range last {
		want, ok := exampleOutcomes[j.Name]
		t.Logf("%-15s %-9s %s %s", j.Name, j.State, j.Reason, j.Detail)
		if !ok || !outcomeHolds(want, j.State, j.Reason) {
			t.Errorf("%s is %s (%s: %s); want %s %s", j.Name, j.State, j.Reason, j.Detail, strings.Join(want.states, " or "), want.reason)
		}
		if j.State == "Running" || j.State == "Succeeded" {
			ran++
			var spec struct {
				Spec struct {
					Image string `json:"image"`
				} `json:"spec"`
			}
			if err := json.Unmarshal([]byte(allotMust(t, url, admin, "job", "show", j.ID, "-o", "json")), &spec); err != nil {
				t.Fatal(err)
			}
			if spec.Spec.Image != image {
				t.Errorf("%s ran without its image: spec image %q", j.Name, spec.Spec.Image)
			}
		}
	}
	if len(last) != len(exampleOutcomes) {
		t.Errorf("%d jobs, want %d", len(last), len(exampleOutcomes))
	}
	// The jobs that run do so in containers: podman lists one per running
	// instance (each is removed once it ended).
	out, err := exec.Command("podman", "ps", "--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		t.Fatalf("podman ps: %v\n%s", err, out)
	}
	containers := 0
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "allot-") {
			containers++
		}
	}
	running := 0
	for _, j := range last {
		if j.State == "Running" {
			running++
		}
	}
	if running == 0 || containers < running {
		t.Errorf("%d jobs Running (%d ran), %d containers of allot's running:\n%s", running, ran, containers, out)
	}
	allotMust(t, url, admin, "job", "cancel", "--state", "Queued,Running")
}
