package model

import (
	"errors"
	"strings"
	"testing"
)

func TestParseImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in   string
		want ImageRef
		err  string // a part of the error; "" when valid
	}{
		{"ubuntu", ImageRef{Repository: "ubuntu"}, ""},
		{"ubuntu:24.04", ImageRef{Repository: "ubuntu", Tag: "24.04"}, ""},
		{"nvcr.io/nvidia/pytorch:24.05-py3", ImageRef{Registry: "nvcr.io", Repository: "nvidia/pytorch", Tag: "24.05-py3"}, ""},
		{"localhost:5000/team/train", ImageRef{Registry: "localhost:5000", Repository: "team/train"}, ""},
		{"localhost/train:v1", ImageRef{Registry: "localhost", Repository: "train", Tag: "v1"}, ""},
		{"ghcr.io/a/b@" + digest, ImageRef{Registry: "ghcr.io", Repository: "a/b", Digest: digest}, ""},
		{"ghcr.io/a/b:1.0@" + digest, ImageRef{Registry: "ghcr.io", Repository: "a/b", Tag: "1.0", Digest: digest}, ""},
		{"[::1]:5000/x", ImageRef{Registry: "[::1]:5000", Repository: "x"}, ""},
		{"team/my_model__v2", ImageRef{Repository: "team/my_model__v2"}, ""},
		{"oci:/var/lib/allot/images/demo:latest", ImageRef{Transport: TransportOCI, Repository: "/var/lib/allot/images/demo", Tag: "latest"}, ""},
		{"oci-archive:/srv/demo.tar", ImageRef{Transport: TransportOCIArchive, Repository: "/srv/demo.tar"}, ""},
		{"", ImageRef{}, "must not be empty"},
		{"Ubuntu", ImageRef{}, "lower-case"},
		{"ubuntu:", ImageRef{}, "tag"},
		{"ubuntu:-x", ImageRef{}, "tag"},
		{"a//b", ImageRef{}, "repository"},
		{"a/b/", ImageRef{}, "repository"},
		{"https://ghcr.io/a/b", ImageRef{}, "no scheme"},
		{"ghcr.io/a/b@sha256:xyz", ImageRef{}, "digest"},
		{"ghcr.io/a/b@md5:" + strings.Repeat("a", 32), ImageRef{}, "digest"},
		{"ubuntu 24.04", ImageRef{}, "spaces"},
		{"bad_host.io:99999999/x", ImageRef{}, "registry"},
		{"oci:relative/path", ImageRef{}, "ABSOLUTE"},
		{"oci:/a/../etc", ImageRef{}, "clean"},
		{"oci:/", ImageRef{}, "other than /"},
		{"oci:/x:bad tag", ImageRef{}, "spaces"},
		{strings.Repeat("a", MaxImageLength+1), ImageRef{}, "over the limit"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseImage(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseImage(%q) = %+v, %v; want an error about %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseImage(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestContainerValidateNamesTheField(t *testing.T) {
	base := func() JobSpec {
		return JobSpec{Name: "train", Tenant: "acme", Resources: Resources{InstanceCount: 1, GPUsPerInstance: 1},
			Container: &Container{Image: "ghcr.io/team/train:1", Args: []string{"--epochs", "3"}, Workdir: "/workspace",
				Mounts: []Mount{{Source: "/data/sets", Target: "/data", ReadOnly: true}}}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*JobSpec)
		field string // "" when valid
	}{
		{"valid", func(*JobSpec) {}, ""},
		{"no command: the image's entrypoint", func(s *JobSpec) { s.Command = nil }, ""},
		{"command and image", func(s *JobSpec) { s.Command = []string{"python", "train.py"} }, ""},
		{"args without an image", func(s *JobSpec) { s.Container.Image = "" }, "image"},
		{"bad reference", func(s *JobSpec) { s.Container.Image = "Team/Train" }, "image"},
		{"relative workdir", func(s *JobSpec) { s.Container.Workdir = "work" }, "workdir"},
		{"unclean workdir", func(s *JobSpec) { s.Container.Workdir = "/a/../b" }, "workdir"},
		{"NUL in an argument", func(s *JobSpec) { s.Container.Args = []string{"ok", "a\x00b"} }, "args[1]"},
		{"relative source", func(s *JobSpec) { s.Container.Mounts[0].Source = "data" }, "mounts[0].source"},
		{"empty source", func(s *JobSpec) { s.Container.Mounts[0].Source = "" }, "mounts[0].source"},
		{"target in /allot", func(s *JobSpec) { s.Container.Mounts[0].Target = "/allot/work" }, "mounts[0].target"},
		{"target /allot", func(s *JobSpec) { s.Container.Mounts[0].Target = "/allot" }, "mounts[0].target"},
		{"target above /allot", func(s *JobSpec) { s.Container.Mounts[0].Target = "/" }, "mounts[0].target"},
		{"target with a comma", func(s *JobSpec) { s.Container.Mounts[0].Target = "/a,b" }, "mounts[0].target"},
		{"same target twice", func(s *JobSpec) {
			s.Container.Mounts = append(s.Container.Mounts, Mount{Source: "/other", Target: "/data"})
		}, "mounts[1].target"},
		{"too many mounts", func(s *JobSpec) {
			for range MaxMounts {
				s.Container.Mounts = append(s.Container.Mounts, Mount{Source: "/x", Target: "/x"})
			}
		}, "mounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			err := s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want an error of field %q", err, tc.field)
			}
		})
	}
}

func TestContainerCloneEqual(t *testing.T) {
	c := &Container{Image: "ghcr.io/team/serve:2", Args: []string{"--port", "8000"}, Mounts: []Mount{{Source: "/m", Target: "/models"}}}
	d := c.Clone()
	if !c.Equal(d) || d == c || &d.Args[0] == &c.Args[0] {
		t.Fatalf("Clone = %+v, want an equal deep copy of %+v", d, c)
	}
	d.Args[1] = "9000"
	if c.Equal(d) || c.Args[1] != "8000" {
		t.Fatalf("a changed clone still equals its original, or changed it: %+v, %+v", c, d)
	}
	var none *Container
	if !none.Equal(nil) || none.Equal(c) || c.Equal(nil) || none.Clone() != nil {
		t.Fatal("nil containers compare wrong")
	}
}

func FuzzParseImage(f *testing.F) {
	for _, s := range []string{"ubuntu", "nvcr.io/nvidia/pytorch:24.05-py3", "localhost:5000/a/b@sha256:" + strings.Repeat("0", 64),
		"oci:/var/lib/images/demo:latest", "oci-archive:/x.tar", "[::1]:5000/x", "a//b", "A:b", "x:", "oci:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseImage(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("error without a message")
			}
			return
		}
		if r.Repository == "" {
			t.Fatalf("ParseImage(%q) = %+v: no repository", s, r)
		}
		// Nothing the runtime would read as a flag or as two words.
		if strings.HasPrefix(s, "-") || strings.ContainsAny(s, " \t\n\x00") {
			t.Fatalf("ParseImage(%q) accepted a reference a command line would misread", s)
		}
		c := Container{Image: s}
		if errs := c.Validate(); len(errs) != 0 {
			t.Fatalf("Validate refuses %q, which ParseImage accepts: %v", s, errs)
		}
	})
}
