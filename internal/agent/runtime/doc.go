// Package runtime runs an instance of a job from an OCI image, for the
// node agent: a container runtime behind one small interface (Runtime),
// told everything about the instance in one value (Container) that the
// agent builds in one place (its sandbox.go), so that what a job may
// reach is decided there whether it runs on the host or in a container.
//
// A Runtime does three things: it pulls an image before a rank starts
// (Pull, whose error carries the registry's own message, for the job's
// ImagePullFailed reason), it says which process the instance's shim
// runs (Command: an executable, its arguments and environment, and
// whether it runs as the job's user), and it removes what is left of a
// container once that process has ended (Remove). The shim supervises
// that process like a bare command's: the same log pipe, cgroup (or
// process group), SIGTERM, grace and SIGKILL, time-out and exit.
//
// Podman (podman.go) is the runtime allot drives on hosts: rootful, one
// 'podman run --rm' in the foreground per instance, the job's dynamic uid
// as the container's user (--user UID:GID, no passwd entry needed), only
// the instance's GPUs (their CDI names where the host has an NVIDIA CDI
// spec, else their device nodes and the driver's control nodes), its
// CPU, memory and process limits, the host's network (multi-node
// training needs it; stated in docs/deploy.md), no capabilities, no new
// privileges, an init process that forwards signals, the job's work and
// checkpoint directories mounted at model.ContainerWorkDir and
// model.ContainerCheckpointDir, and its environment read from a file only
// the agent can read (never on a command line, where every user of the
// host sees it). docs/deploy.md, "Containers", compares it with crun and
// containerd and says why.
//
// Package runtimetest has a Runtime for tests that records every
// Container it is given and runs the instance on the host as its user,
// with the container's paths mapped back onto the host's.
package runtime
