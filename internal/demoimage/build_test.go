package demoimage

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Build writes an OCI layout that holds the executable, what it loads,
// its configuration and its tag; building again gives the same image and
// replaces it rather than adding one.
func TestBuild(t *testing.T) {
	exe, err := os.Executable() // a test binary: an executable like allot
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "img")
	r, err := Build(dir, "v1", exe)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ref() != "oci:"+dir+":v1" || !slices.Contains(r.Files, Executable) {
		t.Fatalf("result %+v", r)
	}
	again, err := Build(dir, "v1", exe)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != r.Digest {
		t.Errorf("the same executable gave two images: %s, %s", r.Digest, again.Digest)
	}
	if _, err := Build(dir, "other", exe); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, d := range m.Manifests {
		tags = append(tags, d.Annotations[refName])
	}
	slices.Sort(tags)
	if !slices.Equal(tags, []string{"other", "v1"}) {
		t.Fatalf("tags %q, want other and v1 once each", tags)
	}
	img, err := idx.Image(r.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{Executable}) || !slices.Equal(cfg.Config.Cmd, []string{"demo", "serve"}) || cfg.OS != "linux" {
		t.Errorf("config %+v", cfg.Config)
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = h
	}
	st, _ := os.Stat(exe)
	if h := files[Executable]; h == nil || h.Size != st.Size() || h.Mode&0o111 == 0 {
		t.Errorf("the executable in the image: %+v", h)
	}
	for _, d := range []string{"/allot/work", "/allot/checkpoints", "/tmp"} {
		if h := files[d]; h == nil || h.Typeflag != tar.TypeDir {
			t.Errorf("no directory %s in the image", d)
		}
	}
	// Every library the executable loads, and its interpreter, are there.
	want, err := filesOf(exe)
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		if files[p] == nil {
			t.Errorf("%s is missing from the image", p)
		}
	}
	if out, err := exec.Command("ldd", exe).Output(); err == nil && !strings.Contains(string(out), "statically linked") &&
		!strings.Contains(string(out), "not a dynamic") {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) >= 1 && strings.HasPrefix(f[0], "lib") && !slices.ContainsFunc(r.Files, func(p string) bool { return filepath.Base(p) == f[0] }) {
				t.Errorf("ldd lists %s, which the image lacks (%q)", f[0], r.Files)
			}
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	exe, _ := os.Executable()
	for _, tc := range []struct{ dir, tag, exe, want string }{
		{"/tmp/x", "bad tag", exe, "tag"},
		{"rel", "v1", exe, "absolute"},
		{t.TempDir(), "v1", "/nonexistent/allot", "read the executable"},
		{t.TempDir(), "v1", "/etc/hostname", "read the executable"},
	} {
		if _, err := Build(tc.dir, tc.tag, tc.exe); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%q, %q, %q) = %v, want an error about %s", tc.dir, tc.tag, tc.exe, err, tc.want)
		}
	}
}
