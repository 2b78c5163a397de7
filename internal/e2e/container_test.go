package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	images, image := demoImage(t, "e2e")
	url, admin := startUp(t, t.TempDir(), "--runtime", rt, "--image-dir", images)
	allotMust(t, url, admin, "job", "submit", "-f", filepath.Join(root, "examples/jobs"), "--set", "image="+image)
	last := awaitExampleOutcomes(t, url, admin, 120*time.Second)
	checkExampleOutcomes(t, last)
	ran := 0
	for _, j := range last {
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
	containers, out := allotContainers(t)
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
	images, image := demoImage(t, "")
	url, admin := startUp(t, dir, "--runtime", rt, "--image-dir", images)
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
	if containers, out := allotContainers(t); containers < replicas {
		t.Errorf("%d replicas running, %d containers of allot's:\n%s", replicas, containers, out)
	}
}

// demoImage builds the demo image of the allot under test ('allot demo
// image build', with tag unless empty) in a directory it removes, with
// what podman read of it, when the test ends, and returns the directory
// and the image's reference as the command printed it.
func demoImage(t *testing.T, tag string) (dir, image string) {
	t.Helper()
	// podman reads a local image only from a lower-case path, which
	// t.TempDir's is not.
	dir, err := os.MkdirTemp("", "allot-e2e-images-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		// podman named the image it read after the layout's path.
		_ = exec.Command("podman", "rmi", "--force", "localhost"+dir).Run()
	})
	args := []string{"demo", "image", "build", "--dir", dir}
	if tag != "" {
		args = append(args, "--tag", tag)
	}
	r := allotAt(t, "", "", args...)
	if r.code != 0 {
		t.Fatalf("allot demo image build: exit %d\n%s%s", r.code, r.out, r.err)
	}
	image = strings.TrimSpace(r.out)
	if want := "oci:" + dir + ":" + tag; (tag != "" && image != want) || !strings.HasPrefix(image, "oci:"+dir+":") {
		t.Fatalf("demo image build printed %q, want oci:%s:%s", image, dir, tag)
	}
	return dir, image
}

// allotContainers counts the containers of allot's that podman runs, with
// podman's list for a failure's message.
func allotContainers(t *testing.T) (int, []byte) {
	t.Helper()
	out, err := exec.Command("podman", "ps", "--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		t.Fatalf("podman ps: %v\n%s", err, out)
	}
	n := 0
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "allot-") {
			n++
		}
	}
	return n, out
}
