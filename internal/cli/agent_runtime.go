package cli

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/allot-dev/allot/internal/agent/runtime"
)

// runtimeFlags are the agent's flags of containers.
type runtimeFlags struct {
	runtime    string   // --runtime auto|host|podman|crun|runc
	ociRuntime string   // --oci-runtime: podman's --runtime
	mountAllow []string // --mount-allow DIR
	imageDirs  []string // --image-dir DIR
	cacheGiB   float64  // --image-cache-gib
}

// cacheBytes is --image-cache-gib in bytes, 0 for no limit.
func (f runtimeFlags) cacheBytes() int64 { return int64(f.cacheGiB * (1 << 30)) }

// register adds the flags to cmd: the agent's, and up's and the server's
// for their in-process agents.
func (f *runtimeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.runtime, "runtime", "auto", "container runtime of jobs that name an image: auto (podman where installed), podman, crun or runc (podman with that OCI runtime), or host (none)")
	fl.StringVar(&f.ociRuntime, "oci-runtime", "", "the OCI runtime podman uses: crun, runc or a path (default podman's own)")
	fl.StringArrayVar(&f.mountAllow, "mount-allow", nil, "a host directory whose subtree jobs' mounts may name (repeatable; none: no mounts)")
	fl.StringArrayVar(&f.imageDirs, "image-dir", nil, "a directory whose local images (oci:/PATH, oci-archive:/PATH) jobs may run (repeatable)")
	fl.Float64Var(&f.cacheGiB, "image-cache-gib", 0, "keep the host's images under this many GiB by removing images the agent pulled and no job uses, least recently used first (0: no limit)")
}

// agentRuntime is the container runtime --runtime names: podman (with
// --oci-runtime, or crun or runc as the name says), auto (podman where it
// is on PATH, else none), or host (none: a job that names an image fails
// to start, saying why). lookPodman finds podman.
func agentRuntime(f runtimeFlags, lookPodman func() (string, error), log *slog.Logger) (runtime.Runtime, error) {
	oci := f.ociRuntime
	if f.cacheGiB < 0 {
		return nil, fmt.Errorf("--image-cache-gib %v: want 0 (no limit) or more", f.cacheGiB)
	}
	switch f.runtime {
	case "host":
		return nil, nil
	case "auto", "podman":
	case "crun", "runc":
		if oci != "" && oci != f.runtime {
			return nil, fmt.Errorf("--runtime %s and --oci-runtime %s: give one", f.runtime, oci)
		}
		oci = f.runtime
	default:
		return nil, fmt.Errorf("--runtime %q: want auto, host, podman, crun or runc", f.runtime)
	}
	path, err := lookPodman()
	if err != nil {
		if f.runtime == "auto" {
			log.Info("no container runtime: jobs that name an image will fail to start here", "why", err)
			return nil, nil
		}
		return nil, fmt.Errorf("--runtime %s: %w", f.runtime, err)
	}
	for _, d := range append(append([]string(nil), f.mountAllow...), f.imageDirs...) {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("--mount-allow and --image-dir take absolute directories, got %q", d)
		}
	}
	p := &runtime.Podman{Path: path, OCIRuntime: oci, CDI: runtime.HasNvidiaCDI()}
	// The container's limits may not exceed the agent's own: podman's
	// defaults (a million open files) fail where the host's hard limits
	// are lower and the agent may not raise them.
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Max < podmanNoFile {
		p.NoFile = lim.Max
	}
	if unix.Getrlimit(unix.RLIMIT_NPROC, &lim) == nil && lim.Max < podmanNoFile {
		p.NProc = lim.Max
	}
	log.Info("container runtime", "runtime", p.Name(), "podman", path, "cdi", p.CDI)
	return p, nil
}

// podmanNoFile is podman's default limit of open files (and of
// processes) for a container run as root.
const podmanNoFile = 1 << 20
