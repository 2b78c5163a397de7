package model

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Container is the image a job's instances run from, with what of the
// image the job overrides; a JobSpec without one runs its command on the
// host. As in a Kubernetes container, JobSpec.Command, when set, replaces
// the image's entrypoint and Args its default arguments (CMD); JobSpec.Env
// adds to the image's environment.
//
// The JSON form (the field names of a job file) is what the store keeps.
//
// Every instance sees its work directory at ContainerWorkDir (its HOME
// and, without Workdir, its working directory) and its checkpoint
// directory inside ContainerCheckpointDir: ALLOT_CHECKPOINT_DIR and
// ALLOT_JOB_CHECKPOINT_DIR point there.
type Container struct {
	// Image is an OCI reference, [REGISTRY/]REPOSITORY[:TAG][@sha256:HEX],
	// or an image on the agent's disk: oci:/PATH[:TAG] (an OCI layout
	// directory) or oci-archive:/PATH[:TAG] (the same as a tar file),
	// which the agent runs only under a directory its operator allows.
	Image   string   `json:"image"`
	Args    []string `json:"args,omitempty"`
	Workdir string   `json:"workdir,omitempty"` // absolute, in the container; "" is the image's
	Mounts  []Mount  `json:"mounts,omitempty"`
}

// Mount is a directory of the host that the container sees at Target.
// The agent mounts only sources under the directories its operator
// allows (allot agent --mount-allow).
type Mount struct {
	Source   string `json:"source"` // absolute, on the host
	Target   string `json:"target"` // absolute, in the container
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Clone is a deep copy of c; nil stays nil.
func (c *Container) Clone() *Container {
	if c == nil {
		return nil
	}
	d := *c
	d.Args = slices.Clone(c.Args)
	d.Mounts = slices.Clone(c.Mounts)
	return &d
}

// Equal reports whether c and d run the same image the same way (nil
// and nil are equal; an empty list and a missing one too).
func (c *Container) Equal(d *Container) bool {
	if c == nil || d == nil {
		return c == d
	}
	return c.Image == d.Image && slices.Equal(c.Args, d.Args) && c.Workdir == d.Workdir && slices.Equal(c.Mounts, d.Mounts)
}

// Where an instance's own directories are in its container.
const (
	ContainerRoot          = "/allot"
	ContainerWorkDir       = "/allot/work"
	ContainerCheckpointDir = "/allot/checkpoints"
)

// Bounds of a container's fields.
const (
	MaxImageLength = 1024
	MaxMounts      = 16
	MaxArgs        = 4096
)

// Local image transports: an image on the agent's disk.
const (
	TransportOCI        = "oci:"
	TransportOCIArchive = "oci-archive:"
)

// The grammar of an OCI reference (the distribution spec's): a
// repository of lower-case path components, optionally behind a registry
// host (a name with a dot or a port, or localhost), a tag, a digest.
var (
	pathComponent = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	registryHost  = `(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]{1,5})?`
	repositoryRE  = regexp.MustCompile(`^` + pathComponent + `(?:/` + pathComponent + `)*$`)
	registryRE    = regexp.MustCompile(`^` + registryHost + `$`)
	tagRE         = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE      = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// ImageRef is an image reference taken apart.
type ImageRef struct {
	// Transport is "" for a registry's image, TransportOCI or
	// TransportOCIArchive for one on the agent's disk.
	Transport string
	Registry  string // "" for the runtime's default
	// Repository is the repository for a registry's image, the path of the
	// layout or archive for a local one.
	Repository string
	Tag        string
	Digest     string
}

// ParseImage checks an image reference and takes it apart. Its errors say
// what is wrong without the field's name (Container.Validate adds it).
func ParseImage(s string) (ImageRef, error) {
	switch {
	case s == "":
		return ImageRef{}, fmt.Errorf("must not be empty: give an OCI reference such as ghcr.io/team/train:1.4 (args, workdir and mounts need an image)")
	case len(s) > MaxImageLength:
		return ImageRef{}, fmt.Errorf("is %d bytes, over the limit of %d", len(s), MaxImageLength)
	case strings.ContainsAny(s, " \t\r\n\x00"):
		return ImageRef{}, fmt.Errorf("%q must not hold spaces or control characters", s)
	}
	for _, t := range []string{TransportOCI, TransportOCIArchive} {
		if rest, ok := strings.CutPrefix(s, t); ok {
			return parseLocalImage(t, rest)
		}
	}
	if strings.Contains(s, "://") {
		return ImageRef{}, fmt.Errorf("%q: an image reference has no scheme: write REGISTRY/REPOSITORY:TAG", s)
	}
	var r ImageRef
	name := s
	if before, digest, ok := strings.Cut(s, "@"); ok {
		if !digestRE.MatchString(digest) {
			return ImageRef{}, fmt.Errorf("%q: the digest must be sha256: and 64 lower-case hex digits, got %q", s, digest)
		}
		name, r.Digest = before, digest
	}
	// A tag follows the last colon that comes after the last slash (a
	// colon before it is the registry's port).
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, r.Tag = name[:i], name[i+1:]
		if !tagRE.MatchString(r.Tag) {
			return ImageRef{}, fmt.Errorf("%q: tag %q must be letters, digits, _, . or - (at most 128, not starting with . or -)", s, r.Tag)
		}
	}
	if first, rest, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[")) {
		if !registryRE.MatchString(first) {
			return ImageRef{}, fmt.Errorf("%q: registry %q is not a host name with an optional :PORT", s, first)
		}
		r.Registry, name = first, rest
	}
	if !repositoryRE.MatchString(name) {
		return ImageRef{}, fmt.Errorf("%q: repository %q must be lower-case path components (a-z, 0-9, separated by ., _, __ or -) joined by /", s, name)
	}
	if len(r.Registry)+1+len(name) > 255 {
		return ImageRef{}, fmt.Errorf("%q: the repository's name is over 255 characters", s)
	}
	r.Repository = name
	return r, nil
}

// parseLocalImage reads what follows oci: or oci-archive:, /PATH[:TAG].
func parseLocalImage(transport, rest string) (ImageRef, error) {
	p, tag := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		p, tag = rest[:i], rest[i+1:]
		if !tagRE.MatchString(tag) {
			return ImageRef{}, fmt.Errorf("%q: tag %q must be letters, digits, _, . or - (at most 128, not starting with . or -)", transport+rest, tag)
		}
	}
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return ImageRef{}, fmt.Errorf("%q: a local image is %s/ABSOLUTE/PATH[:TAG], a clean path other than /", transport+rest, transport)
	}
	if err := printable(p); err != nil {
		return ImageRef{}, fmt.Errorf("the path %w", err)
	}
	return ImageRef{Transport: transport, Repository: p, Tag: tag}, nil
}

