package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDownWithNothingServing: down exits 0 when no PID file is there, and
// when the PID it names is gone or is another program (a PID reused after a
// crash), which it must not signal; the stale file is removed.
func TestDownWithNothingServing(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "down", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "no allot.pid") {
		t.Fatalf("no PID file: exit %d %q %q", code, out, errOut)
	}
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	pidPath := filepath.Join(dir, pidFile)
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "down", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "stale PID file is removed") {
		t.Fatalf("PID of another program: exit %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(pidPath); !os.IsNotExist(err) {
		t.Errorf("the stale PID file is still there: %v", err)
	}
	if other.ProcessState != nil || other.Process.Signal(syscallZero()) != nil {
		t.Error("down signalled a program that is not allot")
	}
	if _, _, code := runCLI(t, "down", "--data", dir, "--timeout", "0s"); code != ExitUsage {
		t.Errorf("--timeout 0s: exit %d, want %d", code, ExitUsage)
	}
}

func syscallZero() os.Signal { return syscall.Signal(0) }
