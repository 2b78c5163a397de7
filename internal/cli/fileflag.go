package cli

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
)

// filesFlag gives cmd the files it reads: -f/--file, repeatable, and the
// arguments (allot job submit a.yaml b.yaml, as kubectl apply -f a -f b).
// Without any, or with one named twice, cmd refuses to run (exit status 2).
func filesFlag(cmd *cobra.Command, files *[]string, usage string) {
	cmd.Flags().StringArrayVarP(files, "file", "f", nil, usage)
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	cmd.Args = func(_ *cobra.Command, args []string) error {
		*files = append(*files, args...)
		if len(*files) == 0 {
			return Usage(errors.New("no file: give it as -f FILE or as the argument"))
		}
		for i, f := range *files {
			if slices.Contains((*files)[:i], f) {
				return Usage(fmt.Errorf("%s is given twice: give each file once", f))
			}
		}
		return nil
	}
}

// fileFlag gives cmd the one file it reads: -f/--file, or the argument
// instead (allot policy check policies.yaml). Without one, or with two,
// cmd refuses to run (exit status 2).
func fileFlag(cmd *cobra.Command, file *string, usage string) {
	var files []string
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, usage)
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	cmd.Args = func(_ *cobra.Command, args []string) error {
		files = append(files, args...)
		switch len(files) {
		case 0:
			return Usage(errors.New("no file: give it as -f FILE or as the argument"))
		case 1:
			*file = files[0]
			return nil
		}
		return Usage(fmt.Errorf("one file at a time, got %d: %q", len(files), files))
	}
}
