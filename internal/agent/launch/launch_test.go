package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func spec(t *testing.T, script string) Spec {
	dir := t.TempDir()
	for _, d := range []string{"ckpt", "attempt-2"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return Spec{JobID: "j1", Attempt: 2, Command: []string{"/bin/sh", "-c", script}, GPUs: []string{"3", "5"},
		GPUMilli: 1000, CheckpointDir: filepath.Join(dir, "ckpt"), Dir: filepath.Join(dir, "attempt-2"),
		LogPath: filepath.Join(dir, "logs", "attempt-2.log"), Grace: time.Second}
}

func wait(t *testing.T, p *Process, d time.Duration) Exit {
	t.Helper()
	select {
	case <-p.Done():
		return p.Exit()
	case <-time.After(d):
		t.Fatalf("attempt still running after %s", d)
	}
	return Exit{}
}

func TestEnviron(t *testing.T) {
	s := Spec{JobID: "j", Attempt: 1, GPUs: []string{"GPU-a", "GPU-b"}, GPUMilli: 250, CheckpointDir: "/ck",
		ResumeFrom: "/ck/step-100", Rank: 1, WorldSize: 2, MasterAddr: "10.0.0.1", MasterPort: 29500,
		Dir: "/work/j/attempt-1", Env: map[string]string{"FOO": "bar", "ALLOT_JOB_ID": "spoofed", "ALLOT_RESUME_FROM": "/elsewhere"}}
	env := Environ(s)
	for _, want := range []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/work/j/attempt-1",
		"LANG=C.UTF-8", "FOO=bar", "ALLOT_JOB_ID=j", "ALLOT_ATTEMPT=1", "CUDA_VISIBLE_DEVICES=GPU-a,GPU-b",
		"ALLOT_CHECKPOINT_DIR=/ck", "ALLOT_RESUME_FROM=/ck/step-100", "ALLOT_RANK=1", "ALLOT_WORLD_SIZE=2",
		"ALLOT_MASTER_ADDR=10.0.0.1", "ALLOT_MASTER_PORT=29500", "ALLOT_GPU_MILLI=250", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment lacks %s: %v", want, env)
		}
	}
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "ALLOT_GPU_MEMORY_MIB=") }) {
		t.Errorf("a memory budget without the GPU's memory: %v", env)
	}
	// With the GPU's memory known, a fraction gets its share as advice and
	// as MPS's limit; a job's own value does not count.
	s.GPUMemoryMiB, s.Env["ALLOT_GPU_MEMORY_MIB"] = 16384, "99999"
	env = Environ(s)
	for _, want := range []string{"ALLOT_GPU_MEMORY_MIB=4096", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment lacks %s: %v", want, env)
		}
	}
	whole := s
	whole.GPUMilli = 1000
	for _, kv := range Environ(whole) {
		if strings.HasPrefix(kv, "ALLOT_GPU_MEMORY_MIB=") || strings.HasPrefix(kv, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=") {
			t.Errorf("a whole GPU's job got %s", kv)
		}
	}
	s.ResumeFrom, s.WorldSize = "", 1
	s.Env["ALLOT_RANK"] = "7"
	env = Environ(s)
	for _, kv := range env {
		if strings.HasPrefix(kv, "ALLOT_RESUME_FROM=") || strings.HasPrefix(kv, "ALLOT_RANK=") {
			t.Errorf("unexpected %s", kv)
		}
	}
}