// ValidRegistry reports whether host names a registry as a reference
// writes it: a host name or [IPv6] with an optional :PORT.
func ValidRegistry(host string) bool { return len(host) <= 255 && registryRE.MatchString(host) }

// DefaultRegistry is the registry of a reference that names none, as
// podman and docker resolve it.
const DefaultRegistry = "docker.io"

// RegistryHost is the registry the image is pulled from, DefaultRegistry
// for a reference that names none; "" for a local image.
func (r ImageRef) RegistryHost() string {
	switch {
	case r.Local():
		return ""
	case r.Registry == "":
		return DefaultRegistry
	}
	return r.Registry
}

// Local reports whether the image lies on the agent's disk.
func (r ImageRef) Local() bool { return r.Transport != "" }

// Validate checks the container on its own; field paths are those of a
// job file (image, args, workdir, mounts[i].target).
func (c *Container) Validate() []error {
	var errs []error
	add := func(field, format string, args ...any) { errs = append(errs, fieldErr(field, format, args...)) }
	if _, err := ParseImage(c.Image); err != nil {
		add("image", "%s", err)
	}
	if len(c.Args) > MaxArgs {
		add("args", "lists %d arguments, over the limit of %d", len(c.Args), MaxArgs)
	}
	for i, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			add(fmt.Sprintf("args[%d]", i), "must not hold a NUL byte")
		}
	}
	if c.Workdir != "" {
		if err := containerPath(c.Workdir); err != nil {
			add("workdir", "%s", err)
		}
	}
	if n := len(c.Mounts); n > MaxMounts {
		add("mounts", "lists %d mounts, over the limit of %d", n, MaxMounts)
		return errs
	}
	targets := map[string]int{}
	for i, m := range c.Mounts {
		f := fmt.Sprintf("mounts[%d]", i)
		if err := hostPath(m.Source); err != nil {
			add(f+".source", "%s", err)
		}
		switch err := containerPath(m.Target); {
		case err != nil:
			add(f+".target", "%s", err)
		case m.Target == ContainerRoot || strings.HasPrefix(m.Target, ContainerRoot+"/") || strings.HasPrefix(ContainerRoot, m.Target+"/"):
			add(f+".target", "%s is where allot mounts the job's own directories (%s, %s): pick another path", m.Target, ContainerWorkDir, ContainerCheckpointDir)
		default:
			if j, dup := targets[m.Target]; dup {
				add(f+".target", "%s is mounted already by mounts[%d]", m.Target, j)
			}
			targets[m.Target] = i
		}
	}
	return errs
}

// containerPath checks an absolute path inside a container.
func containerPath(p string) error {
	switch {
	case !path.IsAbs(p):
		return fmt.Errorf("%q must be an absolute path, e.g. /workspace", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q must be a clean path (no .., no trailing /), e.g. %s", p, path.Clean(p))
	case p == "/":
		return fmt.Errorf("must not be / itself")
	case strings.ContainsAny(p, ":,\x00"):
		// A runtime's mount syntax splits on ':' and ','.
		return fmt.Errorf("%q must not hold ':' or ','", p)
	}
	return printable(p)
}

// printable is Printable's check as an error without a field.
func printable(s string) error {
	var fe *FieldError
	if err := Printable("", s); errors.As(err, &fe) {
		return errors.New(fe.Msg)
	}
	return nil
}

// hostPath checks an absolute path on the agent's host.
func hostPath(p string) error {
	if p == "" {
		return fmt.Errorf("must not be empty: the host directory to mount")
	}
	return containerPath(p)
}
