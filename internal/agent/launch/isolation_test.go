package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testUID is a uid no account has, from the agent's default dynamic range.
const testUID = 1879048192 + 4242

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// readPid waits for a pid written to path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	for i := 0; i < 250; i++ {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && strings.HasSuffix(string(b), "\n") {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func killAtEnd(t *testing.T, pid *int) {
	t.Cleanup(func() {
		if *pid > 1 && alive(*pid) {
			_ = syscall.Kill(*pid, syscall.SIGKILL)
		}
	})
}

// needRoot skips a test that switches users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a process under another uid needs root; the agent runs jobs as itself when it is not root")
	}
}

// asUID makes s's directories the uid's and runs s as it.
func asUID(t *testing.T, s *Spec, uid uint32) {
	t.Helper()
	for _, d := range []string{filepath.Dir(s.Dir), s.Dir, s.CheckpointDir} {
		if err := os.Chown(d, int(uid), int(uid)); err != nil {
			t.Fatal(err)
		}
	}
	// t.TempDir's parents are 0700: let the uid through them.
	for d := filepath.Dir(filepath.Dir(s.Dir)); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	s.Credential = &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}
}

func TestEnvironHasNothingOfTheAgent(t *testing.T) {
	t.Setenv("ALLOT_TOKEN", "canary-admin-token")
	t.Setenv("AGENT_SECRET_CANARY", "canary-secret")
	s := spec(t, `env`)
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, p, 10*time.Second)
	b, _ := os.ReadFile(s.LogPath)
	for _, leak := range []string{"canary-admin-token", "canary-secret", "ALLOT_TOKEN"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the job's environment holds %q of the agent's:\n%s", leak, b)
		}
	}
	if !strings.Contains(string(b), "HOME="+s.Dir+"\n") {
		t.Errorf("HOME is not the attempt's directory %s:\n%s", s.Dir, b)
	}
}

func TestRunsAsItsUID(t *testing.T) {
	needRoot(t)
	secret := filepath.Join(t.TempDir(), "agent-secret")
	if err := os.WriteFile(secret, []byte("canary"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := spec(t, `echo "ids=$(id -u):$(id -g):$(id -G)"; cat `+secret+` || echo cannot-read; pwd; touch "$ALLOT_CHECKPOINT_DIR/ok" && echo wrote`)
	asUID(t, &s, testUID)
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, p, 10*time.Second)
	b, _ := os.ReadFile(s.LogPath)
	want := fmt.Sprintf("ids=%d:%d:%d\n", testUID, testUID, testUID)
	for _, w := range []string{want, "cannot-read", s.Dir, "wrote"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("log lacks %q:\n%s", w, b)
		}
	}
	if strings.Contains(string(b), "canary") {
		t.Errorf("the job read a root-only file:\n%s", b)
	}
}

// testCgroup returns a fresh cgroup path under the host's cgroup v2 mount,
// or skips.
func testCgroup(t *testing.T) string {
	t.Helper()
	mnt := CgroupMount()
	if mnt == "" {
		t.Skip("no cgroup v2 mount on this host: the agent falls back to process groups")
	}
	parent := filepath.Join(mnt, fmt.Sprintf("allot-launch-test-%d", os.Getpid()))
	if err := os.Mkdir(parent, 0o755); err != nil && !os.IsExist(err) {
		t.Skipf("cgroup v2 at %s is not writable here (%v): the agent falls back to process groups", mnt, err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(parent) })
	return filepath.Join(parent, strings.ReplaceAll(t.Name(), "/", "_"))
}

// orphan is a script whose leader double-forks a setsid child that writes
// its pid to the file $1 and sleeps; the leader then runs tail.
const orphan = `(setsid sh -c 'echo $$ > "$0"; exec sleep 60' "$1" &); `

func TestCgroupKillsSetsidChild(t *testing.T) {
	for _, tc := range []struct {
		name, tail string
		stop       bool
	}{
		{"LeaderExits", `while [ ! -s "$1" ]; do sleep 0.02; done; exit 0`, false},
		{"Stopped", `trap '' TERM; while :; do sleep 0.05; done`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testCgroup(t)
			pidFile := filepath.Join(t.TempDir(), "child")
			s := spec(t, "")
			s.Command = []string{"/bin/sh", "-c", orphan + tc.tail, "sh", pidFile}
			s.Tracker = &Cgroup{Path: path}
			p, err := Start(s)
			if err != nil {
				t.Fatal(err)
			}
			child := readPid(t, pidFile)
			killAtEnd(t, &child)
			if tc.stop {
				p.Stop(200 * time.Millisecond)
			}
			e := wait(t, p, 10*time.Second)
			if alive(child) {
				t.Fatalf("setsid child %d outlived its attempt (%+v)", child, e)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("cgroup %s left behind: %v", path, err)
			}
		})
	}
}

