package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/demoimage"
)

// isolationProbe is the program of the image TestContainerIsolationPodman
// runs: it prints its uid, how many processes it sees, its environment,
// and which of the paths it is given it can reach.
const isolationProbe = `package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("uid=%d\n", os.Getuid())
	procs := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if c := e.Name()[0]; c >= '0' && c <= '9' {
			procs++
		}
	}
	fmt.Printf("processes=%d\n", procs)
	for _, kv := range os.Environ() {
		fmt.Printf("env %s\n", kv)
	}
	for _, p := range os.Args[1:] {
		if _, err := os.Stat(p); err == nil {
			fmt.Printf("reached %s\n", p)
		}
	}
}
`

// A job in a real container (podman, through the agent) reaches none of
// the agent's data directory and state, the server's admin token, another
// job's files and processes, nor any of it through its environment; it
// runs as its own uid and sees its own processes alone. Skipped, saying
// why, where podman is missing, the test is not root, or no OCI runtime
// runs a container here.
func TestContainerIsolationPodman(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no container runtime test")
	}
	podman, err := runtime.FindPodman()
	if err != nil {
		t.Skipf("no container runtime on this host: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("rootful podman needs root")
	}
	// The probe's image, at a lower-case path (podman names a layout's
	// image after it).
	dir, err := os.MkdirTemp("", "allot-isolation-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(isolationProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(filepath.Join(goruntime.GOROOT(), "bin", "go"), "build", "-o", filepath.Join(dir, "probe"), "main.go")
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
	img, err := demoimage.Build(filepath.Join(dir, "image"), "probe", filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &runtime.Podman{Path: podman, NoFile: 1024, NProc: 1024}
	id, err := p.Pull(ctx, img.Ref(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "--force", id).Run() })
	var tried []string
	for _, oci := range []string{"", "crun", "runc"} {
		p.OCIRuntime = oci
		var args []string
		if oci != "" {
			args = []string{"--runtime", oci}
		}
		args = append(args, "run", "--rm", "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", id)
		out, err := exec.Command(podman, args...).CombinedOutput()
		if err == nil && strings.Contains(string(out), "uid=0") {
			tried = nil
			break
		}
		tried = append(tried, p.Name()+": "+strings.TrimSpace(string(out)))
	}
	if tried != nil {
		t.Skipf("podman is installed, but no OCI runtime runs a container here:\n%s", strings.Join(tried, "\n"))
	}

	l := newLab(t)
	cfg := l.config(t, "h100-01")
	cfg.Runtime, cfg.ImageDirs = p, []string{dir}
	runAgent(t, ctx, cfg)
	// Another job, on the host, with a file of its own and a process.
	other := l.submit(t, "name: other\ntenant: team\ncommand: [sh, -c, 'echo mine > \"$HOME/mine\"; exec sleep 30']\nresources: {gpus_per_instance: 1}\n")
	l.waitState(t, other, "Running")
	otherDir := filepath.Join(cfg.Work, "jobs", jobDirName(other))
	var otherPid int
	waitFor(t, "the other job's file and process", 5*time.Second, func() bool {
		if _, err := os.Stat(filepath.Join(otherDir, "attempt-1", "mine")); err != nil {
			return false
		}
		recs, _ := filepath.Glob(filepath.Join(cfg.Data, "state", "*.json"))
		for _, path := range recs {
			var rec record
			if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &rec) == nil && rec.Job == other {
				otherPid = rec.PID
			}
		}
		return otherPid > 0
	})
	token := filepath.Join(l.dir, "admin-token")
	if _, err := os.Stat(token); err != nil {
		t.Fatal(err)
	}
	paths := []string{cfg.Data, filepath.Join(cfg.Data, "state"), token, l.dir, otherDir, filepath.Join(otherDir, "attempt-1", "mine"),
		"/proc/" + strconv.Itoa(otherPid), "/proc/" + strconv.Itoa(os.Getpid()), "/allot/work"}
	doc := "name: probe\ntenant: team\nimage: " + img.Ref() + "\ncommand: [allot]\nargs: [" + strings.Join(paths, ", ") + "]\nresources: {gpus_per_instance: 1}\n"
	probe := l.submit(t, doc)
	l.waitState(t, probe, "Succeeded")
	var log bytes.Buffer
	if err := l.cl.Logs(context.Background(), probe, 1, false, &log); err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if !strings.Contains(out, "reached /allot/work") || !strings.Contains(out, "processes=2") {
		t.Errorf("the probe did not run as a container of its own (its work directory, its init and itself):\n%s", out)
	}
	if strings.Contains(out, "uid=0\n") {
		t.Errorf("the probe ran as root:\n%s", out)
	}
	for _, p := range paths[:len(paths)-1] {
		if strings.Contains(out, "reached "+p+"\n") {
			t.Errorf("the container reached %s:\n%s", p, out)
		}
	}
	for _, secret := range []string{l.admin, cfg.Data, "ALLOT_TOKEN"} {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "env ") && strings.Contains(line, secret) {
				t.Errorf("the container's environment holds %q: %s", secret, line)
			}
		}
	}
	if _, err := l.cl.Cancel(context.Background(), other); err != nil {
		t.Error(err)
	}
}
