package runtimetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/agent/runtime"
)

// Image is an image the fake's registry holds: its entrypoint and
// default arguments, as a host command line.
type Image struct {
	Entrypoint []string
	Cmd        []string
}

// Fake is a runtime.Runtime for tests. Set Images before use.
type Fake struct {
	// Images are the images a Pull finds, by reference; any other is
	// missing, as a registry answers.
	Images map[string]Image
	// Private are images whose pull needs an auth file: a pull without
	// one is refused, as a registry answers an anonymous client.
	Private map[string]bool
	// OnPull, when set, is called at each pull with its image and auth
	// file, while the file exists.
	OnPull func(image, auth string)
	// Progress are the steps a pull of an image reports, by reference, in
	// order, StepEvery apart; after the last one the pull waits for
	// Release, when set, to be closed (or for its context to end).
	Progress  map[string][]runtime.Progress
	StepEvery time.Duration
	Release   chan struct{}

	mu         sync.Mutex // guards pulls, containers and removed
	pulls      []Pull
	containers []runtime.Container
	removed    []string
}

// Pull is one pull the fake was asked for.
type Pull struct {
	Image string
	Auth  string
}

// Name implements runtime.Runtime.
func (f *Fake) Name() string { return "fake" }

// Pull implements runtime.Runtime.
// It returns the reference itself as the image's ID.
func (f *Fake) Pull(ctx context.Context, image, auth string, progress func(runtime.Progress)) (string, error) {
	f.mu.Lock()
	f.pulls = append(f.pulls, Pull{Image: image, Auth: auth})
	f.mu.Unlock()
	if f.OnPull != nil {
		f.OnPull(image, auth)
	}
	if steps := f.Progress[image]; len(steps) > 0 {
		for i, p := range steps {
			if i > 0 {
				select {
				case <-time.After(f.StepEvery):
				case <-ctx.Done():
					return "", &runtime.PullError{Image: image, Msg: "interrupted: " + ctx.Err().Error()}
				}
			}
			if progress != nil {
				progress(p)
			}
		}
		if f.Release != nil {
			select {
			case <-f.Release:
			case <-ctx.Done():
				return "", &runtime.PullError{Image: image, Msg: "interrupted: " + ctx.Err().Error()}
			}
		}
	}
	if _, ok := f.Images[image]; !ok {
		return "", &runtime.PullError{Image: image, Msg: "reading manifest: manifest unknown: manifest unknown"}
	}
	if f.Private[image] && auth == "" {
		return "", &runtime.PullError{Image: image, Msg: "requested access to the resource is denied: authentication required"}
	}
	return image, nil
}

// Command implements runtime.Runtime: it records c and runs its
// entrypoint and arguments (the image's where c sets none) on the host,
// as the job's user, in the host directory mounted at c.Workdir, with
// c.Env, every value and argument that names a path under a mount's
// target rewritten to the mount's source.
func (f *Fake) Command(c runtime.Container) (runtime.Process, error) {
	f.mu.Lock()
	f.containers = append(f.containers, c)
	f.mu.Unlock()
	img, ok := f.Images[c.Image]
	if !ok {
		return runtime.Process{}, fmt.Errorf("fake runtime: image %s was not pulled", c.Image)
	}
	argv, args := img.Entrypoint, img.Cmd
	if c.Entrypoint != nil {
		argv, args = c.Entrypoint, nil
	}
	if c.Args != nil {
		args = c.Args
	}
	argv = append(slices.Clone(argv), args...)
	if len(argv) == 0 {
		return runtime.Process{}, fmt.Errorf("fake runtime: image %s has no entrypoint and the job gives no command", c.Image)
	}
	mounts := slices.Clone(c.Mounts)
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Target) > len(mounts[j].Target) })
	host := func(p string) string {
		for _, m := range mounts {
			if p == m.Target || strings.HasPrefix(p, m.Target+"/") {
				return m.Source + p[len(m.Target):]
			}
		}
		return p
	}
	for i := range argv {
		argv[i] = host(argv[i])
	}
	env := make([]string, len(c.Env))
	for i, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[i] = k + "=" + host(v)
	}
	dir := host(c.Workdir)
	if dir == c.Workdir {
		return runtime.Process{}, fmt.Errorf("fake runtime: workdir %s is not a mounted directory", c.Workdir)
	}
	return runtime.Process{Argv: argv, Env: env, AsJob: true, Dir: dir}, nil
}

// Remove implements runtime.Runtime.
func (f *Fake) Remove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, name)
	return nil
}

// Pulls are the pulls asked for, in order.
func (f *Fake) Pulls() []Pull {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pulls)
}

// Containers are the containers asked for, in order.
func (f *Fake) Containers() []runtime.Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.containers)
}

// Removed are the names of the containers removed, in order.
func (f *Fake) Removed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}
