package shim

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
)

// Spec is what the agent hands a shim on its standard input. It travels
// between the agent and a shim of the same executable, so its fields need
// no stable names; Exit and Order, which a later version of the agent may
// read or write, have them.
type Spec struct {
	// Launch is the job as launch starts it; its Tracker is built here.
	Launch launch.Spec
	// Cgroup, when set, is the cgroup v2 directory the job starts in, with
	// PidsMax as launch.Cgroup has them; else the job's process group
	// tracks it.
	Cgroup  string
	PidsMax int64
	// Exit is where the shim writes how the job ended; Order is where it
	// reads the agent's stop orders; Lease is the file the agent renews.
	Exit, Order, Lease string
	// NodeTimeout is how long the lease may stay unrenewed before the shim
	// stops the job; 0 never.
	NodeTimeout time.Duration
}

// tracker is what holds on to the job's processes.
func (s Spec) tracker() launch.Tracker {
	if s.Cgroup == "" {
		return &launch.ProcessGroup{}
	}
	return &launch.Cgroup{Path: s.Cgroup, PidsMax: s.PidsMax}
}

// Exit is how a job ended, as its shim writes it.
type Exit struct {
	launch.Exit
	// Fenced is set when the shim stopped the job of its own accord: its
	// agent had not renewed the lease for the node timeout, or the shim
	// got SIGTERM (the host shuts down). The job was lost with its node.
	Fenced bool `json:"fenced,omitempty"`
	// StartError says why the job could not start (then ExitCode is 127).
	StartError string `json:"start_error,omitempty"`
}

// Order is the agent's order to stop a job: SIGTERM now, SIGKILL of all
// its processes at Deadline.
type Order struct {
	Deadline time.Time `json:"deadline"`
	// Lost marks a stop of the agent's own (it exits, or it lost the
	// server) rather than one the server ordered: the agent reports the
	// job lost with its node, whatever its exit, and a later run of the
	// agent reads it here. The shim itself does not look at it.
	Lost bool `json:"lost,omitempty"`
}

// ReadExit reads the Exit a shim wrote at path.
func ReadExit(path string) (Exit, error) {
	var e Exit
	err := readJSON(path, &e)
	return e, err
}

// readOrder reads the Order at path; a zero Order when there is none.
func readOrder(path string) (Order, error) {
	var o Order
	if err := readJSON(path, &o); err != nil && !os.IsNotExist(err) {
		return Order{}, err
	}
	return o, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSON replaces the file at path with v, atomically (a reader sees
// the old file or the new one), mode 0600.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
