package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The command line podman gets: the instance's GPUs alone (device nodes
// by the driver's minor numbers, not their indices, or CDI names), its user, limits, mounts and env file, no capability,
// the host's network, the job's command as the entrypoint.
func TestPodmanCommand(t *testing.T) {
	dev := t.TempDir()
	for _, n := range []string{"nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "nvidia-uvm"} {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := Container{Name: "allot-0123456789abcdef", Image: "sha256:feed", Entrypoint: []string{"python", "train.py"},
		Args: []string{"--epochs", "3"}, EnvFile: "/data/state/j.1.0.env", Workdir: "/allot/work", UID: 1879048200, GID: 1879048200,
		GPUs:    []GPU{{Index: 0, Minor: 3, UUID: "GPU-a"}, {Index: 2, Minor: 0, UUID: "GPU-c"}},
		Mounts:  []Mount{{Source: "/w/jobs/jx/attempt-1", Target: "/allot/work"}, {Source: "/data/sets", Target: "/data", ReadOnly: true}},
		Network: "host", CPUMilli: 1500, MemoryMiB: 4096, Pids: 4096}
	p := &Podman{Path: "/usr/bin/podman", OCIRuntime: "runc", DevDir: dev, NoFile: 20000}
	got, err := p.Command(c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin/podman", "--runtime", "runc", "run", "--rm", "--name", "allot-0123456789abcdef", "--pull", "never", "--init",
		"--user", "1879048200:1879048200", "--cap-drop", "all", "--security-opt", "no-new-privileges",
		"--env-file", "/data/state/j.1.0.env", "--log-driver", "none", "--network", "host", "--workdir", "/allot/work",
		"--pids-limit", "4096", "--ulimit", "nproc=4096:4096", "--cpus", "1.5", "--memory", "4096m", "--ulimit", "nofile=20000:20000",
		"--device", dev + "/nvidia3:/dev/nvidia3", "--device", dev + "/nvidia0:/dev/nvidia0",
		"--device", dev + "/nvidiactl:/dev/nvidiactl", "--device", dev + "/nvidia-uvm:/dev/nvidia-uvm",
		"--mount", "type=bind,source=/w/jobs/jx/attempt-1,destination=/allot/work",
		"--mount", "type=bind,source=/data/sets,destination=/data,ro=true",
		"--entrypoint", `["python","train.py"]`, "--", "sha256:feed", "--epochs", "3"}
	if !slices.Equal(got.Argv, want) {
		t.Errorf("argv\n got %q\nwant %q", got.Argv, want)
	}
	if got.Env != nil || got.AsJob || got.Dir != "/w/jobs/jx/attempt-1" {
		t.Errorf("process %+v: want podman's own environment, as the agent's user, in the work directory", got)
	}
	for _, n := range []string{"nvidia1", "nvidia2"} {
		if slices.Contains(got.Argv, dev+"/"+n+":/dev/"+n) {
			t.Errorf("%s, the device of no GPU of the instance (GPU 2's index, GPU 1's node), is in the container", n)
		}
	}

	// With a CDI spec: the GPUs by CDI name, nothing else of /dev.
	p.CDI = true
	got, err = p.Command(c)
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	for i, a := range got.Argv {
		if a == "--device" {
			devices = append(devices, got.Argv[i+1])
		}
	}
	if want := []string{"nvidia.com/gpu=GPU-a", "nvidia.com/gpu=GPU-c"}; !slices.Equal(devices, want) {
		t.Errorf("CDI devices %q, want %q", devices, want)
	}

	// Virtual GPUs (allot up): no device to give.
	p.CDI = false
	v := c
	v.GPUs = []GPU{{Index: 0, Virtual: true}}
	got, err = p.Command(v)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Argv, "--device") {
		t.Errorf("a virtual GPU gave a device: %q", got.Argv)
	}

	// The image's entrypoint: no --entrypoint; no GPUs: no device.
	c.Entrypoint, c.GPUs = nil, nil
	got, err = p.Command(c)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Argv, "--entrypoint") || slices.Contains(got.Argv, "--device") {
		t.Errorf("argv %q", got.Argv)
	}
	for _, bad := range []Container{{Image: "x", EnvFile: "f"}, {Name: "n", EnvFile: "f"}, {Name: "n", Image: "x"}} {
		if _, err := p.Command(bad); err == nil {
			t.Errorf("Command(%+v) passed, want an error", bad)
		}
	}
	c.Mounts = append(c.Mounts, Mount{Source: "/a,b", Target: "/x"})
	if _, err := p.Command(c); err == nil {
		t.Error("a source with ',' passed")
	}
}

