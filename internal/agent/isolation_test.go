package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/client"
)

func TestConfine(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "jobs", "j", "checkpoints")
	other := filepath.Join(root, "jobs", "k", "checkpoints")
	for _, d := range []string{filepath.Join(dir, "sub"), other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []struct{ name, to string }{
		{"out", other}, {"in", filepath.Join(dir, "sub")}, {"file-out", "/etc/passwd"}, {"dangling", "/nonexistent/x"},
	} {
		if err := os.Symlink(l.to, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"Relative", "step-1", filepath.Join(dir, "step-1")},
		{"RelativeClean", "./sub/../step-2/", filepath.Join(dir, "step-2")},
		{"Absolute", filepath.Join(dir, "sub", "x"), filepath.Join(dir, "sub", "x")},
		{"LinkInside", "in/x", filepath.Join(dir, "in", "x")},
		{"DotDot", "../../k/checkpoints/x", ""},
		{"AbsoluteOutside", filepath.Join(other, "x"), ""},
		{"Etc", "/etc/passwd", ""},
		{"PrefixTrick", dir + "-evil/x", ""},
		{"LinkedDirOutside", "out/x", ""},
		{"LinkedFileOutside", "file-out", ""},
		{"Dangling", "dangling", ""},
		{"TheDirItself", ".", ""},
		{"Empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := confine(dir, tc.path)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("confine(%q) = %q, want it refused", tc.path, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("confine(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
}

func TestReadMarker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the dir to read
		want  string
		fails bool
	}{
		{"Plain", func(t *testing.T, d string) string { write(t, filepath.Join(d, "CHECKPOINT"), " step-1\n"); return d }, "step-1", false},
		{"None", func(t *testing.T, d string) string { return d }, "", false},
		{"MarkerIsALink", func(t *testing.T, d string) string {
			write(t, filepath.Join(d, "secret"), "s3cret")
			link(t, filepath.Join(d, "secret"), filepath.Join(d, "CHECKPOINT"))
			return d
		}, "", true},
		{"DirIsALink", func(t *testing.T, d string) string {
			real := filepath.Join(d, "real")
			os.Mkdir(real, 0o700)
			write(t, filepath.Join(real, "CHECKPOINT"), "x")
			link(t, real, filepath.Join(d, "ck"))
			return filepath.Join(d, "ck")
		}, "", true},
		{"TooLong", func(t *testing.T, d string) string {
			write(t, filepath.Join(d, "CHECKPOINT"), strings.Repeat("a", 5000))
			return d
		}, "", true},
		{"Fifo", func(t *testing.T, d string) string {
			if err := syscall.Mkfifo(filepath.Join(d, "CHECKPOINT"), 0o600); err != nil {
				t.Skip(err)
			}
			return d
		}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readMarker(tc.setup(t, t.TempDir()))
			if (err != nil) != tc.fails || got.path != tc.want || (got.path != "") == got.mod.IsZero() {
				t.Fatalf("readMarker = %q at %v, %v; want %q (fails: %v)", got.path, got.mod, err, tc.want, tc.fails)
			}
		})
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, to, at string) {
	t.Helper()
	if err := os.Symlink(to, at); err != nil {
		t.Fatal(err)
	}
}

func TestParseUIDRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want UIDRange
		ok   bool
	}{
		{"1879048192-2013265919", DefaultUIDRange, true},
		{"100000-100009", UIDRange{100000, 100009}, true},
		{"1000-2000", UIDRange{}, false},
		{"200000-100000", UIDRange{}, false},
		{"100000-4294967295", UIDRange{}, false},
		{"100000", UIDRange{}, false},
		{"a-b", UIDRange{}, false},
	} {
		got, err := ParseUIDRange(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseUIDRange(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseUIDRange(f *testing.F) {
	f.Add("1879048192-2013265919")
	f.Add("-")
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseUIDRange(s); err == nil && (r.First > r.Last || r.First < 65536 || r.Last == ^uint32(0)) {
			t.Fatalf("accepted %v", r)
		}
	})
}

func TestAcquireUID(t *testing.T) {
	r := UIDRange{First: 200000, Last: 200001} // two uids: the second job must probe past the first
	a1 := acquireUID(r, "test-uid-a")
	a2 := acquireUID(r, "test-uid-a") // another rank of the same job
	b := acquireUID(r, "test-uid-b")
	if a1 != a2 {
		t.Errorf("one job got uids %d and %d", a1, a2)
	}
	if b == a1 || b < r.First || b > r.Last {
		t.Errorf("jobs a and b got %d and %d in %v", a1, b, r)
	}
	if _, last := releaseUID("test-uid-a"); last {
		t.Error("released the uid with an instance still holding it")
	}
	if uid, last := releaseUID("test-uid-a"); !last || uid != a1 {
		t.Errorf("release = %d, %v", uid, last)
	}
	releaseUID("test-uid-b")
	if again := acquireUID(r, "test-uid-a"); again != a1 {
		t.Errorf("the job's uid moved from %d to %d with nothing in the way", a1, again)
	}
	releaseUID("test-uid-a")
}

// isolated is an agent of node with its directories made, started on no
// server: enough to run fence.
func isolated(t *testing.T, data string) *Agent {
	t.Helper()
	a := &Agent{cfg: Config{Node: "fence-test", Data: data, Work: workDir(t), UIDs: DefaultUIDRange},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), procs: map[key]*proc{}, finished: map[key]bool{}}
	if err := a.isolate(); err != nil {
		t.Fatal(err)
	}
	return a
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// sleeper starts sleep 60 in a process group of its own and reaps it.
func sleeper(t *testing.T, cred *syscall.Credential) int {
	t.Helper()
	c := exec.Command("sleep", "60")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go c.Wait()
	t.Cleanup(func() { _ = c.Process.Kill() })
	return c.Process.Pid
}

// Records without a live shim (here: an agent before shims wrote them) are
// fenced as the agent starts, before it registers.
func TestFenceKillsWhatRecordsName(t *testing.T) {
	data := t.TempDir()
	a := isolated(t, data)
	rec := func(name string, r record) {
		if err := a.writeRecord(name, r); err != nil {
			t.Fatal(err)
		}
	}
	// By process group, when the process is still the one recorded.
	pg := sleeper(t, nil)
	st, _ := launch.StartTime(pg)
	rec("j.1.0", record{Job: "j", Attempt: 1, PID: pg, StartTime: st})
	// A recorded PID now taken by another process: spared.
	reused := sleeper(t, nil)
	now, _ := launch.StartTime(reused)
	rec("j.2.0", record{Job: "j", Attempt: 2, PID: reused, StartTime: now - 1000}) // started 10 s before it did
	// A planted pid file where the old agent read them: never read.
	planted := sleeper(t, nil)
	if err := os.MkdirAll(filepath.Join(data, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(data, "run", "x.1.0.pid"), strconv.Itoa(planted))
	var dyn, inCgroup int
	if os.Geteuid() == 0 {
		// By dynamic uid: also what left the process group.
		dyn = sleeper(t, &syscall.Credential{Uid: DefaultUIDRange.First + 77, Gid: DefaultUIDRange.First + 77, Groups: []uint32{}})
		rec("d.1.0", record{Job: "d", Attempt: 1, UID: DefaultUIDRange.First + 77, Dynamic: true})
	}
	if a.cgroup != "" {
		// By cgroup, recorded or not.
		c := &launch.Cgroup{Path: filepath.Join(a.cgroup, "c.1.0")}
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		if err := c.Start(cmd); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
		inCgroup = cmd.Process.Pid
		t.Cleanup(func() { _ = cmd.Process.Kill() })
	}
	a.survey()
	time.Sleep(50 * time.Millisecond)
	for _, c := range []struct {
		what string
		pid  int
		want bool
	}{
		{"recorded process group", pg, false},
		{"reused PID", reused, true},
		{"process named by a planted pid file", planted, true},
		{"process of a recorded dynamic uid", dyn, false},
		{"process in a cgroup of the agent", inCgroup, false},
	} {
		if c.pid != 0 && alive(c.pid) != c.want {
			t.Errorf("%s (pid %d): alive %v after fence, want %v", c.what, c.pid, !c.want, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(data, "state", "*")); len(left) != 0 {
		t.Errorf("records left after fence: %v", left)
	}
	if a.cgroup != "" {
		if ents, _ := os.ReadDir(a.cgroup); len(ents) > 0 {
			// Only the cgroup interface files may remain.
			for _, e := range ents {
				if e.IsDir() && filepath.Join(a.cgroup, e.Name()) != a.shims {
					t.Errorf("cgroup %s left after fence", e.Name())
				}
			}
		}
		_ = syscall.Rmdir(a.shims)
		_ = syscall.Rmdir(a.cgroup)
	}
}

func TestJobsRunIsolated(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("jobs get uids of their own only when the agent runs as root")
	}
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.runAgent(t, ctx, "h100-01")
	const script = `echo "uid=$(id -u) gid=$(id -g) groups=$(id -G) home=$HOME pwd=$(pwd)"; ls "` + "$0" + `" && echo listed-data; true`
	ids := map[string]string{}
	for _, name := range []string{"a", "b"} {
		doc, _ := json.Marshal(map[string]any{"name": name, "tenant": "team",
			"command": []string{"sh", "-c", script, cfg.Data}, "resources": map[string]int{"gpus_per_instance": 1}})
		ids[name] = l.submit(t, string(doc))
	}
	uids := map[string]bool{}
	for name, id := range ids {
		l.waitState(t, id, "Succeeded")
		var log strings.Builder
		if err := l.cl.Logs(context.Background(), id, 1, false, &log); err != nil {
			t.Fatal(err)
		}
		attempt := filepath.Join(cfg.Work, "jobs", jobDirName(id), "attempt-1")
		var uid uint32
		for _, f := range strings.Fields(log.String()) {
			if v, ok := strings.CutPrefix(f, "uid="); ok {
				n, _ := strconv.ParseUint(v, 10, 32)
				uid = uint32(n)
			}
		}
		if uid < DefaultUIDRange.First || uid > DefaultUIDRange.Last {
			t.Fatalf("job %s ran as uid %d, outside %v:\n%s", name, uid, DefaultUIDRange, log.String())
		}
		uids[strconv.Itoa(int(uid))] = true
		u := strconv.Itoa(int(uid))
		if want := "gid=" + u + " groups=" + u + " home=" + attempt + " pwd=" + attempt; !strings.Contains(log.String(), want) {
			t.Errorf("job %s: log lacks %q:\n%s", name, want, log.String())
		}
		if strings.Contains(log.String(), "listed-data") {
			t.Errorf("job %s listed the agent's data directory", name)
		}
		for _, c := range []struct {
			path string
			uid  uint32
			mode os.FileMode
		}{
			{cfg.Work, 0, 0o711}, {filepath.Join(cfg.Work, "jobs"), 0, 0o711}, {filepath.Join(cfg.Work, "jobs", jobDirName(id)), uid, 0o700},
			{filepath.Join(cfg.Work, "jobs", jobDirName(id), "checkpoints"), uid, 0o700}, {attempt, uid, 0o700}, {cfg.Data, 0, 0o700},
			{filepath.Join(cfg.Data, "logs", id, "attempt-1.log"), 0, 0o600},
		} {
			st, err := os.Stat(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Sys().(*syscall.Stat_t).Uid; got != c.uid || st.Mode().Perm() != c.mode {
				t.Errorf("%s: owner %d mode %v, want %d %v", c.path, got, st.Mode().Perm(), c.uid, c.mode)
			}
		}
	}
	if len(uids) != 2 {
		t.Errorf("two jobs ran under uids %v, want two different ones", uids)
	}
}

func TestAgentStopsInstancesWhenServerUnreachable(t *testing.T) {
	l := newLab(t)
	var down atomic.Bool
	target, _ := url.Parse(l.cl.Server())
	rp := httputil.NewSingleHostReverseProxy(target)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer ps.Close()
	cl, _ := client.New(ps.URL, l.admin)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	cfg.Client, cfg.NodeTimeout = cl, time.Second
	runAgent(t, ctx, cfg)
	id := l.submit(t, `name: fenced
tenant: team
command: ["sh", "-c", 'echo $$ > "$ALLOT_CHECKPOINT_DIR/pid"; exec sleep 60']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 1s}
`)
	l.waitState(t, id, "Running")
	pidFile := filepath.Join(cfg.Work, "jobs", jobDirName(id), "checkpoints", "pid")
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(50 * time.Millisecond)
	}
	if !alive(pid) {
		t.Fatalf("job not running (pid %d)", pid)
	}
	down.Store(true)
	start := time.Now()
	for alive(pid) {
		if time.Since(start) > 8*time.Second {
			t.Fatalf("instance still running %s after the server became unreachable (node timeout 1s)", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The timeout runs from the last heartbeat that got through, at most
	// one heartbeat interval before the server went away.
	if d := time.Since(start); d < cfg.NodeTimeout-cfg.Heartbeat {
		t.Errorf("instance stopped %s after the server became unreachable, before the node timeout", d)
	}
	down.Store(false)
	_, _ = l.cl.Cancel(context.Background(), id)
}

// The agent's executable is installed where a job's user can run it, even
// when the agent runs from a directory only its own user may enter (as
// 'go run' does); installing twice keeps the first.
func TestInstallSelf(t *testing.T) {
	work := workDir(t)
	path, err := installSelf(work)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(work, "bin", "allot") {
		t.Fatalf("installed at %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o005 != 0o005 {
		t.Fatalf("installed copy %v, mode %v: want runnable by any user", err, fi.Mode())
	}
	if d, err := os.Stat(filepath.Dir(path)); err != nil || d.Mode().Perm() != 0o711 {
		t.Fatalf("bin directory %v: want 0711", d.Mode())
	}
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, want) {
		t.Fatal("the installed executable differs from the agent's")
	}
	again, err := installSelf(work)
	if err != nil || again != path {
		t.Fatalf("second install: %s, %v", again, err)
	}
	if fi2, _ := os.Stat(again); !os.SameFile(fi, fi2) {
		t.Error("a second install replaced the first")
	}
}
