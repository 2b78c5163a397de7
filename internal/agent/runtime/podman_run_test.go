package runtime

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// probeSource is the program of the test image: it prints what the
// container lets it see, then waits for SIGTERM when asked to.
const probeSource = `package main

import (
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

func main() {
	fmt.Printf("started uid=%d gid=%d\n", os.Getuid(), os.Getgid())
	wd, _ := os.Getwd()
	fmt.Printf("cwd=%s home=%s ckpt=%s cvd=%s\n", wd, os.Getenv("HOME"), os.Getenv("ALLOT_CHECKPOINT_DIR"), os.Getenv("CUDA_VISIBLE_DEVICES"))
	var devs []string
	ents, _ := os.ReadDir("/dev")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "nvidia") {
			devs = append(devs, e.Name())
		}
	}
	sort.Strings(devs)
	fmt.Printf("devices=%s\n", strings.Join(devs, ","))
	procs := 0
	ents, _ = os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			procs++
		}
	}
	fmt.Printf("processes=%d\n", procs)
	for _, p := range os.Args[1:] {
		if _, err := os.Stat(p); err == nil {
			fmt.Printf("reached %s\n", p)
		}
	}
	if err := os.WriteFile("/allot/work/out", []byte("x"), 0o600); err != nil {
		fmt.Println("write:", err)
	}
	if os.Getenv("WAIT") != "" {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("waiting")
		<-c
		fmt.Println("got SIGTERM")
		os.Exit(7)
	}
	os.Exit(3)
}
`

// testImage builds the probe (static, no cgo) into an image podman holds,
// localhost/allot-probe:test, and returns podman's path and an OCI
// runtime that runs it here; it skips the test, saying why, where podman
// is missing, the test is not root, or no OCI runtime can run a container.
func testImage(t *testing.T) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no container runtime test")
	}
	podman, err := FindPodman()
	if err != nil {
		t.Skipf("no container runtime on this host: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("rootful podman needs root")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"allot/work", "allot/checkpoints", "dev", "proc", "sys", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(probeSource), 0o644); err != nil {
		t.Fatal(err)
	}
	goTool := filepath.Join(goruntime.GOROOT(), "bin", "go")
	build := exec.Command(goTool, "build", "-o", filepath.Join(root, "probe"), "main.go")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
	tar := filepath.Join(dir, "probe.tar")
	if out, err := exec.Command("tar", "-C", root, "-cf", tar, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if out, err := exec.Command(podman, "import", "--change", `ENTRYPOINT ["/probe"]`, tar, "localhost/allot-probe:test").CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "--force", "localhost/allot-probe:test").Run() })
	var tried []string
	for _, oci := range []string{"", "crun", "runc"} {
		if oci != "" {
			if _, err := exec.LookPath(oci); err != nil {
				continue
			}
		}
		p := &Podman{Path: podman, OCIRuntime: oci}
		args := append(p.global(), "run", "--rm", "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
			"localhost/allot-probe:test")
		out, err := exec.Command(podman, args...).CombinedOutput()
		if strings.Contains(string(out), "started uid=0") {
			return podman, oci
		}
		tried = append(tried, p.Name()+": "+strings.TrimSpace(string(out))+" ("+err.Error()+")")
	}
	t.Skipf("podman is installed, but no OCI runtime runs a container here:\n%s", strings.Join(tried, "\n"))
	return "", ""
}

