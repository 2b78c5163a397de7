package agent

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fakeCgroup makes a cgroup v2 tree of plain files: the root offering
// controllers and delegating subtree to its children, allot/ and the
// agent's cgroup below it offering what their parent delegates.
func fakeCgroup(t *testing.T, offered, subtree string) (mount, agent string) {
	t.Helper()
	mount = t.TempDir()
	agent = filepath.Join(mount, "allot", "n1-abcd")
	if err := os.MkdirAll(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(dir, file, s string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(mount, "cgroup.controllers", offered)
	write(mount, "cgroup.subtree_control", subtree)
	for _, d := range []string{filepath.Dir(agent), agent} {
		write(d, "cgroup.controllers", subtree)
		write(d, "cgroup.subtree_control", "")
	}
	return mount, agent
}

// The agent turns the pids controller on below its cgroup when the host's
// root delegates it, and never touches the root.
func TestEnablePids(t *testing.T) {
	_, agent := fakeCgroup(t, "cpu memory pids", "cpu memory pids")
	if err := enablePids(agent); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(agent), agent} {
		if !hasController(filepath.Join(d, "cgroup.subtree_control"), "pids") {
			t.Errorf("%s: pids not enabled for its children", d)
		}
	}
	mount, agent := fakeCgroup(t, "cpu memory pids", "cpu memory")
	if err := enablePids(agent); err == nil {
		t.Error("enabled pids below a root that does not delegate it")
	}
	if b, _ := os.ReadFile(filepath.Join(mount, "cgroup.subtree_control")); string(b) != "cpu memory" {
		t.Errorf("the root's subtree_control changed to %q", b)
	}
}

// Where the cgroup cannot bound a job's processes, a root agent whose
// jobs run under uids of their own sets RLIMIT_NPROC to the limit; jobs
// that share a uid are not bounded so.
func TestLimitPids(t *testing.T) {
	var set []uint64
	old := setNProc
	setNProc = func(n uint64) error { set = append(set, n); return nil }
	t.Cleanup(func() { setNProc = old })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, withPids := fakeCgroup(t, "pids", "pids")
	_, without := fakeCgroup(t, "cpu", "cpu")
	for _, tc := range []struct {
		name   string
		limit  int64
		cgroup string
		ident  identity
		want   pidsBound
		nproc  []uint64
	}{
		{"cgroup", 64, withPids, asDynamic, pidsCgroup, nil},
		{"rlimit", 64, without, asDynamic, pidsRlimit, []uint64{64}},
		{"no cgroup, default", 0, "", asDynamic, pidsRlimit, []uint64{DefaultPidsLimit}},
		{"shared uid", 64, "", asRunAs, pidsNone, nil},
		{"own user", 64, "", asSelf, pidsNone, nil},
		{"off", -1, withPids, asDynamic, pidsUnbound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set = nil
			a := &Agent{cfg: Config{PidsLimit: tc.limit}, cgroup: tc.cgroup, ident: tc.ident, log: quiet}
			if got := a.limitPids(); got != tc.want || !slices.Equal(set, tc.nproc) {
				t.Errorf("bound by %v, RLIMIT_NPROC set to %v; want %v, %v", got, set, tc.want, tc.nproc)
			}
		})
	}
}

// An instance may add to its job's logs here what the job's earlier
// attempts left of the limit; nothing once they hold it all.
func TestLogLimitPerJob(t *testing.T) {
	dir := t.TempDir()
	a := &Agent{cfg: Config{JobLogLimit: 1000}}
	if got := a.logLimit(dir); got != 1000 {
		t.Errorf("no logs yet: %d, want 1000", got)
	}
	_ = os.WriteFile(filepath.Join(dir, "attempt-1.log"), make([]byte, 600), 0o600)
	if got := a.logLimit(dir); got != 400 {
		t.Errorf("600 bytes logged: %d, want 400", got)
	}
	_ = os.WriteFile(filepath.Join(dir, "attempt-2.log"), make([]byte, 500), 0o600)
	if got := a.logLimit(dir); got >= 0 {
		t.Errorf("1100 bytes logged: %d, want a negative limit (keep nothing)", got)
	}
	if got := (&Agent{cfg: Config{JobLogLimit: -1}}).logLimit(dir); got != 0 {
		t.Errorf("no limit: %d, want 0", got)
	}
}
