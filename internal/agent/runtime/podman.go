package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Podman runs containers with rootful podman, one 'podman run' in the
// foreground per instance (no daemon: podman's conmon keeps the
// container, podman's own process relays its output and its signals).
type Podman struct {
	// Path is the podman executable.
	Path string
	// OCIRuntime is podman's --runtime: crun, runc or a path; "" is
	// podman's default (crun on Debian).
	OCIRuntime string
	// CDI names GPUs by their Container Device Interface names
	// (nvidia.com/gpu=UUID), for a host with an NVIDIA CDI spec
	// (nvidia-ctk cdi generate), which also brings the driver's
	// libraries into the container; otherwise the container gets the
	// GPUs' device nodes and the image must bring the user-space driver.
	CDI bool
	// DevDir is where the GPUs' device nodes lie; "" is /dev.
	DevDir string
	// NoFile is the container's limit of open files, soft and hard; 0
	// leaves podman's (which a host whose own hard limit is lower
	// refuses: the agent passes its own hard limit).
	NoFile uint64
	// NProc is the container's RLIMIT_NPROC (counted per uid: per job,
	// whose uid is its own) when the container has no Pids limit; 0
	// leaves podman's, which is over what podman itself may set where
	// the host's hard limit is lower.
	NProc uint64
}

// Name implements Runtime.
func (p *Podman) Name() string {
	if p.OCIRuntime != "" {
		return "podman (" + filepath.Base(p.OCIRuntime) + ")"
	}
	return "podman"
}

// FindPodman returns the podman on PATH.
func FindPodman() (string, error) {
	path, err := exec.LookPath("podman")
	if err != nil {
		return "", fmt.Errorf("runtime: podman not found on PATH (Debian: apt-get install podman): %w", err)
	}
	return path, nil
}

// HasNvidiaCDI reports whether the host has an NVIDIA CDI spec in the
// directories CDI reads (/etc/cdi, /var/run/cdi).
func HasNvidiaCDI() bool {
	for _, dir := range []string{"/etc/cdi", "/var/run/cdi"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "nvidia") && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".json")) {
				return true
			}
		}
	}
	return false
}

// global is podman's arguments before its command.
func (p *Podman) global() []string {
	if p.OCIRuntime != "" {
		return []string{"--runtime", p.OCIRuntime}
	}
	return nil
}

// maxPullMessage bounds what a failed pull reports of podman's output.
const maxPullMessage = 2048

// Pull implements Runtime: the ID of the image when the host holds it
// (podman image inspect), else podman pull's; the last of podman's output
// is the message of a failure. podman pull prints no byte counts off a
// terminal: the progress it tells is the bytes podman has read so far
// (its /proc/PID/io, every watchEvery), with the image's size for an OCI
// layout (its manifest's layers), none for a registry's.
func (p *Podman) Pull(ctx context.Context, image, auth string, progress func(Progress)) (string, error) {
	held := image
	var size int64
	if dir, ok := strings.CutPrefix(image, "oci:"); ok {
		// podman knows an image by its config's digest: a layout's image
		// the host holds already is not read again.
		if l, err := readLayout(dir); err == nil {
			held, size = l.id, l.size
		}
	}
	if id, err := p.run(ctx, "image", "inspect", "--format", "{{.Id}}", "--", held); err == nil && id != "" {
		return id, nil
	}
	for _, t := range []string{"oci:", "oci-archive:"} {
		if path, ok := strings.CutPrefix(image, t); ok && strings.ToLower(path) != path {
			// podman names the image it reads after the path, and a
			// repository's name is lower-case.
			return "", &PullError{Image: image, Msg: "podman cannot read a local image whose path has upper-case letters; move it to a lower-case path"}
		}
	}
	if progress != nil {
		progress(Progress{Total: size})
	}
	args := []string{"pull", "--quiet"}
	if auth != "" {
		args = append(args, "--authfile", auth)
	}
	var watch func(pid int)
	if progress != nil {
		watch = func(pid int) {
			// Reading a layout, podman reads some of it twice: no more
			// than the whole is told.
			done := readBytes(pid)
			if size > 0 {
				done = min(done, size)
			}
			progress(Progress{Done: done, Total: size})
		}
	}
	out, err := p.runWatched(ctx, watch, append(args, "--", image)...)
	if err != nil {
		msg := out
		if ctx.Err() != nil {
			msg = "interrupted: " + ctx.Err().Error()
		}
		if msg == "" {
			msg = err.Error()
		}
		if len(msg) > maxPullMessage {
			msg = "…" + msg[len(msg)-maxPullMessage:]
		}
		return "", &PullError{Image: image, Msg: msg}
	}
	lines := strings.Split(out, "\n")
	id := strings.TrimSpace(lines[len(lines)-1])
	if id == "" {
		return "", &PullError{Image: image, Msg: "podman pull printed no image ID"}
	}
	return id, nil
}

