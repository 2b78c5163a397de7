package agent

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/agent/runtime/runtimetest"
	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

// trainImage is an image of the fake registry whose entrypoint is a shell.
const trainImage = "registry.example/team/train:1"

func fakeRuntime() *runtimetest.Fake {
	return &runtimetest.Fake{
		Images:  map[string]runtimetest.Image{trainImage: {Entrypoint: []string{"sh", "-c"}, Cmd: []string{"echo from-the-image"}}},
		Private: map[string]bool{},
	}
}

// A job that names an image runs in a container of its instance's GPUs
// alone, its own uid, its work and checkpoint directories at the stated
// paths and nothing else of the host's, its environment with the
// container's paths and none of the agent's; its checkpoint marker, which
// names a path in the container, is reported as the host's path; the
// container is removed once the job ended.
func TestContainerJob(t *testing.T) {
	t.Setenv("ALLOT_TOKEN", "agent-secret-canary") // the agent's environment: no job may see it
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	// Device minors that are not the indices, as on a host whose driver
	// numbers its device nodes otherwise.
	v := cfg.GPUs.(gpu.Virtual)
	for i := range v.Devices {
		v.Devices[i].Minor = 7 - i
	}
	fake := fakeRuntime()
	cfg.Runtime = fake
	runAgent(t, ctx, cfg)
	id := l.submit(t, `name: boxed
tenant: team
image: `+trainImage+`
command: [sh, -c]
args: ['echo "uid=$(id -u) cvd=$CUDA_VISIBLE_DEVICES"; mkdir -p "$ALLOT_CHECKPOINT_DIR/step-1"; echo /allot/checkpoints/step-1 > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; sleep 1']
env: {MODE: boxed}
resources: {gpus_per_instance: 2, cpu: 2, memory: 4Gi}
`)
	running := l.waitState(t, id, "Running")
	done := l.waitState(t, id, "Succeeded")
	cs := fake.Containers()
	if len(cs) != 1 {
		t.Fatalf("%d containers asked for, want 1: %+v", len(cs), cs)
	}
	c := cs[0]
	jobDir := filepath.Join(cfg.Work, "jobs", jobDirName(id))
	// Its GPUs, exactly, with their device nodes by minor number.
	if len(running.Allocations) != 1 || len(running.Allocations[0].GPUs) != 2 {
		t.Fatalf("allocations %+v, want one of 2 GPUs", running.Allocations)
	}
	var want []runtime.GPU
	var uuids []string
	for _, g := range running.Allocations[0].GPUs {
		u := fmt.Sprintf("GPU-virtual-h100-01-%d", g)
		want = append(want, runtime.GPU{Index: g, Minor: 7 - g, UUID: u, Virtual: true})
		uuids = append(uuids, u)
	}
	if !slices.Equal(c.GPUs, want) {
		t.Errorf("GPUs %+v, want the allocation's %+v", c.GPUs, want)
	}
	// Its directories, exactly, and its user.
	wantMounts := []runtime.Mount{
		{Source: filepath.Join(jobDir, "attempt-1"), Target: model.ContainerWorkDir},
		{Source: filepath.Join(jobDir, "checkpoints"), Target: model.ContainerCheckpointDir},
	}
	if !slices.Equal(c.Mounts, wantMounts) {
		t.Errorf("mounts %+v, want %+v", c.Mounts, wantMounts)
	}
	st, err := os.Stat(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if owner := st.Sys().(*syscall.Stat_t).Uid; c.UID != owner || c.GID != owner {
		t.Errorf("user %d:%d, want the owner of the job's directory, %d", c.UID, c.GID, owner)
	}
	if os.Geteuid() == 0 && (c.UID < DefaultUIDRange.First || c.UID > DefaultUIDRange.Last) {
		t.Errorf("uid %d is not a dynamic uid", c.UID)
	}
	// The image, the command as its entrypoint, the args, the limits.
	if c.Image != trainImage || !slices.Equal(c.Entrypoint, []string{"sh", "-c"}) || len(c.Args) != 1 ||
		c.Workdir != model.ContainerWorkDir || c.Network != "host" || c.CPUMilli != 2000 || c.MemoryMiB != 4096 || c.Pids != DefaultPidsLimit {
		t.Errorf("container %+v", c)
	}
	// Its environment: the container's paths, its GPUs by UUID, its own
	// variables, nothing of the agent's.
	for _, kv := range []string{"HOME=/allot/work", "ALLOT_CHECKPOINT_DIR=/allot/checkpoints", "ALLOT_JOB_CHECKPOINT_DIR=/allot/checkpoints",
		"CUDA_VISIBLE_DEVICES=" + strings.Join(uuids, ","), "MODE=boxed", "ALLOT_JOB_ID=" + id, "ALLOT_ATTEMPT=1"} {
		if !slices.Contains(c.Env, kv) {
			t.Errorf("env lacks %s: %q", kv, c.Env)
		}
	}
	for _, kv := range c.Env {
		if strings.Contains(kv, "agent-secret-canary") || strings.HasPrefix(kv, "ALLOT_TOKEN=") || strings.Contains(kv, cfg.Data) {
			t.Errorf("env holds the agent's %q", kv)
		}
	}
	if filepath.Dir(c.EnvFile) != filepath.Join(cfg.Data, "state") {
		t.Errorf("env file %s, want one in the agent's state directory", c.EnvFile)
	}
	// The agent cleans up once it reported the exit.
	waitFor(t, "the env file and the container removed", 5*time.Second, func() bool {
		_, err := os.Stat(c.EnvFile)
		return os.IsNotExist(err) && len(fake.Removed()) > 0
	})
	// The marker's container path is reported as the host's.
	if want := filepath.Join(jobDir, "checkpoints", "step-1"); done.CheckpointPath != want {
		t.Errorf("checkpoint %q, want %s", done.CheckpointPath, want)
	}
	l.logHas(t, id, "cvd="+strings.Join(uuids, ","))
	if got := fake.Removed(); !slices.Equal(got, []string{c.Name}) {
		t.Errorf("removed %q, want the container %s", got, c.Name)
	}
	if p := fake.Pulls(); len(p) != 1 || p[0].Image != trainImage {
		t.Errorf("pulls %+v, want one of %s", p, trainImage)
	}
}

// The image's entrypoint and arguments run when the job gives none.
func TestContainerJobImageEntrypoint(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	cfg.Runtime = fakeRuntime()
	runAgent(t, ctx, cfg)
	id := l.submit(t, "name: entry\ntenant: team\nimage: "+trainImage+"\n")
	l.waitState(t, id, "Succeeded")
	l.logHas(t, id, "from-the-image")
}

// An image that cannot be pulled (missing, private without credentials,
// or no runtime at all) leaves the job Queued with reason ImagePullFailed
// and the cause within seconds, and the pull is retried after a back-off,
// no retry of the job counted.
func TestContainerPullFailed(t *testing.T) {
	for _, tc := range []struct {
		name, image, cause string
		noRuntime          bool
	}{
		{"Missing", "registry.example/team/missing:1", "manifest unknown", false},
		{"Private", "registry.example/team/private:1", "authentication required", false},
		{"NoRuntime", trainImage, "runs no container runtime", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := l.config(t, "h100-01")
			fake := fakeRuntime()
			fake.Images["registry.example/team/private:1"] = runtimetest.Image{Entrypoint: []string{"true"}}
			fake.Private["registry.example/team/private:1"] = true
			if !tc.noRuntime {
				cfg.Runtime = fake
			}
			runAgent(t, ctx, cfg)
			id := l.submit(t, "name: pull\ntenant: team\nimage: "+tc.image+"\ncommand: [true]\n")
			start := time.Now()
			j := waitJob(t, l, id, func(j client.Job) bool { return j.Reason == "ImagePullFailed" })
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("ImagePullFailed after %s, want within seconds", took)
			}
			if j.State != "Queued" || !strings.Contains(j.Detail, tc.cause) || !strings.Contains(j.Detail, tc.image) {
				t.Errorf("job %s (%s): %s; want Queued with the cause %q", j.State, j.Reason, j.Detail, tc.cause)
			}
			if !strings.Contains(j.Detail, "back-off") {
				t.Errorf("detail %q does not say when it is retried", j.Detail)
			}
			// Retried: a second attempt fails the same way, its back-off doubled.
			j = waitJob(t, l, id, func(j client.Job) bool { return strings.Contains(j.Detail, "2 failed pull(s) in a row") })
			if j.Reason != "ImagePullFailed" || len(j.AttemptHistory) < 2 {
				t.Errorf("after a retry: %s (%s) with %d attempts", j.Reason, j.Detail, len(j.AttemptHistory))
			}
			if !tc.noRuntime && len(fake.Pulls()) < 2 {
				t.Errorf("pulls %+v, want a retry", fake.Pulls())
			}
			if w, err := l.cl.Why(context.Background(), id); err != nil || !strings.Contains(w.Detail, tc.cause) {
				t.Errorf("job why = %+v, %v; want the cause %q", w, err, tc.cause)
			}
		})
	}
}

