package agent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/agent/shim"
	"github.com/allot-dev/allot/internal/client"
)

// record is what the agent writes in DATA/state/NAME.json before it starts
// an instance, and again with its shim and its process once started: enough
// for a later run of the agent, which is not their parent, to adopt the
// instance or to kill everything it left. DATA is the agent's alone (0700),
// so no job can plant one. Beside it lie the shim's files: NAME.exit.json
// (how the job ended) and NAME.order.json (the agent's stop order).
type record struct {
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Rank    int    `json:"rank"`
	UID     uint32 `json:"uid,omitempty"`
	Dynamic bool   `json:"dynamic,omitempty"` // UID is the job's alone
	Cgroup  string `json:"cgroup,omitempty"`
	// PID is the job's leader. StartTime is its start time
	// (launch.StartTime): a PID alone may have been reused since.
	PID       int    `json:"pid,omitempty"`
	StartTime uint64 `json:"start_time,omitempty"`
	// Shim and ShimStart name the instance's shim. A record without one
	// (an agent before shims wrote it) is fenced, never adopted.
	Shim      int    `json:"shim,omitempty"`
	ShimStart uint64 `json:"shim_start,omitempty"`
	// GPUs (indices), Log and Checkpoints are what a later run needs to
	// adopt the instance whatever its configuration is then.
	GPUs        []int  `json:"gpus,omitempty"`
	Log         string `json:"log,omitempty"`
	Checkpoints string `json:"checkpoints,omitempty"`
	// Marker is the checkpoint marker last reported, or the one an
	// earlier attempt left when the instance started: an adopted instance
	// reports only the saves after it.
	Marker     string    `json:"marker,omitempty"`
	MarkerTime time.Time `json:"marker_time,omitzero"`
	// World is the attempt's number of instances: a gang's rank reports
	// its marker as its part of a save. JobCheckpoints, for rank 0 of a
	// gang on a shared checkpoint root, is the job's directory, whose
	// marker (JobMarker, as last reported) names a save of every rank.
	World          int       `json:"world,omitempty"`
	JobCheckpoints string    `json:"job_checkpoints,omitempty"`
	JobMarker      string    `json:"job_marker,omitempty"`
	JobMarkerTime  time.Time `json:"job_marker_time,omitzero"`
	// Container is the name of the instance's container when it runs
	// from an image: what is left of it is removed with the instance.
	Container string `json:"container,omitempty"`
	// ContainerCheckpoints is the job's checkpoint directory on the host
	// that the container sees at model.ContainerCheckpointDir: a marker
	// that names a path there is read on the host.
	ContainerCheckpoints string `json:"container_checkpoints,omitempty"`
}

func (r record) key() key { return key{r.Job, r.Attempt, r.Rank} }

// markers follows the instance's markers from where the record left them.
func (r record) markers() *markers {
	m := markersOf(r.Checkpoints, r.JobCheckpoints, r.Rank, r.World, marker{path: r.Marker, mod: r.MarkerTime},
		marker{path: r.JobMarker, mod: r.JobMarkerTime})
	for _, w := range []*markerWatch{m.own, m.job} {
		if w != nil {
			w.mapped = r.ContainerCheckpoints
		}
	}
	return m
}

// seen records in r the markers m last reported.
func (r *record) seen(m *markers) {
	r.Marker, r.MarkerTime = m.own.reported.path, m.own.reported.mod
	if m.job != nil {
		r.JobMarker, r.JobMarkerTime = m.job.reported.path, m.job.reported.mod
	}
}

// leaseFile, in DATA/state, is renewed at every heartbeat the server
// answers; a shim whose lease has not changed for the node timeout fences
// its job (package shim).
const leaseFile = "lease"

func (a *Agent) recordPath(name string) string {
	return filepath.Join(a.cfg.Data, "state", name+".json")
}

func (a *Agent) exitPath(name string) string {
	return filepath.Join(a.cfg.Data, "state", name+".exit.json")
}

func (a *Agent) orderPath(name string) string {
	return filepath.Join(a.cfg.Data, "state", name+".order.json")
}

func (a *Agent) leasePath() string { return filepath.Join(a.cfg.Data, "state", leaseFile) }

// writeRecord replaces the record atomically.
func (a *Agent) writeRecord(name string, r record) error {
	b, _ := json.Marshal(r)
	tmp := a.recordPath(name) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, a.recordPath(name))
}

// shimFiles are the endings of the files an instance's shim reads and
// writes beside its record, with those of their atomic replacements.
// The container runtime's env file (an instance run from an image) lies
// there too.
var shimFiles = []string{".exit.json", ".order.json", ".exit.json.tmp", ".order.json.tmp", ".env"}

// forget removes the instance's record and its shim's files: nothing of it
// is left to adopt or to fence.
func (a *Agent) forget(name string) {
	_ = os.Remove(a.recordPath(name))
	for _, suffix := range shimFiles {
		_ = os.Remove(filepath.Join(a.cfg.Data, "state", name+suffix))
	}
}

// renewLease tells the shims that the agent still reaches the server.
func (a *Agent) renewLease() {
	now := time.Now()
	err := os.Chtimes(a.leasePath(), now, now)
	if errors.Is(err, fs.ErrNotExist) {
		err = os.WriteFile(a.leasePath(), nil, 0o600)
	}
	if err != nil {
		a.log.Warn("lease not renewed: shims will stop their jobs past the node timeout", "err", err)
	}
}

// leftover is an instance a previous run of the agent left: its shim
// still runs, or it ended and wrote how.
type leftover struct {
	name string
	rec  record
	h    *shim.Handle
}

