package demoimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Executable is where the image holds allot.
const Executable = "/usr/local/bin/allot"

// DefaultTag is the tag Build gives the image when none is asked for.
const DefaultTag = "latest"

// refName is the annotation of an OCI layout that names an image's tag.
const refName = "org.opencontainers.image.ref.name"

// tagPattern is a tag as OCI references write it.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// epoch is every file's time: the same executable gives the same image.
var epoch = time.Unix(0, 0).UTC()

// Result is what Build wrote.
type Result struct {
	Dir    string
	Tag    string
	Digest v1.Hash // the image manifest's
	Files  []string
}

// Ref is the image as podman and a job file name it: oci:DIR:TAG.
func (r Result) Ref() string { return "oci:" + r.Dir + ":" + r.Tag }

// Build writes, in the directory dir (made when missing), an OCI image
// layout holding the image of the executable exe tagged tag, and replaces
// an image of that tag already there. exe is normally allot's own
// executable (os.Executable).
func Build(dir, tag, exe string) (Result, error) {
	if !tagPattern.MatchString(tag) {
		return Result{}, fmt.Errorf("tag %q: want letters, digits, _, . or - (at most 128, not starting with . or -)", tag)
	}
	if !path.IsAbs(dir) {
		return Result{}, fmt.Errorf("image directory %q: want an absolute path (oci:/PATH names it)", dir)
	}
	files, err := filesOf(exe)
	if err != nil {
		return Result{}, err
	}
	layerTar, names, err := layerOf(files)
	if err != nil {
		return Result{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return Result{}, fmt.Errorf("layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
	if err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Result{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", goarch()
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{Executable}
	cfg.Config.Cmd = []string{"demo", "serve"}
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	cfg.Config.WorkingDir = "/allot/work"
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.title": "allot demo programs"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return Result{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	p, err := openLayout(dir)
	if err != nil {
		return Result{}, err
	}
	if err := p.ReplaceImage(img, tagged(tag), layout.WithAnnotations(map[string]string{refName: tag})); err != nil {
		return Result{}, fmt.Errorf("write the image to %s: %w", dir, err)
	}
	return Result{Dir: dir, Tag: tag, Digest: digest, Files: names}, nil
}

// openLayout opens the OCI layout at dir, or makes an empty one.
func openLayout(dir string) (layout.Path, error) {
	if p, err := layout.FromPath(dir); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("make an OCI layout in %s: %w", dir, err)
	}
	return p, nil
}

// tagged matches the descriptors of a layout tagged tag.
func tagged(tag string) func(v1.Descriptor) bool {
	return func(d v1.Descriptor) bool { return d.Annotations[refName] == tag }
}

// layerOf is the tar of the image's one layer: the directories allot
// mounts over, /tmp, and files (path in the image → path on the host),
// every entry root's, dated epoch, in name order.
func layerOf(files map[string]string) ([]byte, []string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]int64{"allot": 0o755, "allot/work": 0o755, "allot/checkpoints": 0o755, "tmp": 0o1777, "dev": 0o755,
		"proc": 0o755, "sys": 0o755, "etc": 0o755}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
		for d := path.Dir(name); d != "/" && d != "."; d = path.Dir(d) {
			if _, ok := dirs[d[1:]]; !ok {
				dirs[d[1:]] = 0o755
			}
		}
	}
	sort.Strings(names)
	var ds []string
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	for _, d := range ds {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: dirs[d], ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, nil, err
		}
	}
	for _, name := range names {
		if err := addFile(tw, name[1:], files[name]); err != nil {
			return nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), names, nil
}

// addFile adds the host's file src at name, its mode's permission bits
// kept.
func addFile(tw *tar.Writer, name, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: epoch, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s changed size while read", src)
	}
	return err
}