// podmanScript is a podman for tests: a shell script that logs its
// arguments and answers as the script says.
func podmanScript(t *testing.T, body string) (path, logPath string) {
	t.Helper()
	dir := t.TempDir()
	path, logPath = filepath.Join(dir, "podman"), filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" >> " + logPath + "\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, logPath
}

// A pull that fails reports podman's (the registry's) message; an image the
// host holds is not pulled again.
func TestPodmanPull(t *testing.T) {
	ctx := context.Background()
	path, log := podmanScript(t, `case "$1" in
images) echo '[{"Id": "aa", "Size": 10}, {"Id": "aa", "Size": 10}, {"Id": "bb", "Size": 5}]'; exit 0;;
rmi) [ "$3" = bb ] && { echo "Error: image used by 1 container" >&2; exit 2; }; exit 0;;
image) case "$6" in held) echo sha256:held; exit 0;; cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc) echo cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc; exit 0;; esac
  echo "Error: $6: image not known" >&2; exit 125;;
pull) [ "$3" = --authfile ] && { echo sha256:private; exit 0; }
  case "$4" in oci:*:v3) sleep 1.2; echo sha256:fromlayout; exit 0;; oci:*) echo sha256:fromlayout; exit 0;; esac
  echo "Trying to pull registry.example/x:1..." >&2
  echo "Error: initializing source docker://registry.example/x:1: reading manifest 1 in registry.example/x: manifest unknown" >&2; exit 125;;
esac`)
	p := &Podman{Path: path}
	id, err := p.Pull(ctx, "held", "", nil)
	if err != nil || id != "sha256:held" {
		t.Fatalf("Pull(held) = %q, %v; want the held image's ID", id, err)
	}
	_, err = p.Pull(ctx, "registry.example/x:1", "", nil)
	var pe *PullError
	if !errors.As(err, &pe) || pe.Image != "registry.example/x:1" || !strings.Contains(pe.Msg, "manifest unknown") {
		t.Fatalf("Pull(missing) = %v, want a PullError with the registry's message", err)
	}
	id, err = p.Pull(ctx, "registry.example/private:1", "/data/auth.json", nil)
	if err != nil || id != "sha256:private" {
		t.Fatalf("Pull(private, auth) = %q, %v", id, err)
	}
	args, _ := os.ReadFile(log)
	if !strings.Contains(string(args), "pull --quiet --authfile /data/auth.json -- registry.example/private:1") {
		t.Errorf("podman's arguments:\n%s", args)
	}
	// A layout's image the host holds (by its config's digest) is not
	// read again; another tag of the layout is.
	// A lower-case path, as podman needs (t.TempDir's has the test's name).
	layout, err := os.MkdirTemp("", "allot-layout-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(layout) })
	manifest := `{"config": {"digest": "sha256:` + strings.Repeat("c", 64) + `"}}`
	blob := strings.Repeat("d", 64)
	if err := os.MkdirAll(filepath.Join(layout, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	blob3 := strings.Repeat("f", 64)
	manifest3 := `{"config": {"digest": "sha256:` + strings.Repeat("e", 64) + `"}, "layers": [{"size": 100}, {"size": 23}]}`
	for name, body := range map[string]string{"index.json": `{"manifests": [{"digest": "sha256:` + blob + `", "annotations": {"org.opencontainers.image.ref.name": "v1"}},
		{"digest": "sha256:` + blob3 + `", "annotations": {"org.opencontainers.image.ref.name": "v3"}}]}`,
		"blobs/sha256/" + blob: manifest, "blobs/sha256/" + blob3: manifest3} {
		if err := os.WriteFile(filepath.Join(layout, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if id, err := p.Pull(ctx, "oci:"+layout+":v1", "", nil); err != nil || id != strings.Repeat("c", 64) {
		t.Errorf("Pull of a held layout image = %q, %v; want its config's digest", id, err)
	}
	// A tag the layout lacks is not the held image: podman is asked, and
	// the progress says only that the pull began.
	var told []Progress
	tell := func(x Progress) { told = append(told, x) }
	if id, err := p.Pull(ctx, "oci:"+layout+":v2", "", tell); err != nil || id != "sha256:fromlayout" {
		t.Errorf("Pull of a tag the layout lacks = %q, %v; want podman's pull", id, err)
	}
	if !slices.Equal(told, []Progress{{}}) {
		t.Errorf("progress %+v, want one, without figures", told)
	}
	// A layout's image the host lacks: the progress has its layers' size.
	told = nil
	if id, err := p.Pull(ctx, "oci:"+layout+":v3", "", tell); err != nil || id != "sha256:fromlayout" {
		t.Errorf("Pull of a layout's image the host lacks = %q, %v", id, err)
	}
	// Then, while podman runs, what it has read so far.
	if len(told) < 2 || told[0] != (Progress{Total: 123}) || told[len(told)-1].Done <= 0 || told[len(told)-1].Total != 123 {
		t.Errorf("progress %+v, want the layers' 123 bytes as the total, then what podman read so far", told)
	}
	told = nil
	if _, err := p.Pull(ctx, "held", "", tell); err != nil || told != nil {
		t.Errorf("a held image: %v, progress %+v; want none", err, told)
	}
	if _, err := p.Pull(ctx, "oci:/srv/Images/demo:1", "", nil); err == nil || !strings.Contains(err.Error(), "lower-case") {
		t.Errorf("Pull of a local image at an upper-case path: %v, want an error that says why", err)
	}
	images, err := p.Images(ctx)
	if err != nil || !slices.Equal(images, []Image{{ID: "aa", Size: 10}, {ID: "bb", Size: 5}}) {
		t.Errorf("Images = %+v, %v; want each image once", images, err)
	}
	if err := p.RemoveImage(ctx, "aa"); err != nil {
		t.Error(err)
	}
	if err := p.RemoveImage(ctx, "bb"); err == nil || !strings.Contains(err.Error(), "used by") {
		t.Errorf("RemoveImage of a used image = %v, want podman's refusal", err)
	}
	if err := p.Remove(ctx, "allot-x"); err != nil {
		t.Fatal(err)
	}
	args, _ = os.ReadFile(log)
	if !strings.Contains(string(args), "rm --force --ignore --time 0 -- allot-x") {
		t.Errorf("podman's arguments:\n%s", args)
	}
}

func TestParseReadBytes(t *testing.T) {
	n, err := ParseReadBytes([]byte("rchar: 120400\nwchar: 3\nsyscr: 9\n"))
	if err != nil || n != 120400 {
		t.Errorf("ParseReadBytes = %d, %v; want 120400", n, err)
	}
	for _, bad := range []string{"", "wchar: 3\n", "rchar: -1\n", "rchar: many\n"} {
		if _, err := ParseReadBytes([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "rchar: ") {
			t.Errorf("ParseReadBytes(%q) = %v, want an error naming rchar", bad, err)
		}
	}
	// This process's own.
	if n := readBytes(os.Getpid()); n <= 0 {
		t.Errorf("readBytes of this process = %d", n)
	}
}

func FuzzParseReadBytes(f *testing.F) {
	f.Add([]byte("rchar: 120400\nwchar: 3\n"))
	f.Add([]byte("rchar: x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseReadBytes(b)
		if (err == nil && n < 0) || (err != nil && (n != 0 || !strings.HasPrefix(err.Error(), "rchar: "))) {
			t.Fatalf("ParseReadBytes(%q) = %d, %v", b, n, err)
		}
	})
}

func TestWriteEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.env")
	if err := WriteEnvFile(path, []string{"A=1", "B=two words", "C="}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "A=1\nB=two words\nC=\n" {
		t.Fatalf("env file %q, %v", b, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := WriteEnvFile(path, []string{"A=1", "SECRET=a\nINJECTED=1"}); err == nil || !strings.Contains(err.Error(), "SECRET") {
		t.Errorf("a value with a line break: %v, want an error naming SECRET", err)
	}
}
