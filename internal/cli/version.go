package cli

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what the binary knows of its own build.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readVersion reads the build information the Go toolchain embedded: the
// module version ("(devel)" for a build from a checkout), and the VCS
// revision and commit time when the build had them (go build in a git
// work tree; not go run, not go test).
func readVersion(info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || info == nil {
		return v
	}
	v.Module, v.Version = info.Main.Path, info.Main.Version
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if info.GoVersion != "" {
		v.Go = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o table|json|yaml]",
		Short: "Print allot's version, VCS revision and Go version",
		Long: `version prints what the binary knows of its build: the module version
("(devel)" for a build from a checkout), the VCS revision and commit time
with "(modified)" when the work tree had changes, the Go version and the
platform. A binary made by 'go run' or 'go test' has no VCS revision.`,
		Example: `  allot version
  allot version -o json | jq -r .revision`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := parseFormat(output)
			if err != nil {
				return Usage(err)
			}
			v := readVersion(debug.ReadBuildInfo())
			return show(cmd.OutOrStdout(), f, v, func() printer {
				var fs fields
				fs.add("Version", v.Version)
				fs.add("Module", orDash(v.Module))
				rev := orDash(v.Revision)
				if v.Modified {
					rev += " (modified)"
				}
				fs.add("Revision", rev)
				fs.add("Commit time", orDash(v.Time))
				fs.add("Go", v.Go)
				fs.add("Platform", v.Platform)
				return fs
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}
