package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/demoimage"
)

func newDemoImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "The demo programs as an OCI image",
	}
	var dir, tag string
	build := &cobra.Command{
		Use:   "build [--dir DIR] [--tag TAG]",
		Short: "Build the image of the demo programs from this allot executable",
		Long: `build writes an OCI image layout in DIR holding this allot executable (with
its ELF interpreter and shared libraries, as this host's loader finds them)
at /usr/local/bin/allot, entrypoint allot, default arguments 'demo serve',
and prints the image's reference, oci:DIR:TAG, for a job file's image field
(the agents need --image-dir DIR, or a parent of it). Nothing is downloaded;
the same executable gives the same image.`,
		Example: `  allot demo image build --dir /var/lib/allot/images/demo
  allot job run --image "$(allot demo image build --dir /var/lib/allot/images/demo)" -- allot demo train --steps 20`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find allot's own executable: %w", err)
			}
			if exe, err = filepath.EvalSymlinks(exe); err != nil {
				return err
			}
			r, err := demoimage.Build(abs, tag, exe)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "image %s: %d files, manifest %s\n", r.Ref(), len(r.Files), r.Digest)
			fmt.Fprintln(cmd.OutOrStdout(), r.Ref())
			return nil
		},
	}
	build.Flags().StringVar(&dir, "dir", "allot-demo-image", "directory of the OCI layout (made when missing)")
	build.Flags().StringVar(&tag, "tag", demoimage.DefaultTag, "the image's tag")
	cmd.AddCommand(build)
	return cmd
}
