package agent

import "testing"

// The lab of this package's tests, for those of package agent_test,
// which may import the command line (package cli imports this one).

// TestLab is a server in agent mode on the three-node test fleet.
type TestLab struct{ l *lab }

// NewTestLab starts one; it stops when the test ends.
func NewTestLab(t *testing.T) TestLab { return TestLab{newLab(t)} }

// URL and Admin are the server's address and its admin token.
func (l TestLab) URL() string   { return l.l.url }
func (l TestLab) Admin() string { return l.l.admin }

// Config is an agent's configuration for node in fresh directories.
func (l TestLab) Config(t *testing.T, node string) Config { return l.l.config(t, node) }

// Submit submits a job document and returns the job's ID.
func (l TestLab) Submit(t *testing.T, doc string) string { return l.l.submit(t, doc) }

// WaitState waits for job id to be in state.
func (l TestLab) WaitState(t *testing.T, id, state string) { l.l.waitState(t, id, state) }
