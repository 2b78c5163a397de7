package agent

import (
	"os"
	"testing"

	"github.com/allot-dev/allot/internal/agent/shim"
)

// TestMain lets this test binary serve as the agents' shim: an agent runs
// its own executable as one (package shim), and here that is the test
// binary.
func TestMain(m *testing.M) {
	shim.TakeOver()
	os.Exit(m.Run())
}
