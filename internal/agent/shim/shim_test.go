package shim

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
)

// TestMain lets this test binary serve as the shim it starts: Start runs
// the executable of the process that calls it.
func TestMain(m *testing.M) {
	TakeOver()
	os.Exit(m.Run())
}

// lab is a shim's files in a fresh directory.
type lab struct {
	dir string
	s   Spec
}

// newLab is a spec for script (sh -c), its files under a fresh directory,
// its lease there and renewed now.
func newLab(t *testing.T, script string) *lab {
	t.Helper()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	l := &lab{dir: dir, s: Spec{
		Launch: launch.Spec{JobID: "j", Attempt: 1, Command: []string{"/bin/sh", "-c", script}, Dir: work,
			LogPath: filepath.Join(dir, "log"), CheckpointDir: work, Grace: 5 * time.Second},
		Exit: filepath.Join(dir, "exit.json"), Order: filepath.Join(dir, "order.json"), Lease: filepath.Join(dir, "lease"),
	}}
	if err := os.WriteFile(l.s.Lease, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return l
}

// start starts the lab's shim and makes sure it ends with the test.
func (l *lab) start(t *testing.T) *Handle {
	t.Helper()
	var recorded int
	h, err := Start(l.s, "", func(pid int, _ uint64) error { recorded = pid; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if recorded != h.Pid() || recorded <= 0 {
		t.Errorf("recorded shim %d, handle says %d", recorded, h.Pid())
	}
	t.Cleanup(func() {
		if !ended(h) {
			_ = h.Kill(false)
			wait(t, h, 10*time.Second)
		}
	})
	return h
}

// wait waits for the shim to end and returns the Exit it wrote.
func wait(t *testing.T, h *Handle, within time.Duration) Exit {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(within):
		t.Fatalf("shim %d still runs after %s", h.Pid(), within)
	}
	e, err := h.Exit()
	if err != nil {
		t.Fatalf("no exit written: %v", err)
	}
	return e
}

// waitLog waits until the job's log holds want.
func (l *lab) waitLog(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(l.s.Launch.LogPath)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %q lacks %q", b, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ended(h *Handle) bool {
	select {
	case <-h.Done():
		return true
	default:
		return false
	}
}

// A shim starts the job, copies its output into the log, and writes how
// it ended; the job gets no descriptor but its own three, and the shim
// keeps none of its starter's output open.
func TestShimRunsJob(t *testing.T) {
	l := newLab(t, `echo "leader $$"; exec sleep 0.5`)
	h := l.start(t)
	pid, start := h.Job()
	if pid <= 0 || start == 0 {
		t.Fatalf("job's leader %d started at %d", pid, start)
	}
	l.waitLog(t, "leader "+strconv.Itoa(pid))
	for _, fd := range []string{"1", "2"} {
		if to, err := os.Readlink("/proc/" + strconv.Itoa(h.Pid()) + "/fd/" + fd); err != nil || to != "/dev/null" {
			t.Errorf("the shim's fd %s is %q (%v), want /dev/null: whoever reads the agent's output would wait for it", fd, to, err)
		}
	}
	for i := 0; i < 100; i++ { // the shell's own descriptors go with its exec
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) == "sleep\n" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fd := range fds {
		names = append(names, fd.Name())
	}
	if strings.Join(names, " ") != "0 1 2" {
		t.Errorf("the job holds descriptors %v, want its own three", names)
	}
	e := wait(t, h, 10*time.Second)
	if e.Outcome != launch.Exited || e.ExitCode != 0 || e.Killed || e.Fenced || e.StartError != "" {
		t.Errorf("exit %+v, want Exited with code 0", e)
	}
	l.s.Launch.Command = []string{"/bin/sh", "-c", "exit 3"}
	if e := wait(t, l.start(t), 10*time.Second); e.ExitCode != 3 || e.Outcome != launch.Exited {
		t.Errorf("exit %+v, want Exited with code 3", e)
	}
}

// A job that cannot start leaves an Exit with code 127 and why, and Start
// says why too.
func TestShimCannotStart(t *testing.T) {
	l := newLab(t, "")
	l.s.Launch.Command = []string{"/nonexistent/train"}
	_, err := Start(l.s, "", func(int, uint64) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/train") {
		t.Fatalf("Start: %v, want an error naming the program", err)
	}
	e, rerr := ReadExit(l.s.Exit)
	if rerr != nil || e.ExitCode != 127 || !strings.Contains(e.StartError, "/nonexistent/train") {
		t.Errorf("exit %+v (%v), want 127 and why", e, rerr)
	}
}

// A failing record stops everything: the shim never gets its spec, so no
// job starts.
func TestShimNotRecorded(t *testing.T) {
	l := newLab(t, `echo ran > "$HOME/ran"`)
	_, err := Start(l.s, "", func(int, uint64) error { return errors.New("disk full") })
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Start: %v, want the record's error", err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(l.s.Launch.Dir, "ran")); err == nil {
		t.Error("the job ran although its shim could not be recorded")
	}
}

// Orders: SIGTERM at once, SIGKILL at the deadline; a later order brings
// the deadline nearer, never further; an order's Lost mark stays.
func TestShimOrders(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		orders       []time.Duration
		killed       bool
		within       time.Duration
	}{
		{"StopsOnTERM", `trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, []time.Duration{time.Minute}, false, 5 * time.Second},
		{"KillsAfterGrace", `trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done`, []time.Duration{300 * time.Millisecond}, true, 5 * time.Second},
		{"NearerDeadline", `trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done`, []time.Duration{time.Hour, 0}, true, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t, tc.script)
			h := l.start(t)
			l.waitLog(t, "ready")
			for i, g := range tc.orders {
				if err := h.Stop(g, i == 0); err != nil {
					t.Fatal(err)
				}
				l.waitLog(t, "got TERM")
			}
			e := wait(t, h, tc.within)
			if e.Outcome != launch.Stopped || e.Killed != tc.killed || e.Fenced {
				t.Errorf("exit %+v, want Stopped, killed %v", e, tc.killed)
			}
			if !h.Order().Lost {
				t.Error("the first order's Lost mark did not stay")
			}
		})
	}
}

// A shim fences its job (SIGTERM, its grace, SIGKILL) and says so when
// its agent stops renewing the lease for the node timeout, or when it is
// sent SIGTERM itself (the host shuts down); one whose lease is renewed
// runs on.
func TestShimFences(t *testing.T) {
	for _, tc := range []struct {
		name           string
		renew, sigterm bool
	}{{"LeaseGone", false, false}, {"LeaseRenewed", true, false}, {"SIGTERM", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t, `trap 'echo got TERM; exit 1' TERM; echo ready; while :; do sleep 0.05; done`)
			l.s.NodeTimeout = 400 * time.Millisecond
			h := l.start(t)
			l.waitLog(t, "ready")
			if tc.sigterm {
				if err := syscall.Kill(h.Pid(), syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) && !ended(h) {
				if tc.renew {
					now := time.Now()
					_ = os.Chtimes(l.s.Lease, now, now)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if tc.renew && !tc.sigterm {
				if ended(h) {
					t.Fatal("the job ended although its lease was renewed")
				}
				return
			}
			if e := wait(t, h, 5*time.Second); !e.Fenced || e.Outcome != launch.Stopped || e.Killed {
				t.Errorf("exit %+v, want Fenced and Stopped by SIGTERM", e)
			}
			l.waitLog(t, "got TERM")
		})
	}
}

// A handle on a shim another process started (Attach) sees it end and
// gives it orders; one on a shim gone is done at once.
func TestShimAttach(t *testing.T) {
	l := newLab(t, `trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
	own := l.start(t)
	l.waitLog(t, "ready")
	h := Attach(own.Pid(), own.Start(), l.s.Exit, l.s.Order)
	defer h.Close()
	if ended(h) {
		t.Fatal("an attached handle on a running shim is done")
	}
	if err := h.Stop(time.Minute, false); err != nil {
		t.Fatal(err)
	}
	if e := wait(t, h, 10*time.Second); e.Outcome != launch.Stopped || e.Killed {
		t.Errorf("exit %+v, want Stopped", e)
	}
	if gone := Attach(own.Pid(), own.Start()+1, l.s.Exit, l.s.Order); !ended(gone) {
		t.Error("a handle on a process with another start time is not done")
	}
}
