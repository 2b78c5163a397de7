package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultPidsLimit bounds the processes and threads of one job on a host,
// as Kubernetes' podPidsLimit does, so that a fork bomb takes its own job
// down and not the host.
const DefaultPidsLimit = 4096

// How the agent bounds a job's processes (Config.PidsLimit), chosen once
// by limitPids.
type pidsBound int

const (
	pidsNone    pidsBound = iota // neither mechanism is available
	pidsCgroup                   // pids.max of each instance's cgroup
	pidsRlimit                   // RLIMIT_NPROC, counted per job uid
	pidsUnbound                  // Config.PidsLimit is negative
)

func (b pidsBound) String() string {
	return [...]string{"none", "cgroup pids.max", "RLIMIT_NPROC per job uid", "off"}[b]
}

// setNProc sets the agent process's RLIMIT_NPROC, soft and hard; tests
// replace it.
var setNProc = func(n uint64) error {
	return unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n})
}

// limitPids decides how every job's processes are bounded: by pids.max in
// each instance's cgroup where the agent's cgroup can enable the pids
// controller for its children; else, when every job runs under a dynamic
// uid of its own, by RLIMIT_NPROC, which the kernel counts per real uid
// (so per job on this host) and does not apply to root: set on the agent,
// it is inherited by every job and binds none of the agent's own work.
// Jobs that run as the agent's user or as one --run-as user cannot be
// bounded that way: they share a uid.
func (a *Agent) limitPids() pidsBound {
	switch {
	case a.pidsLimit() < 0:
		return pidsUnbound
	case a.cgroup != "" && enablePids(a.cgroup) == nil:
		return pidsCgroup
	case a.ident == asDynamic:
		if err := setNProc(uint64(a.pidsLimit())); err != nil {
			a.log.Warn("jobs' processes are not bounded: RLIMIT_NPROC not set", "err", err)
			return pidsNone
		}
		return pidsRlimit
	}
	a.log.Warn("jobs' processes are not bounded: no cgroup v2 pids controller, and jobs share a uid",
		"users", []string{"agent's own", "dynamic", "run-as"}[a.ident])
	return pidsNone
}

// pidsLimit is Config.PidsLimit, its default for 0.
func (a *Agent) pidsLimit() int64 {
	if a.cfg.PidsLimit == 0 {
		return DefaultPidsLimit
	}
	return a.cfg.PidsLimit
}

// enablePids turns the pids controller on for the children of dir, the
// agent's cgroup (MOUNT/allot/NODE-H), and for allot/ above it: neither
// holds processes of its own, so both may delegate it. The root of the
// hierarchy must have it on already; the agent leaves the host's own
// cgroups as they are.
func enablePids(dir string) error {
	mount := filepath.Dir(filepath.Dir(dir))
	if !hasController(filepath.Join(mount, "cgroup.subtree_control"), "pids") {
		return fmt.Errorf("cgroup %s does not enable the pids controller for its children", mount)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		ctl := filepath.Join(d, "cgroup.subtree_control")
		if hasController(ctl, "pids") {
			continue
		}
		if err := os.WriteFile(ctl, []byte("+pids"), 0); err != nil {
			return fmt.Errorf("enable pids in %s: %w", d, err)
		}
		if !hasController(ctl, "pids") {
			return fmt.Errorf("cgroup %s: pids not enabled for its children", d)
		}
	}
	return nil
}

// hasController reports whether the controller list in file (a
// cgroup.controllers or cgroup.subtree_control) names c. The kernel lists
// names alone; "+c", as written, counts too (tests keep a cgroup tree in
// plain files).
func hasController(file, c string) bool {
	b, err := os.ReadFile(file)
	return err == nil && slices.ContainsFunc(strings.Fields(string(b)), func(f string) bool {
		return strings.TrimPrefix(f, "+") == c
	})
}