// run runs podman with args, in a minimal environment, and returns its
// output trimmed.
func (p *Podman) run(ctx context.Context, args ...string) (string, error) {
	return p.runWatched(ctx, nil, args...)
}

// watchEvery is how often runWatched calls its watch.
const watchEvery = 500 * time.Millisecond

// runWatched is run that, while podman runs, calls watch (when not nil)
// with its process ID every watchEvery.
func (p *Podman) runWatched(ctx context.Context, watch func(pid int), args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, p.Path, append(p.global(), args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if watch == nil {
			return
		}
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				watch(cmd.Process.Pid)
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-watched
	return strings.TrimSpace(out.String()), err
}

// readBytes is what process pid has read so far (rchar of
// /proc/PID/io: files and sockets), which for podman pull is mostly the
// image's layers as they arrive; 0 when it cannot be read.
func readBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0
	}
	n, _ := ParseReadBytes(b)
	return n
}

// ParseReadBytes reads rchar, the bytes a process read, from the text of
// /proc/PID/io ("rchar: N" among other lines).
func ParseReadBytes(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "rchar:")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("rchar: %q is not a count of bytes", strings.TrimSpace(v))
		}
		return n, nil
	}
	return 0, errors.New("rchar: missing")
}

// Command implements Runtime.
func (p *Podman) Command(c Container) (Process, error) {
	if c.Name == "" || c.Image == "" || c.EnvFile == "" {
		return Process{}, errors.New("runtime: a container needs a name, an image and an env file")
	}
	a := append([]string{p.Path}, p.global()...)
	a = append(a, "run", "--rm", "--name", c.Name,
		// Pulled before: a run never fetches on its own.
		"--pull", "never",
		// A PID 1 that forwards SIGTERM: a job's program run as PID 1
		// would ignore it.
		"--init",
		"--user", fmt.Sprintf("%d:%d", c.UID, c.GID),
		"--cap-drop", "all", "--security-opt", "no-new-privileges",
		"--env-file", c.EnvFile,
		"--log-driver", "none")
	if c.Network != "" {
		a = append(a, "--network", c.Network)
	}
	if c.Workdir != "" {
		a = append(a, "--workdir", c.Workdir)
	}
	switch {
	case c.Pids > 0:
		n := strconv.FormatInt(c.Pids, 10)
		a = append(a, "--pids-limit", n, "--ulimit", "nproc="+n+":"+n)
	case p.NProc > 0:
		n := strconv.FormatUint(p.NProc, 10)
		a = append(a, "--ulimit", "nproc="+n+":"+n)
	}
	if c.CPUMilli > 0 {
		a = append(a, "--cpus", strconv.FormatFloat(float64(c.CPUMilli)/1000, 'f', -1, 64))
	}
	if c.MemoryMiB > 0 {
		a = append(a, "--memory", strconv.FormatInt(c.MemoryMiB, 10)+"m")
	}
	if p.NoFile > 0 {
		n := strconv.FormatUint(p.NoFile, 10)
		a = append(a, "--ulimit", "nofile="+n+":"+n)
	}
	for _, d := range p.devices(c.GPUs) {
		a = append(a, "--device", d)
	}
	for _, m := range c.Mounts {
		if strings.ContainsAny(m.Source+m.Target, ",\n") {
			return Process{}, fmt.Errorf("runtime: mount %s:%s: a path with ',' cannot be mounted by podman", m.Source, m.Target)
		}
		spec := "type=bind,source=" + m.Source + ",destination=" + m.Target
		if m.ReadOnly {
			spec += ",ro=true"
		}
		a = append(a, "--mount", spec)
	}
	args := c.Args
	if c.Entrypoint != nil {
		ep, err := json.Marshal(c.Entrypoint)
		if err != nil {
			return Process{}, err
		}
		a = append(a, "--entrypoint", string(ep))
	}
	a = append(a, "--", c.Image)
	a = append(a, args...)
	dir := "/"
	for _, m := range c.Mounts {
		if m.Target == c.Workdir {
			dir = m.Source
		}
	}
	return Process{Argv: a, Dir: dir}, nil
}

// controlDevices are the driver's device nodes every CUDA process opens,
// given to a container with GPUs where they exist.
var controlDevices = []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}