func TestExitCodeAndLog(t *testing.T) {
	s := spec(t, `echo "job=$ALLOT_JOB_ID gpus=$CUDA_VISIBLE_DEVICES pwd=$(pwd)"; exit 3`)
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	e := wait(t, p, 10*time.Second)
	if e.Outcome != Exited || e.ExitCode != 3 {
		t.Fatalf("exit = %+v", e)
	}
	log, err := os.ReadFile(s.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "job=j1 gpus=3,5 pwd=" + s.Dir; !strings.Contains(string(log), want) {
		t.Fatalf("log %q lacks %q", log, want)
	}
}

func TestStopWithinGrace(t *testing.T) {
	p, err := Start(spec(t, `trap 'echo saving; exit 0' TERM; while :; do sleep 0.05; done`))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	p.Stop(5 * time.Second)
	e := wait(t, p, 10*time.Second)
	if e.Outcome != Stopped || e.Killed {
		t.Fatalf("exit = %+v, want stopped by SIGTERM without SIGKILL", e)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	p, err := Start(spec(t, `trap '' TERM; while :; do sleep 0.05; done`))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	p.Stop(300 * time.Millisecond)
	e := wait(t, p, 10*time.Second)
	if e.Outcome != Stopped || !e.Killed || e.Signal != "killed" {
		t.Fatalf("exit = %+v, want SIGKILL after the grace", e)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("killed after %s, before the grace", took)
	}
}

func TestTimeout(t *testing.T) {
	s := spec(t, `sleep 30`)
	s.Timeout, s.Grace = 300*time.Millisecond, time.Second
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	if e := wait(t, p, 10*time.Second); e.Outcome != TimedOut {
		t.Fatalf("exit = %+v, want TimedOut", e)
	}
}

func TestProcessGroupIsKilled(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	p, err := Start(spec(t, `sleep 30 & echo $! > `+pidFile+`; wait`))
	if err != nil {
		t.Fatal(err)
	}
	var pid string
	for i := 0; i < 100 && pid == ""; i++ {
		b, _ := os.ReadFile(pidFile)
		pid = strings.TrimSpace(string(b))
		time.Sleep(20 * time.Millisecond)
	}
	p.Stop(time.Second)
	wait(t, p, 10*time.Second)
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat("/proc/" + pid); err == nil {
		if b, _ := os.ReadFile("/proc/" + pid + "/stat"); !strings.Contains(string(b), ") Z") {
			t.Fatalf("child %s of the attempt outlived it", pid)
		}
	}
}

func TestStartErrors(t *testing.T) {
	s := spec(t, "true")
	s.Command = nil
	if _, err := Start(s); err == nil {
		t.Fatal("empty command started")
	}
	s.Command = []string{"/nonexistent/binary"}
	if _, err := Start(s); err == nil || !strings.Contains(err.Error(), "/nonexistent/binary") {
		t.Fatalf("missing binary: %v", err)
	}
}

// A command named allot runs the agent's own executable; everything else
// is left to exec and PATH.
func TestProgram(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"allot": self, "python": "python", "/usr/bin/allot": "/usr/bin/allot",
		"./allot": "./allot", "allot-agent": "allot-agent", "": ""} {
		if got, err := Program(name, ""); err != nil || got != want {
			t.Errorf("Program(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if got, _ := Program("allot", "/work/bin/allot"); got != "/work/bin/allot" {
		t.Errorf("Program(allot) with an installed copy = %q, want the copy", got)
	}
}

// Start runs [allot, ...] as the running executable (here, this test
// binary, told to run no test) although no allot is on the PATH, and the
// process sees allot as its argv[0].
func TestStartRunsAllotAsItself(t *testing.T) {
	if p, err := exec.LookPath("allot"); err == nil {
		t.Skipf("an allot is on PATH (%s); this test needs one that is not", p)
	}
	s := spec(t, "")
	s.Command = []string{"allot", "-test.run=^$", "-test.v"}
	p, err := Start(s)
	if err != nil {
		t.Fatalf("Start(allot …): %v", err)
	}
	if e := wait(t, p, 30*time.Second); e.Outcome != Exited || e.ExitCode != 0 {
		t.Fatalf("exit %+v", e)
	}
	log, _ := os.ReadFile(s.LogPath)
	if !strings.Contains(string(log), "PASS") {
		t.Errorf("log %q: the test binary did not run", log)
	}
}
