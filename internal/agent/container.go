package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

// This file is sandbox.go's isolation for an instance that runs from an
// image: the same uid, directories, cgroup and environment, handed to the
// container runtime as one runtime.Container. The container sees the
// instance's attempt directory at model.ContainerWorkDir and the job's
// checkpoint directory at model.ContainerCheckpointDir (its rank's part
// below it), the mounts the job asks for that the operator allows, and
// nothing else of the host's files; its GPUs are the instance's alone.

// pullTimeout bounds one pull of an image.
const pullTimeout = 30 * time.Minute

// pull makes the image of x, instance k, ready on this host before it
// starts, and returns the runtime's name of it (an ID): a local image
// must lie under a directory the operator allows. How far the pull has
// come goes to the server as it goes (meterPull).
func (a *Agent) pull(ctx context.Context, k key, x client.Assignment) (string, error) {
	if a.cfg.Runtime == nil {
		return "", runtime.ErrNoRuntime
	}
	image := x.Container.Image
	ref, err := model.ParseImage(image)
	if err != nil {
		return "", &runtime.PullError{Image: image, Msg: err.Error()}
	}
	if ref.Local() {
		if _, err := allowedPath(ref.Repository, a.cfg.ImageDirs); err != nil {
			return "", &runtime.PullError{Image: image, Msg: fmt.Sprintf("%s (allot agent --image-dir)", err)}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	auth, err := a.authFile(x.RegistryAuth)
	if err != nil {
		return "", err
	}
	if auth != "" {
		defer os.Remove(auth)
	}
	start := time.Now()
	progress, stop := a.meterPull(k)
	id, err := a.cfg.Runtime.Pull(ctx, image, auth, progress)
	stop()
	if err != nil {
		return "", err
	}
	a.log.Info("image ready", "image", image, "id", id, "runtime", a.cfg.Runtime.Name(), "took", time.Since(start).Round(time.Millisecond))
	a.usedImage(image, id, time.Now())
	return id, nil
}

// DefaultPullProgressEvery is how often, at most, an agent reports how
// far the pull of an instance's image has come.
const DefaultPullProgressEvery = time.Second

// meterPull returns the progress function of the pull of instance k's
// image and the function that ends it. The first progress goes to the
// server at once (a "pulling" event, which 'job show' shows of a
// Preparing job), later ones at most once every
// Config.PullProgressEvery, the latest then; each is sent once, not
// retried (the next one says more). stop returns once no report is on
// its way, so that none follows the instance's "started".
func (a *Agent) meterPull(k key) (progress func(runtime.Progress), stop func()) {
	every := a.cfg.PullProgressEvery
	if every <= 0 {
		every = DefaultPullProgressEvery
	}
	var (
		mu     sync.Mutex // guards latest and fresh
		latest runtime.Progress
		fresh  bool
	)
	notify, done, finished := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	progress = func(p runtime.Progress) {
		mu.Lock()
		latest, fresh = p, true
		mu.Unlock()
		select {
		case notify <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(finished)
		var last time.Time
		for {
			select {
			case <-done:
				return
			case <-notify:
			}
			if wait := every - time.Since(last); !last.IsZero() && wait > 0 {
				select {
				case <-done:
					return
				case <-time.After(wait):
				}
			}
			mu.Lock()
			p, ok := latest, fresh
			fresh = false
			mu.Unlock()
			if !ok {
				continue
			}
			last = time.Now()
			ctx, cancel := a.bounded(a.reports)
			err := a.cfg.Client.Event(ctx, k.job, k.attempt, client.AttemptEvent{Type: "pulling", Rank: k.rank, Node: a.cfg.Node,
				Pulled: p.Done, PullTotal: p.Total})
			cancel()
			if err != nil {
				a.log.Debug("pull progress not reported", "job", k.job, "attempt", k.attempt, "rank", k.rank, "err", err)
			}
		}
	}()
	return progress, func() { close(done); <-finished }
}

// authFile writes the registry credential ra, for one pull, in an auth
// file of the agent's state directory (0600, the agent's alone) as
// podman's --authfile reads it, and returns its path; "" for none. The
// caller removes it once the pull ended.
func (a *Agent) authFile(ra *client.RegistryAuth) (string, error) {
	if ra == nil {
		return "", nil
	}
	b, err := json.Marshal(map[string]map[string]map[string]string{"auths": {ra.Registry: {"auth": ra.Auth}}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(a.cfg.Data, "state", "pull-"+opaqueName()+".auth")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("registry auth file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("registry auth file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("registry auth file: %w", err)
	}
	return path, nil
}

// allowedPath resolves path (links included) and checks that it lies in
// or is one of dirs, resolved alike; it returns the resolved path.
func allowedPath(path string, dirs []string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if real == rd || within(rd, real) {
			return real, nil
		}
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("%s: this agent allows no host directories", path)
	}
	return "", fmt.Errorf("%s is not under a directory this agent allows (%v)", path, dirs)
}

// containerize turns s, the instance's process as sandbox and spec built
// it, into the container runtime's process for x's image (as pull named
// it), and returns the container's name. The job's environment is launch.Environ's with the
// container's paths, written to DATA/state/KEY.env, which only the agent
// reads.
func (a *Agent) containerize(x client.Assignment, image string, sb sandbox, s *launch.Spec) (string, error) {
	if a.cfg.Runtime == nil {
		return "", runtime.ErrNoRuntime
	}
	c := x.Container
	mounts := []runtime.Mount{
		{Source: sb.dir, Target: model.ContainerWorkDir},
		{Source: sb.jobCkpt, Target: model.ContainerCheckpointDir},
	}
	for i, m := range c.Mounts {
		src, err := allowedPath(m.Source, a.cfg.MountAllow)
		if err != nil {
			return "", fmt.Errorf("mounts[%d].source: %w (allot agent --mount-allow)", i, err)
		}
		mounts = append(mounts, runtime.Mount{Source: src, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	in := *s // the job's view of itself
	in.Dir = model.ContainerWorkDir
	in.JobCheckpointDir = model.ContainerCheckpointDir
	in.CheckpointDir = insideContainer(sb.jobCkpt, s.CheckpointDir)
	in.ResumeFrom = insideContainer(sb.jobCkpt, s.ResumeFrom)
	in.GPUs = containerGPUs(x.GPUs)
	env := launch.Environ(in)
	envFile := filepath.Join(a.cfg.Data, "state", sb.recordKey+".env")
	if err := runtime.WriteEnvFile(envFile, env); err != nil {
		return "", err
	}
	rc := runtime.Container{
		Name: "allot-" + opaqueName(), Image: image, Args: c.Args, Env: env, EnvFile: envFile,
		Workdir: cmp.Or(c.Workdir, model.ContainerWorkDir), UID: sb.uid, GID: sb.gid, Mounts: mounts,
		Network: "host", CPUMilli: x.CPUMilli, MemoryMiB: x.MemoryMiB,
	}
	if len(x.Command) > 0 {
		rc.Entrypoint = x.Command
	}
	for _, g := range x.GPUs {
		rc.GPUs = append(rc.GPUs, runtime.GPU{Index: g.Index, Minor: a.minorOf(g.Index), UUID: g.UUID, Virtual: a.virtual})
	}
	if n := a.pidsLimit(); n > 0 {
		rc.Pids = n
	}
	p, err := a.cfg.Runtime.Command(rc)
	if err != nil {
		_ = os.Remove(envFile)
		return "", err
	}
	s.Command, s.Dir = p.Argv, p.Dir
	s.ExactEnv = p.Env
	if s.ExactEnv == nil {
		s.ExactEnv = slices.Clone(launch.BaseEnv)
	}
	if !p.AsJob {
		s.Credential = nil // the runtime's, which runs the container as the job's user
	}
	return rc.Name, nil
}

// minorOf is the minor number of the device node of the GPU of index i,
// as discovery found it; where it could not tell, the index stands in
// (the driver's numbering on most hosts).
func (a *Agent) minorOf(i int) int {
	for _, d := range a.devs {
		if d.Index == i && d.Minor >= 0 {
			return d.Minor
		}
	}
	return i
}

// insideContainer is path, a host path in the job's checkpoint directory
// dir, as the container sees it; any other path (a URL) is as it is.
func insideContainer(dir, path string) string {
	if path == dir {
		return model.ContainerCheckpointDir
	}
	if within(dir, path) {
		rel, _ := filepath.Rel(dir, path)
		return filepath.Join(model.ContainerCheckpointDir, rel)
	}
	return path
}

// onHost is path, as a job in a container wrote it into its checkpoint
// marker, on the host, where the job's checkpoint directory dir is
// model.ContainerCheckpointDir in the container; a relative path, or one
// outside, is as it is (confine refuses what is outside dir).
func onHost(dir, path string) string {
	if path == model.ContainerCheckpointDir {
		return dir
	}
	if within(model.ContainerCheckpointDir, path) {
		rel, _ := filepath.Rel(model.ContainerCheckpointDir, path)
		return filepath.Join(dir, rel)
	}
	return path
}

// containerGPUs are the instance's GPUs as CUDA_VISIBLE_DEVICES names them
// in its container: by UUID when every one has one, else by position, as
// the container's devices are numbered from 0.
func containerGPUs(gpus []client.AssignedGPU) []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		if g.UUID == "" {
			for j := range out {
				out[j] = strconv.Itoa(j)
			}
			return out
		}
		out[i] = g.UUID
	}
	return out
}

// removeContainer removes what is left of a container of an instance that
// ended or was fenced.
func (a *Agent) removeContainer(name string) {
	if a.cfg.Runtime == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.cfg.Runtime.Remove(ctx, name); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("container not removed", "container", name, "err", err)
	}
}
