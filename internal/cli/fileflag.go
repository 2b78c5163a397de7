package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// fileFlag gives cmd the file it reads: -f/--file, or the one argument
// instead (allot job submit job.yaml, as sbatch job.sh). Without either,
// or with both, cmd refuses to run (exit status 2).
func fileFlag(cmd *cobra.Command, file *string, usage string) {
	cmd.Flags().StringVarP(file, "file", "f", "", usage)
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	cmd.Args = func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) > 1:
			return Usage(fmt.Errorf("one file at a time, got %d arguments: %q (a directory gives all of its files)", len(args), args))
		case len(args) == 1 && *file != "":
			return Usage(fmt.Errorf("two files: -f %s and %s; give one", *file, args[0]))
		case len(args) == 1:
			*file = args[0]
		case *file == "":
			return Usage(errors.New("no file: give it as -f FILE or as the argument"))
		}
		return nil
	}
}