func TestKillCgroupOfAnotherRun(t *testing.T) {
	// What a restarted agent does: it did not start the processes, it
	// only knows the cgroup.
	path := testCgroup(t)
	pidFile := filepath.Join(t.TempDir(), "child")
	s := spec(t, orphan+`sleep 60`)
	s.Command = append(s.Command, "sh", pidFile)
	c := &Cgroup{Path: path}
	s.Tracker = c
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	child := readPid(t, pidFile)
	killAtEnd(t, &child)
	if err := KillCgroup(path); err != nil {
		t.Fatal(err)
	}
	if alive(child) {
		t.Fatalf("child %d alive after KillCgroup", child)
	}
	wait(t, p, 10*time.Second)
}

func TestProcessGroupAndUIDSweep(t *testing.T) {
	// The fallback without cgroups: the group dies with its leader, a
	// setsid child does not; sweeping the job's dynamic uid catches it.
	needRoot(t)
	pidFile := filepath.Join(t.TempDir(), "child")
	grpFile := filepath.Join(t.TempDir(), "grp")
	s := spec(t, "")
	s.Command = []string{"/bin/sh", "-c", orphan + `sleep 60 & echo $! > "$2"; wait`, "sh", pidFile, grpFile}
	asUID(t, &s, testUID+1)
	// The uid writes the pids.
	for _, f := range []string{pidFile, grpFile} {
		if err := os.Chmod(filepath.Dir(f), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	s.Tracker = &ProcessGroup{}
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	child, member := readPid(t, pidFile), readPid(t, grpFile)
	killAtEnd(t, &child)
	p.Stop(time.Second)
	wait(t, p, 10*time.Second)
	time.Sleep(50 * time.Millisecond)
	if alive(member) {
		t.Errorf("group member %d outlived the attempt", member)
	}
	if !alive(child) {
		t.Fatalf("setsid child %d died with the group: the test no longer shows what the uid sweep is for", child)
	}
	n, err := KillUID(testUID + 1)
	if err != nil || n == 0 {
		t.Fatalf("KillUID: %d, %v", n, err)
	}
	if alive(child) {
		t.Fatalf("child %d of uid %d alive after KillUID", child, testUID+1)
	}
	if _, err := KillUID(uint32(os.Getuid())); err == nil {
		t.Error("KillUID accepted the agent's own uid")
	}
}

func TestStartTime(t *testing.T) {
	a, err := StartTime(os.Getpid())
	if err != nil || a == 0 {
		t.Fatalf("StartTime(self) = %d, %v", a, err)
	}
	if b, _ := StartTime(os.Getpid()); b != a {
		t.Fatalf("StartTime changed: %d then %d", a, b)
	}
	if _, err := StartTime(1 << 30); err == nil {
		t.Fatal("StartTime of no process succeeded")
	}
}

func TestParseCgroup2Mount(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"Hybrid", "30 25 0:26 / /sys/fs/cgroup ro shared:9 - tmpfs tmpfs ro,mode=755\n" +
			"31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n" +
			"32 30 0:28 / /sys/fs/cgroup/cpu rw shared:11 - cgroup cgroup rw,cpu\n", "/sys/fs/cgroup/unified"},
		{"Unified", "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup"},
		{"Escaped", `40 24 0:30 / /mnt/my\040cgroup rw - cgroup2 none rw` + "\n", "/mnt/my cgroup"},
		{"None", "32 30 0:28 / /sys/fs/cgroup/cpu rw shared:11 - cgroup cgroup rw,cpu\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseCgroup2Mount(strings.NewReader(tc.in)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzParseCgroup2Mount(f *testing.F) {
	f.Add("31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n")
	f.Add(`1 2 3 / /a\04 - cgroup2`)
	f.Fuzz(func(t *testing.T, s string) { _ = parseCgroup2Mount(strings.NewReader(s)) })
}
