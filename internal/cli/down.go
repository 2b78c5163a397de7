package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// The process that serves a data directory writes its PID to DATA/allot.pid
// (writePIDFile) and removes it when it stops, so that 'allot down' can stop
// it: 'go run ./cmd/allot up &' makes the shell's job the go command, and
// 'kill %1' stops that one only, leaving the server and its jobs running.

const pidFile = "allot.pid"

// writePIDFile records this process as the one serving dir; the function
// it returns removes the record if it is still this process's.
func writePIDFile(dir string) (func(), error) {
	path := filepath.Join(dir, pidFile)
	me := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(path, []byte(me+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("record the server's PID: %w", err)
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == me {
			os.Remove(path)
		}
	}, nil
}

func newDownCmd() *cobra.Command {
	var (
		data    string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "down [--data DIR] [--timeout D]",
		Short: "Stop the allot up (or server) that serves a data directory",
		Long: `down stops the control plane that 'allot up' or 'allot server' runs on --data
(default ./allot-data, as up's): it reads the process from DATA/allot.pid,
sends it SIGTERM — the same as Ctrl-C: its agents stop their jobs, each
within its checkpoint grace, and the store is closed — and waits until it
has exited, at most --timeout. It exits 0 once the process is gone, and
also when nothing serves the directory (a PID file left by a crash is
removed). 'kill %1' after 'go run ./cmd/allot up &' stops the go command
only; down stops the server itself.`,
		Example: `  go run ./cmd/allot up &
  go run ./cmd/allot down
  allot down --data /tmp/allot --timeout 2m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return Usage(fmt.Errorf("--timeout %s: want a positive duration", timeout))
			}
			return down(cmd, data, timeout)
		},
	}
	cmd.Flags().StringVar(&data, "data", "./allot-data", "the data directory the server runs on")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for it to stop")
	return cmd
}

func down(cmd *cobra.Command, data string, timeout time.Duration) error {
	path := filepath.Join(data, pidFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(cmd.OutOrStdout(), "nothing serves %s (no %s)\n", data, pidFile)
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("%s: not a process ID: %q", path, strings.TrimSpace(string(b)))
	}
	if !serving(pid) {
		os.Remove(path)
		fmt.Fprintf(cmd.OutOrStdout(), "nothing serves %s (process %d is gone or is no allot server now; the stale PID file is removed)\n", data, pid)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop process %d: %w", pid, err)
	}
	start := time.Now()
	for serving(pid) {
		if time.Since(start) > timeout {
			return exitError{code: ExitFailure, err: fmt.Errorf("process %d still runs %s after SIGTERM (its jobs may still be stopping); wait longer with --timeout, or kill -9 %d", pid, timeout, pid)}
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "stopped process %d in %s\n", pid, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// serving reports whether pid is a live allot process: it exists (a zombie
// counts as gone) and, where /proc tells, its command line runs allot up
// or allot server — not some other program that got the PID after a crash.
func serving(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc here: trust kill
	}
	if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
		return false // exited, not yet reaped by its parent
	}
	line, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true
	}
	args := strings.Split(strings.TrimRight(string(line), "\x00"), "\x00")
	if len(args) < 2 || !strings.Contains(filepath.Base(args[0]), "allot") {
		return false
	}
	for _, a := range args[1:] {
		if a == "up" || a == "server" {
			return true
		}
	}
	return false
}
