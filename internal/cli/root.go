package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes of the allot command.
const (
	ExitOK      = 0
	ExitFailure = 1 // something broke
	ExitUsage   = 2 // bad flags, or an invalid spec file
	// ExitRegressed: a bench figure is more than 20 % worse than the one in
	// its --baseline file (baseline.go).
	ExitRegressed = 3
)

// usageError marks errors caused by what the user gave us; Run exits with
// ExitUsage for them.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Usage wraps err so that the command exits with status 2.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// Run executes the allot command line and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	// Messages may quote what the server or a file held: no raw control
	// characters reach the terminal, but lines stay lines.
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = escape(l)
	}
	fmt.Fprintln(stderr, "allot:", strings.Join(lines, "\n"))
	var xe exitError
	if errors.As(err, &xe) {
		return xe.code
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return ExitUsage
	}
	var re *regressionError
	if errors.As(err, &re) {
		return ExitRegressed
	}
	return ExitFailure
}

// isCobraUsage recognises the errors cobra returns for a malformed command
// line, which it does not route through the flag error function.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"required flag(s)", "unknown command", "accepts ", "requires at least", "invalid argument", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "allot",
		Short: "Decide who gets which GPUs across a multi-region fleet",
		Long: `allot is a GPU scheduler and control plane for a multi-region AI cloud.

Start with 'allot up' for a local control plane with the example fleet, or
'allot plan' to run one scheduling cycle offline on fleet, tenant and job files.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPlanCmd(), newSimCmd(), newJobCmd(), newSKUCmd(), newQuotaCmd(), newReservationCmd(), newNodeCmd(), newTokenCmd(), newServerCmd(), newUpCmd(), newDownCmd(), newAgentCmd(), newGatewayCmd(), newBenchCmd(), newPolicyCmd(), newDemoCmd(), newEndpointCmd(), newVersionCmd(), newUsageCmd(), newTraceCmd(), newAlertCmd(), newInstanceCmd(), newAuditCmd(), newCostCmd(), newSecretCmd(), newKubeCmd())
	return root
}

func newSimCmd() *cobra.Command {
	sim := &cobra.Command{
		Use:   "sim",
		Short: "Replay real traces and scenarios through allot's scheduling core",
		Long: `sim runs allot's scheduling core on a virtual clock over real production
traces (frag, replay) or a scenario file (scenario), so a policy or a sharing
strategy can be measured before it runs a fleet.`,
	}
	// Each experiment registers itself here.
	sim.AddCommand(newSimFragCmd(), newSimReplayCmd(), newSimScenarioCmd())
	return sim
}