// A real container: only the instance's GPUs (device nodes made for the
// test, by their minor numbers, which are not their indices), its uid, its directories at the stated paths, nothing of the
// host's other files, its environment from the env file, SIGTERM relayed
// with its grace, and the container removed.
func TestPodmanRunsContainer(t *testing.T) {
	podman, oci := testImage(t)
	dir := t.TempDir()
	dev, work, ckpt, secret := filepath.Join(dir, "dev"), filepath.Join(dir, "work"), filepath.Join(dir, "ckpt"), filepath.Join(dir, "agent-data")
	// Another job's files, beside this one's on the host, and the
	// server's admin token.
	other, token := filepath.Join(dir, "other-job"), filepath.Join(dir, "server", "admin.token")
	for _, d := range []string{dev, work, ckpt, secret, other, filepath.Dir(token)} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(other, "out"), token} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const uid = 1879048201
	for _, d := range []string{work, ckpt} {
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	// GPU device nodes: character devices like /dev/null's.
	for _, n := range []string{"nvidia0", "nvidia1", "nvidia2", "nvidiactl"} {
		if err := unix.Mknod(filepath.Join(dev, n), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Skipf("cannot make device nodes here: %v", err)
		}
	}
	p := &Podman{Path: podman, OCIRuntime: oci, DevDir: dev, NoFile: 1024}
	// The test's own process, which a job on the host could see.
	hostProc := "/proc/" + strconv.Itoa(os.Getpid())
	run := func(name string, env []string) (*exec.Cmd, *bufio.Scanner) {
		t.Helper()
		envFile := filepath.Join(dir, name+".env")
		if err := WriteEnvFile(envFile, env); err != nil {
			t.Fatal(err)
		}
		c := Container{Name: name, Image: "localhost/allot-probe:test", Args: []string{secret, "/allot/checkpoints", hostProc, other, filepath.Join(other, "out"), token}, Env: env,
			EnvFile: envFile, Workdir: "/allot/work", UID: uid, GID: uid, GPUs: []GPU{{Index: 0, Minor: 2}, {Index: 1, Minor: 0}},
			Mounts: []Mount{{Source: work, Target: "/allot/work"}, {Source: ckpt, Target: "/allot/checkpoints"}}, Network: "host", Pids: 512}
		proc, err := p.Command(c)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(proc.Argv[0], proc.Argv[1:]...)
		cmd.Env, cmd.Dir = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, proc.Dir
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		t.Cleanup(func() { _ = p.Remove(context.Background(), name) })
		return cmd, bufio.NewScanner(out)
	}
	env := []string{"HOME=/allot/work", "ALLOT_CHECKPOINT_DIR=/allot/checkpoints", "CUDA_VISIBLE_DEVICES=0,1", "PATH=/bin"}
	cmd, out := run("allot-test-probe-1", env)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for out.Scan() {
		if len(lines) == 0 {
			t.Logf("start to first line of output: %s (%s)", time.Since(start).Round(time.Millisecond), p.Name())
		}
		lines = append(lines, out.Text())
	}
	err := cmd.Wait()
	text := strings.Join(lines, "\n")
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("exit %d (%v), want the program's 3:\n%s", code, err, text)
	}
	for _, want := range []string{"started uid=1879048201 gid=1879048201", "cwd=/allot/work home=/allot/work ckpt=/allot/checkpoints cvd=0,1",
		"devices=nvidia0,nvidia2,nvidiactl", "reached /allot/checkpoints"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, p := range []string{secret, hostProc, other, token} {
		if strings.Contains(text, "reached "+p) {
			t.Errorf("the container reached %s of the host (the agent's data, a process, another job's files, the admin token):\n%s", p, text)
		}
	}
	if strings.Contains(text, "write:") {
		t.Errorf("the container could not write its own work directory:\n%s", text)
	}
	if !strings.Contains(text, "processes=2") {
		t.Errorf("the container sees other processes than its init and its program:\n%s", text)
	}
	if st, err := os.Stat(filepath.Join(work, "out")); err != nil || st.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("the job's file in its work directory: %v, want it the job's uid's", err)
	}

	// SIGTERM to podman reaches the program, which ends on its own.
	cmd, out = run("allot-test-probe-2", append(env, "WAIT=1"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for out.Scan() {
		if out.Text() == "waiting" {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var rest []string
	for out.Scan() {
		rest = append(rest, out.Text())
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 7 || !slices.Contains(rest, "got SIGTERM") {
		t.Errorf("after SIGTERM: exit %d, output %q; want 7 after the program's own SIGTERM handler", code, rest)
	}
	if err := p.Remove(context.Background(), "allot-test-probe-2"); err != nil {
		t.Error(err)
	}
	if out, _ := exec.Command(podman, "ps", "--all", "--format", "{{.Names}}").Output(); strings.Contains(string(out), "allot-test-probe") {
		t.Errorf("containers left: %s", out)
	}
}
