package cli

import (
	"os"
	"testing"

	"github.com/allot-dev/allot/internal/agent/shim"
)

// TestMain lets this test binary serve as the shim of the in-process
// agents that 'allot up' and 'allot server --agents virtual' run here: an
// agent runs its own executable as one (package shim).
func TestMain(m *testing.M) {
	shim.TakeOver()
	os.Exit(m.Run())
}
