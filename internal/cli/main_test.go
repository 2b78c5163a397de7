package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/allot-dev/allot/internal/agent/shim"
)

// asAllot, set in a child's environment, makes this test binary allot:
// it runs the CLI with its arguments. Commands that start their own
// executable (bench gateway's replica and load generator) start this one.
const asAllot = "ALLOT_CLI_TEST_AS_ALLOT"

// TestMain lets this test binary serve as the shim of the in-process
// agents that 'allot up' and 'allot server --agents virtual' run here (an
// agent runs its own executable as one: package shim), and as allot.
func TestMain(m *testing.M) {
	shim.TakeOver()
	if os.Getenv(asAllot) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
