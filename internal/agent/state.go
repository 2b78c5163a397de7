package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/allot-dev/allot/internal/agent/launch"
)

// record is what the agent writes in DATA/state before it starts an
// instance, and again with the process once started: enough for a later
// run of the agent, which cannot wait on the process, to kill everything
// the instance left. DATA is the agent's alone (0700), so no job can plant
// one.
type record struct {
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Rank    int    `json:"rank"`
	UID     uint32 `json:"uid,omitempty"`
	Dynamic bool   `json:"dynamic,omitempty"` // UID is the job's alone
	Cgroup  string `json:"cgroup,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// StartTime is the process's start time (launch.StartTime): a PID
	// alone may have been reused since.
	StartTime uint64 `json:"start_time,omitempty"`
}

func (a *Agent) recordPath(name string) string {
	return filepath.Join(a.cfg.Data, "state", name+".json")
}

// writeRecord replaces the record atomically.
func (a *Agent) writeRecord(name string, r record) error {
	b, _ := json.Marshal(r)
	tmp := a.recordPath(name) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, a.recordPath(name))
}

func (a *Agent) removeRecord(name string) { _ = os.Remove(a.recordPath(name)) }

// fence kills every process a previous run of this agent left: those of
// each record (by cgroup; else by the job's dynamic uid; else by process
// group, only when the recorded process is still the one that started),
// then whatever is in a cgroup under the agent's. It runs before the agent
// registers, so nothing of an attempt the server may have moved elsewhere
// still runs here once the node is Ready.
func (a *Agent) fence() {
	files, _ := filepath.Glob(filepath.Join(a.cfg.Data, "state", "*"))
	for _, f := range files {
		if !strings.HasSuffix(f, ".json") {
			_ = os.Remove(f)
			continue
		}
		var r record
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			a.log.Warn("unreadable state record; removing", "file", filepath.Base(f), "err", err)
			_ = os.Remove(f)
			continue
		}
		log := a.log.With("job", r.Job, "attempt", r.Attempt, "rank", r.Rank)
		switch {
		case r.Cgroup != "":
			log.Warn("fencing an instance left by a previous run: killing its cgroup", "cgroup", r.Cgroup)
			a.killCgroup(r.Cgroup)
		case r.Dynamic && r.UID != 0:
			n, err := launch.KillUID(r.UID)
			log.Warn("fencing an instance left by a previous run: killed its uid's processes", "uid", r.UID, "killed", n, "err", err)
		case r.PID > 1:
			if st, err := launch.StartTime(r.PID); err == nil && st == r.StartTime {
				log.Warn("fencing an instance left by a previous run: killing its process group", "pid", r.PID)
				if pg, err := syscall.Getpgid(r.PID); err == nil && pg == r.PID {
					_ = syscall.Kill(-r.PID, syscall.SIGKILL)
				}
				_ = syscall.Kill(r.PID, syscall.SIGKILL)
			}
		}
		_ = os.Remove(f)
	}
	if a.cgroup == "" {
		return
	}
	ents, _ := os.ReadDir(a.cgroup)
	for _, e := range ents {
		if e.IsDir() {
			p := filepath.Join(a.cgroup, e.Name())
			a.log.Warn("fencing a cgroup left by a previous run", "cgroup", p)
			a.killCgroup(p)
		}
	}
}

func (a *Agent) killCgroup(path string) {
	c := &launch.Cgroup{Path: path}
	if err := c.Kill(); err != nil {
		a.log.Error("fence: cgroup not emptied", "cgroup", path, "err", err)
	}
	if err := c.Release(); err != nil && !errors.Is(err, os.ErrNotExist) {
		a.log.Warn("fence: cgroup not removed", "cgroup", path, "err", err)
	}
}