// Mounts the operator does not allow fail the instance's start, naming the
// mount; a local image outside the image directories fails its pull.
func TestContainerMountsAllowed(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	allowed := t.TempDir()
	if err := os.Mkdir(filepath.Join(allowed, "sets"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.MountAllow = []string{allowed}
	fake := fakeRuntime()
	cfg.Runtime = fake
	runAgent(t, ctx, cfg)
	ok := l.submit(t, "name: ok\ntenant: team\nimage: "+trainImage+"\ncommand: [true]\nmounts: ['"+allowed+"/sets:/data:ro']\n")
	l.waitState(t, ok, "Succeeded")
	if c := fake.Containers(); len(c) != 1 || !slices.Contains(c[0].Mounts, runtime.Mount{Source: filepath.Join(allowed, "sets"), Target: "/data", ReadOnly: true}) {
		t.Errorf("containers %+v, want the allowed mount", c)
	}
	bad := l.submit(t, "name: bad\ntenant: team\nimage: "+trainImage+"\ncommand: [true]\nmounts: ['"+cfg.Data+":/data']\n")
	j := waitJob(t, l, bad, func(j client.Job) bool { return strings.Contains(j.Detail, "mounts[0].source") })
	if !strings.Contains(j.Detail, "not under a directory this agent allows") {
		t.Errorf("detail %q", j.Detail)
	}
	local := l.submit(t, "name: local\ntenant: team\nimage: oci:"+cfg.Data+"/img:latest\ncommand: [true]\n")
	j = waitJob(t, l, local, func(j client.Job) bool { return j.Reason == "ImagePullFailed" })
	if !strings.Contains(j.Detail, "--image-dir") {
		t.Errorf("detail %q", j.Detail)
	}
}

// waitJob polls job id until ok holds, for 15 seconds at most.
func waitJob(t *testing.T, l *lab, id string, ok func(client.Job) bool) client.Job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j, err := l.cl.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s (%s: %s)", id, j.State, j.Reason, j.Detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestInsideAndOnHost(t *testing.T) {
	dir := "/work/jobs/j1/checkpoints"
	for _, tc := range []struct{ host, inside string }{
		{dir, "/allot/checkpoints"},
		{dir + "/rank-1", "/allot/checkpoints/rank-1"},
		{dir + "/rank-1/step-9", "/allot/checkpoints/rank-1/step-9"},
	} {
		if got := insideContainer(dir, tc.host); got != tc.inside {
			t.Errorf("insideContainer(%s) = %s, want %s", tc.host, got, tc.inside)
		}
		if got := onHost(dir, tc.inside); got != tc.host {
			t.Errorf("onHost(%s) = %s, want %s", tc.inside, got, tc.host)
		}
	}
	for _, p := range []string{"s3://bucket/ckpt", "/work/jobs/j2/checkpoints/x", "step-1", "/allot/checkpoints-evil/x"} {
		if got := insideContainer(dir, p); got != p {
			t.Errorf("insideContainer(%s) = %s, want it unchanged", p, got)
		}
		if got := onHost(dir, p); got != p {
			t.Errorf("onHost(%s) = %s, want it unchanged", p, got)
		}
	}
	if got := containerGPUs([]client.AssignedGPU{{Index: 3}, {Index: 5}}); !slices.Equal(got, []string{"0", "1"}) {
		t.Errorf("containerGPUs without UUIDs = %q, want positions 0,1", got)
	}
}

// A private image pulls with the credential its tenant set for the
// registry: the agent gets it for that pull alone, in an auth file only it
// reads, removed once the pull ended, and the job sees none of it.
func TestContainerPrivateImageWithCredential(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	const private, secret = "registry.example/team/private:1", "registry-password-canary"
	fake := fakeRuntime()
	fake.Images[private] = runtimetest.Image{Entrypoint: []string{"sh", "-c", "env; echo pulled-and-ran"}}
	fake.Private[private] = true
	var authSeen string
	fake.OnPull = func(image, auth string) {
		if auth != "" {
			b, err := os.ReadFile(auth)
			st, _ := os.Stat(auth)
			if err == nil && st.Mode().Perm() == 0o600 {
				authSeen = string(b)
			}
		}
	}
	cfg.Runtime = fake
	runAgent(t, ctx, cfg)
	if _, err := l.cl.SetRegistryCredential(context.Background(), "team", "registry.example", "bot", secret); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cl.SetRegistryCredential(context.Background(), "team", "other.example", "bot", "not-this-one"); err != nil {
		t.Fatal(err)
	}
	id := l.submit(t, "name: private\ntenant: team\nimage: "+private+"\n")
	l.waitState(t, id, "Succeeded")
	l.logHas(t, id, "pulled-and-ran")
	want := base64.StdEncoding.EncodeToString([]byte("bot:" + secret))
	if !strings.Contains(authSeen, `"registry.example":{"auth":"`+want+`"}`) || strings.Contains(authSeen, "other.example") {
		t.Errorf("auth file %q, want the credential of registry.example alone", authSeen)
	}
	pulls := fake.Pulls()
	if len(pulls) != 1 || pulls[0].Auth == "" {
		t.Fatalf("pulls %+v, want one with an auth file", pulls)
	}
	if _, err := os.Stat(pulls[0].Auth); !os.IsNotExist(err) {
		t.Errorf("auth file %s outlived the pull: %v", pulls[0].Auth, err)
	}
	var log strings.Builder
	if err := l.cl.Logs(context.Background(), id, 1, false, &log); err != nil {
		t.Fatal(err)
	}
	for _, c := range fake.Containers() {
		for _, kv := range c.Env {
			if strings.Contains(kv, secret) || strings.Contains(kv, want) {
				t.Errorf("the job's environment holds the credential: %s", kv)
			}
		}
	}
	if strings.Contains(log.String(), secret) || strings.Contains(log.String(), want) {
		t.Error("the job's log holds the credential")
	}
	cs, err := l.cl.RegistryCredentials(context.Background(), "team")
	if err != nil || len(cs) != 2 {
		t.Fatalf("credentials %+v, %v", cs, err)
	}
}

// The agent reports the images it pulled with its heartbeats, and the
// server's core then prefers the node that holds a job's image among
// nodes otherwise alike: the next job of that image goes there, not to
// the node of lower rank.
func TestContainerImageLocality(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, node := range []string{"h100-01", "h100-02"} {
		cfg := l.config(t, node)
		cfg.Runtime = fakeRuntime()
		runAgent(t, ctx, cfg)
	}
	job := func(name, extra string) string {
		return l.submit(t, "name: "+name+"\ntenant: team\nimage: "+trainImage+"\ncommand: [sh, -c]\nargs: ['true']\nresources: {gpus_per_instance: 1}\n"+extra)
	}
	first := job("first", "placement: {nodes: [h100-02]}\n")
	l.waitState(t, first, "Succeeded")
	waitFor(t, "h100-02's heartbeat to report the image", 5*time.Second, func() bool {
		return slices.Equal(l.srv.NodeImages("h100-02"), []string{trainImage})
	})
	if got := l.srv.NodeImages("h100-01"); len(got) != 0 {
		t.Errorf("h100-01 reports images %q it never pulled", got)
	}
	if d, err := l.cl.GetNode(context.Background(), "h100-02"); err != nil || !slices.Equal(d.Images, []string{trainImage}) {
		t.Errorf("GET /v1/nodes/h100-02: images %q, %v; want the image it holds", d.Images, err)
	}
	second := job("second", "")
	ranOn := func(id string) []string {
		j := l.waitState(t, id, "Succeeded")
		if len(j.AttemptHistory) != 1 {
			t.Fatalf("job %s: attempts %+v, want one", id, j.AttemptHistory)
		}
		return j.AttemptHistory[0].Nodes
	}
	if got := ranOn(second); !slices.Equal(got, []string{"h100-02"}) {
		t.Errorf("the second job ran on %q, want h100-02, which holds its image", got)
	}
	// A job without an image: the node of lower rank, as before.
	bare := l.submit(t, "name: bare\ntenant: team\ncommand: ['true']\nresources: {gpus_per_instance: 1}\n")
	if got := ranOn(bare); !slices.Equal(got, []string{"h100-01"}) {
		t.Errorf("the job without an image ran on %q, want h100-01", got)
	}
}
