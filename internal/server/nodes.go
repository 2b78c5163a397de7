package server

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Nodes is the node layer: what the server knows of the machines beyond the
// fleet file. In this version nodes are simulated; the agent layer (one
// process per GPU host reporting heartbeats, exits and checkpoints) will be
// a second implementation.
type Nodes interface {
	// InitialHealth is the health recorded for a fleet node that has no
	// record in the store yet.
	InitialHealth(n model.Node) model.Health
	// Ended reports the jobs among running (each holding capacity) whose
	// work ended by now, with the state each ends in. It must not modify
	// the jobs.
	Ended(running []*model.Job, now time.Time) []Ending
}

// Ending is a fact reported by the node layer: a job's work ended.
type Ending struct {
	Job    string
	State  model.State // Succeeded, Failed or TimedOut
	Reason string      // e.g. "Completed", "TimedOut"
	Detail string
	// ExitCode is the exit status of the job's processes.
	ExitCode int
}

// Simulated is the node layer without agents: every node has the health the
// fleet file gives it (Ready unless the file says otherwise), and a running
// job whose spec has a duration succeeds once it has run that long (or times
// out at retry.timeout, whichever comes first); a job without a duration
// runs until it is canceled. The server notices endings on its cycles, so on
// the tick (5 s by default) at the latest.
type Simulated struct{}

// InitialHealth implements Nodes.
// A node the file drains is Ready: its drain is recorded beside its health
// (recordNodes), as an administrator's drain is.
func (Simulated) InitialHealth(n model.Node) model.Health {
	if n.Health == "" || n.Health == model.NodeDraining {
		return model.NodeReady
	}
	return n.Health
}

// Ended implements Nodes.
func (Simulated) Ended(running []*model.Job, now time.Time) []Ending {
	var out []Ending
	for _, j := range running {
		if j.Status.State != model.StateRunning || j.Status.StartedAt.IsZero() {
			continue
		}
		ran := now.Sub(j.Status.StartedAt) + resizedRun(j) // an elastic job's run goes on through its resizes
		d, timeout := j.Spec.Duration, j.Spec.Retry.Timeout
		switch {
		case timeout > 0 && ran >= timeout && (d == 0 || d > timeout):
			out = append(out, Ending{Job: j.ID, State: model.StateTimedOut, Reason: "TimedOut",
				Detail: fmt.Sprintf("ran %s, the limit is retry.timeout %s", timeout, timeout), ExitCode: -1})
		case d > 0 && ran >= d:
			out = append(out, Ending{Job: j.ID, State: model.StateSucceeded, Reason: "Completed",
				Detail: fmt.Sprintf("ran %s (simulated)", d)})
		}
	}
	return out
}
