package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Runtime runs instances from images.
type Runtime interface {
	// Name is the runtime as the agent's log and errors name it.
	Name() string
	// Pull makes image ready to run on this host, with the registry
	// credentials in the auth file auth ("" for none), unless the host
	// holds it already, and returns what Container.Image names it by (an
	// image ID, so that a tag moved meanwhile changes nothing). A
	// *PullError says why not, in the registry's words. While it fetches
	// the image it tells progress (when not nil) how far it has come, as
	// often as it knows, from its own goroutine; not at all for an image
	// the host holds.
	Pull(ctx context.Context, image, auth string, progress func(Progress)) (string, error)
	// Command is the process that runs c, for the instance's shim.
	Command(c Container) (Process, error)
	// Remove removes the container named name, whatever is left of it,
	// once its process has ended; a container that is gone is no error.
	Remove(ctx context.Context, name string) error
}

// Container is one instance as the agent hands it to a runtime.
type Container struct {
	// Name is the container's name, unique on the host and naming
	// neither the job nor its tenant (every user can list containers'
	// names in the runtime's state).
	Name string
	// Image is what Pull returned.
	Image string
	// Entrypoint replaces the image's entrypoint when set (the job's
	// command); Args replace its default arguments when set, or when
	// Entrypoint is set (as in a Kubernetes container).
	Entrypoint []string
	Args       []string
	// Env is the whole environment the job sees, NAME=VALUE, sorted.
	Env []string
	// EnvFile is where the agent wrote Env, one NAME=VALUE a line, in a
	// file only it can read: what a runtime that runs as root reads
	// rather than taking the values on its command line.
	EnvFile string
	// Workdir is the working directory in the container.
	Workdir string
	// UID and GID are the user the job runs as in the container: the
	// job's dynamic uid, which owns its directories on the host.
	UID, GID uint32
	// GPUs are the instance's GPUs, nothing more: the runtime gives the
	// container these devices alone.
	GPUs   []GPU
	Mounts []Mount
	// Network is "host": the container shares the host's network, as a
	// gang's ranks need to reach each other's ALLOT_MASTER_ADDR.
	Network string
	// CPUMilli, MemoryMiB and Pids limit the container (0: no limit).
	CPUMilli, MemoryMiB, Pids int64
}

// GPU is one GPU of an instance.
type GPU struct {
	Index int
	// Minor is the N of the GPU's device node /dev/nvidiaN: the driver's
	// minor number of it (NVML's), which need not be its index.
	Minor int
	UUID  string
	// Virtual is a GPU an agent declared (allot up, tests): the host has
	// no device of it to give the container.
	Virtual bool
}

// Mount is a host directory the container sees at Target.
type Mount struct {
	Source, Target string
	ReadOnly       bool
}

// Process is what the instance's shim runs.
type Process struct {
	Argv []string
	// Env is the process's environment; nil gives it the base
	// environment of package launch alone (a runtime that reads the
	// job's from Container.EnvFile).
	Env []string
	// AsJob runs the process as the job's user; otherwise it runs as the
	// agent's (root, for a rootful runtime, which then switches to the
	// job's user inside the container).
	AsJob bool
	// Dir is the host directory the process starts in.
	Dir string
}

// Progress is how far a pull has come: the bytes of the image fetched so
// far and the image's size, each 0 where the runtime cannot tell.
type Progress struct {
	Done, Total int64
}

// PullError is a pull that failed: the image and the runtime's or
// registry's own message.
type PullError struct {
	Image string
	Msg   string
}

func (e *PullError) Error() string { return "pull " + e.Image + ": " + e.Msg }

// ErrNoRuntime is what starting an instance from an image on an agent
// without a container runtime gives.
var ErrNoRuntime = errors.New("runtime: this agent runs no container runtime: start it with --runtime podman (or auto) on a host with podman")

// WriteEnvFile writes env to path, mode 0600, one NAME=VALUE a line, as
// podman's --env-file reads it. A value with a newline cannot be written
// so (it would become a variable of its own): the error names it.
func WriteEnvFile(path string, env []string) error {
	var b strings.Builder
	for _, kv := range env {
		if strings.ContainsAny(kv, "\n\r\x00") {
			name, _, _ := strings.Cut(kv, "=")
			return fmt.Errorf("env %s: a container's variables cannot hold a line break or NUL", name)
		}
		b.WriteString(kv)
		b.WriteByte('\n')
	}
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Names is the sorted names of env's variables.
func Names(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ImageStore is a runtime's store of images on the host, which the agent
// keeps under a size (its image cache).
type ImageStore interface {
	// Images lists the images the host holds.
	Images(ctx context.Context) ([]Image, error)
	// RemoveImage removes the image id; an image a container uses is
	// refused.
	RemoveImage(ctx context.Context, id string) error
}

// Image is one image of a host's store.
type Image struct {
	ID   string
	Size int64 // bytes
}
