package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// noArgs refuses arguments to a command that takes only flags, naming
// them and where its help is, rather than cobra's bare "unknown command"
// (exit status 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	path := cmd.CommandPath()
	return Usage(fmt.Errorf("%s takes flags, not arguments (got %q); see '%s --help'",
		strings.TrimPrefix(path, cmd.Root().Name()+" "), args, path))
}