// devices are the --device values for gpus: CDI names, or device nodes.
func (p *Podman) devices(gpus []GPU) []string {
	if len(gpus) == 0 {
		return nil
	}
	var out []string
	real := 0
	for _, g := range gpus {
		if g.Virtual {
			continue
		}
		real++
		switch {
		case p.CDI && g.UUID != "":
			out = append(out, "nvidia.com/gpu="+g.UUID)
		case p.CDI:
			out = append(out, "nvidia.com/gpu="+strconv.Itoa(g.Index))
		default:
			out = append(out, p.device("nvidia"+strconv.Itoa(g.Minor)))
		}
	}
	if p.CDI || real == 0 {
		return out
	}
	for _, name := range controlDevices {
		if exists(filepath.Join(p.devDir(), name)) {
			out = append(out, p.device(name))
		}
	}
	return out
}

// device is the --device value of the node name: HOST:/dev/NAME.
func (p *Podman) device(name string) string {
	return filepath.Join(p.devDir(), name) + ":/dev/" + name
}

func (p *Podman) devDir() string {
	if p.DevDir != "" {
		return p.DevDir
	}
	return "/dev"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeTimeout bounds one podman rm.
const removeTimeout = 30 * time.Second

// Remove implements Runtime: podman rm --force, which kills what runs of
// the container still.
func (p *Podman) Remove(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, removeTimeout)
	defer cancel()
	if out, err := p.run(ctx, "rm", "--force", "--ignore", "--time", "0", "--", name); err != nil {
		return fmt.Errorf("podman rm %s: %w: %s", name, err, out)
	}
	return nil
}

// digestPattern is a sha256 digest as an OCI layout names its blobs.
var digestPattern = regexp.MustCompile(`^sha256:([a-f0-9]{64})$`)

// maxLayoutJSON bounds what readLayout reads of a layout's JSON files.
const maxLayoutJSON = 1 << 20

// layout is what Pull reads of an OCI layout's image: the ID podman
// gives it and the size of its layers.
type layout struct {
	id   string
	size int64
}

// readLayout reads the image tagged in the OCI layout ref (DIR[:TAG], one
// image when no tag): the ID podman gives it, its config's digest, as the
// layout's index and the manifest it points to say, and its layers' size.
func readLayout(ref string) (layout, error) {
	dir, tag := ref, ""
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		dir, tag = ref[:i], ref[i+1:]
	}
	var index struct {
		Manifests []struct {
			MediaType   string            `json:"mediaType"`
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := readLayoutJSON(filepath.Join(dir, "index.json"), &index); err != nil {
		return layout{}, err
	}
	var digest string
	for _, m := range index.Manifests {
		if (tag == "" && len(index.Manifests) == 1) || m.Annotations["org.opencontainers.image.ref.name"] == tag {
			digest = m.Digest
		}
	}
	var manifest struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
		Layers []struct {
			Size int64 `json:"size"`
		} `json:"layers"`
	}
	if err := readBlob(dir, digest, &manifest); err != nil {
		return layout{}, err
	}
	hex := digestPattern.FindStringSubmatch(manifest.Config.Digest)
	if hex == nil {
		return layout{}, fmt.Errorf("layout %s: manifest %s names no sha256 config", dir, digest)
	}
	l := layout{id: hex[1]}
	for _, x := range manifest.Layers {
		if x.Size > 0 {
			l.size += x.Size
		}
	}
	return l, nil
}

// readBlob reads the JSON blob digest of the layout dir into v.
func readBlob(dir, digest string, v any) error {
	hex := digestPattern.FindStringSubmatch(digest)
	if hex == nil {
		return fmt.Errorf("layout %s: no manifest of that tag, or a digest %q that is not sha256", dir, digest)
	}
	return readLayoutJSON(filepath.Join(dir, "blobs", "sha256", hex[1]), v)
}

func readLayoutJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return json.NewDecoder(io.LimitReader(f, maxLayoutJSON)).Decode(v)
}

// Images implements ImageStore.
func (p *Podman) Images(ctx context.Context) ([]Image, error) {
	out, err := p.run(ctx, "images", "--format", "json")
	if err != nil {
		return nil, fmt.Errorf("podman images: %w: %s", err, out)
	}
	var list []struct {
		ID   string `json:"Id"`
		Size int64  `json:"Size"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("podman images: %w", err)
	}
	seen := map[string]bool{}
	var images []Image
	for _, i := range list {
		if !seen[i.ID] { // one line per name
			seen[i.ID] = true
			images = append(images, Image{ID: i.ID, Size: i.Size})
		}
	}
	return images, nil
}

// RemoveImage implements ImageStore: podman rmi without --force, which
// refuses an image a container uses.
func (p *Podman) RemoveImage(ctx context.Context, id string) error {
	if out, err := p.run(ctx, "rmi", "--", id); err != nil {
		return fmt.Errorf("podman rmi %s: %w: %s", id, err, out)
	}
	return nil
}