// survey reads what a previous run of the agent left in DATA/state, before
// the agent registers. An instance whose shim still runs, or whose shim
// wrote how it ended, is kept in a.left: the first assignments adopt it or
// fence it (adopt.go). Everything else is fenced at once: the processes of
// a record without a live shim (an agent before shims wrote it, its shim
// was killed, the host restarted; by its cgroup, else by the job's dynamic
// uid unless a kept instance holds it, else by process group only when the
// recorded process is still the one that started), then whatever is in a
// cgroup of the agent's or among its shims that no kept record names. The
// server learns of what was fenced when it says an instance runs here that
// the agent does not run (reconcile: NodeLost).
func (a *Agent) survey() {
	a.left = map[key]*leftover{}
	files, _ := filepath.Glob(filepath.Join(a.cfg.Data, "state", "*"))
	records := map[string]bool{}
	var dead []record
	for _, f := range files {
		base := filepath.Base(f)
		name, isRecord := strings.CutSuffix(base, ".json")
		switch {
		case base == leaseFile, shimFile(base) != "":
			continue // the shim's, beside its record
		case !isRecord:
			_ = os.Remove(f)
			continue
		}
		var r record
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			a.log.Warn("unreadable state record; removing", "file", base, "err", err)
			_ = os.Remove(f)
			continue
		}
		h := shim.Attach(r.Shim, r.ShimStart, a.exitPath(name), a.orderPath(name))
		_, exitErr := h.Exit()
		kept := r.Shim > 0 && (!ended(h) || exitErr == nil)
		if kept && r.Dynamic && !holdUID(r.Job, r.UID) {
			a.log.Warn("instance left by a previous run has a uid another job holds here: fencing it", "job", r.Job, "uid", r.UID)
			kept = false
		}
		if !kept {
			h.Close()
			dead = append(dead, r)
			a.forget(name)
			continue
		}
		records[name] = true
		a.left[r.key()] = &leftover{name: name, rec: r, h: h}
		a.log.Info("found an instance a previous run left", "job", r.Job, "attempt", r.Attempt, "rank", r.Rank,
			"shim", r.Shim, "running", !ended(h))
	}
	for _, f := range files {
		if name := shimFile(filepath.Base(f)); name != "" && !records[name] {
			_ = os.Remove(f)
		}
	}
	for _, r := range dead {
		a.killRecord(r, !a.uidKept(r.UID))
	}
	a.fenceUnrecorded()
}

// shimFile is the name of the instance whose shim's file base is, "" when
// it is none.
func shimFile(base string) string {
	for _, suffix := range shimFiles {
		if name, ok := strings.CutSuffix(base, suffix); ok {
			return name
		}
	}
	return ""
}

// uidKept reports whether a kept leftover runs under uid.
func (a *Agent) uidKept(uid uint32) bool {
	for _, lo := range a.left {
		if lo.rec.Dynamic && lo.rec.UID == uid {
			return true
		}
	}
	return false
}

// fenceUnrecorded kills what is in a cgroup under the agent's that no kept
// record names, and every shim in its shims' cgroup that none names.
func (a *Agent) fenceUnrecorded() {
	if a.cgroup == "" {
		return
	}
	keep, shims := map[string]bool{}, map[int]bool{}
	for _, lo := range a.left {
		keep[lo.rec.Cgroup], shims[lo.rec.Shim] = true, true
	}
	ents, _ := os.ReadDir(a.cgroup)
	for _, e := range ents {
		p := filepath.Join(a.cgroup, e.Name())
		if !e.IsDir() || p == a.shims || keep[p] {
			continue
		}
		a.log.Warn("fencing a cgroup left by a previous run", "cgroup", p)
		a.killCgroup(p)
	}
	if a.shims == "" {
		return
	}
	for _, pid := range launch.CgroupProcs(a.shims) {
		if !shims[pid] {
			a.log.Warn("fencing a shim no record names", "pid", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// killRecord kills every process of the instance r names: by its cgroup;
// else, with byUID, by the job's dynamic uid; else by process group, only
// when the recorded process is still the one that started. Then its shim,
// if it still runs.
func (a *Agent) killRecord(r record, byUID bool) {
	log := a.log.With("job", r.Job, "attempt", r.Attempt, "rank", r.Rank)
	switch {
	case r.Cgroup != "":
		log.Warn("fencing an instance: killing its cgroup", "cgroup", r.Cgroup)
		a.killCgroup(r.Cgroup)
	case r.Dynamic && r.UID != 0 && byUID:
		n, err := launch.KillUID(r.UID)
		log.Warn("fencing an instance: killed its uid's processes", "uid", r.UID, "killed", n, "err", err)
	case r.PID > 1 && launch.Alive(r.PID, r.StartTime):
		log.Warn("fencing an instance: killing its process group", "pid", r.PID)
		if pg, err := syscall.Getpgid(r.PID); err == nil && pg == r.PID {
			_ = syscall.Kill(-r.PID, syscall.SIGKILL)
		}
		_ = syscall.Kill(r.PID, syscall.SIGKILL)
	}
	if r.Shim > 1 && launch.Alive(r.Shim, r.ShimStart) {
		h := shim.Attach(r.Shim, r.ShimStart, "", "")
		h.Destroy()
		h.Close()
	}
	if r.Container != "" {
		a.removeContainer(r.Container)
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

// gpuIndices are the indices of gpus, as a record keeps them.
func gpuIndices(gpus []client.AssignedGPU) []int {
	out := make([]int, len(gpus))
	for i, g := range gpus {
		out[i] = g.Index
	}
	return out
}

// ended reports whether the shim h holds has ended.
func ended(h *shim.Handle) bool {
	select {
	case <-h.Done():
		return true
	default:
		return false
	}
}
