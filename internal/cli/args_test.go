package cli

import (
	"strings"
	"testing"
)

// A command that takes only flags names the arguments it was given and
// its help, rather than cobra's "unknown command".
func TestFlagsOnlyCommandsRefuseArguments(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{"usage", "list"}, {"job", "list", "extra"}, {"sku", "list", "eastus"}} {
		_, errOut, code := runCLI(t, append(args, "--server", "http://127.0.0.1:1")...)
		want := strings.Join(args[:len(args)-1], " ") + " takes flags, not arguments (got [\"" + args[len(args)-1] + "\"])"
		if code != ExitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, errOut, ExitUsage, want)
		}
	}
}
