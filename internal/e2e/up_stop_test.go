package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUpStopsCleanly interrupts 'allot up' (SIGINT, as Ctrl-C does) while
// a job runs: it must exit 0 within the jobs' grace, leave no job process
// behind, and start again on the same data with the job still known.
func TestUpStopsCleanly(t *testing.T) {
	needServer(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			tmp := workDir(t)
			data := filepath.Join(dir, "data")
			up := func() (*exec.Cmd, string, *syncBuffer) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				t.Cleanup(cancel)
				cmd := exec.CommandContext(ctx, bin, "up", "--data", data, "--listen", "127.0.0.1:0",
					"--fleet", filepath.Join(root, "examples/fleet.yaml"), "--tenants", filepath.Join(root, "examples/tenants.yaml"))
				cmd.Dir = root
				cmd.Env = append(cleanEnv(), "HOME="+home, "TMPDIR="+tmp)
				log := &syncBuffer{}
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				cmd.Stderr = writerFunc(func(b []byte) (int, error) { log.WriteString(string(b)); return len(b), nil })
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				found := make(chan string, 1)
				go func() {
					sc := bufio.NewScanner(out)
					for sc.Scan() {
						log.WriteString(sc.Text() + "\n")
						if m := listening.FindStringSubmatch(sc.Text()); m != nil {
							found <- m[1]
						}
					}
				}()
				select {
				case url := <-found:
					return cmd, url, log
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatalf("allot up did not listen:\n%s", log.String())
				}
				return nil, "", nil
			}
			cmd, url, log := up()
			tok, err := os.ReadFile(filepath.Join(data, "admin-token"))
			if err != nil {
				t.Fatal(err)
			}
			admin := strings.TrimSpace(string(tok))
			id := strings.TrimSpace(allotAtMust(t, url, admin, "job", "submit", "-f", writeFile(t, "s.yaml",
				"name: sleeper\ntenant: research\ncommand: [sleep, '300']\nresources: {gpu_milli: 250, gpu_models: [T4]}\n")))
			deadline := time.Now().Add(20 * time.Second)
			for len(processesIn(tmp)) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the job's process never started:\n%s", allotAt(t, url, admin, "job", "show", id).out)
				}
				time.Sleep(100 * time.Millisecond)
			}
			start := time.Now()
			_ = cmd.Process.Signal(sig)
			err = cmd.Wait()
			if err != nil {
				t.Fatalf("allot up after %v: %v (want exit 0)\n%s", sig, err, tail(log.String(), 4096))
			}
			t.Logf("allot up stopped %v after %v\n%s", sig, time.Since(start).Round(time.Millisecond), tail(log.String(), 1500))
			if !strings.Contains(log.String(), "shutting down") {
				t.Errorf("no shutdown in the log:\n%s", tail(log.String(), 2048))
			}
			checkNoJobProcesses(t, tmp)
			cmd, url, log = up()
			if out := allotAtMust(t, url, admin, "job", "show", id); !strings.Contains(out, "sleeper") {
				t.Errorf("after a restart, job show:\n%s", out)
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("second allot up: %v\n%s", err, tail(log.String(), 2048))
			}
		})
	}
}
