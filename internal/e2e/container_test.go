package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
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
	t.Cleanup(func() {
		os.RemoveAll(images)
		// podman named the image it read after the layout's path.
		_ = exec.Command("podman", "rmi", "--force", "localhost"+images).Run()
	})
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

// TestExampleEndpointsUnderUpInImages creates every endpoint of
// examples/endpoints in its image variant (the demo image; an endpoint
// without a command runs the image's entrypoint, the demo server, as it
// runs allot demo serve on the host): each keeps min_replicas replicas
// running, in containers, and a replica answers requests.
func TestExampleEndpointsUnderUpInImages(t *testing.T) {
	needServer(t)
	rt := containerRuntime(t)
	dir := t.TempDir()
	images, err := os.MkdirTemp("", "allot-e2e-images-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(images)
		// podman named the image it read after the layout's path.
		_ = exec.Command("podman", "rmi", "--force", "localhost"+images).Run()
	})
	r := allotAt(t, "", "", "demo", "image", "build", "--dir", images)
	if r.code != 0 {
		t.Fatalf("allot demo image build: exit %d\n%s%s", r.code, r.out, r.err)
	}
	image := strings.TrimSpace(r.out)
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
	files, err := filepath.Glob(filepath.Join(root, "examples/endpoints/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example endpoints: %v", err)
	}
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	replicas := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		variant := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(variant, append(b, []byte("\nimage: "+image+"\n")...), 0o600); err != nil {
			t.Fatal(err)
		}
		allotMust(t, url, admin, "endpoint", "create", "-f", variant)
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		ep := endpointWatch{t: t, url: url, tok: admin, name: name}
		e := ep.waitFor("min_replicas replicas run", 60*time.Second, func(e client.Endpoint) bool {
			return len(e.Replicas) > 0 && runningReplicas(e) >= e.Desired
		})
		var spec struct {
			Image string `json:"image"`
		}
		if err := json.Unmarshal(e.Spec, &spec); err != nil || spec.Image != image {
			t.Errorf("%s: spec image %q (%v), want %s", name, spec.Image, err, image)
		}
		job := e.Replicas[0].Job
		var replicaURL string
		for deadline := time.Now().Add(20 * time.Second); replicaURL == ""; time.Sleep(300 * time.Millisecond) {
			if m := listening.FindStringSubmatch(allotAt(t, url, admin, "job", "logs", job).out); m != nil {
				replicaURL = m[1]
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: replica %s never said where it listens:\n%s", name, job, allotAt(t, url, admin, "job", "logs", job).out)
			}
		}
		res, err := http.Get(replicaURL + "/")
		if err != nil {
			t.Fatalf("%s: the replica in its container does not answer: %v", name, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: the replica answered %s", name, res.Status)
		}
		t.Logf("%s: %d replicas running; %s answers", name, runningReplicas(e), replicaURL)
		replicas += runningReplicas(e)
	}
	out, err := exec.Command("podman", "ps", "--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		t.Fatalf("podman ps: %v\n%s", err, out)
	}
	containers := 0
	for _, n := range strings.Fields(string(out)) {
		if strings.HasPrefix(n, "allot-") {
			containers++
		}
	}
	if containers < replicas {
		t.Errorf("%d replicas running, %d containers of allot's:\n%s", replicas, containers, out)
	}
}
