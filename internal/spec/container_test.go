package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

func TestParseJobsImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want *model.Container
		cmd  []string
	}{
		{"none", "name: j\ntenant: t\ncommand: [python, x.py]\n", nil, []string{"python", "x.py"}},
		{"entrypoint", "name: j\ntenant: t\nimage: ghcr.io/team/train:1.4\n", &model.Container{Image: "ghcr.io/team/train:1.4"}, nil},
		{"everything", `
name: j
tenant: t
image: nvcr.io/nvidia/pytorch:24.05-py3
command: [torchrun, --nproc-per-node, "8", train.py]
args: [--epochs, "3"]
workdir: /workspace
mounts:
  - /data/imagenet:/data:ro
  - {source: /scratch/team, target: /scratch}
  - /models:/models:rw
`, &model.Container{Image: "nvcr.io/nvidia/pytorch:24.05-py3", Args: []string{"--epochs", "3"}, Workdir: "/workspace",
			Mounts: []model.Mount{{Source: "/data/imagenet", Target: "/data", ReadOnly: true}, {Source: "/scratch/team", Target: "/scratch"},
				{Source: "/models", Target: "/models"}}},
			[]string{"torchrun", "--nproc-per-node", "8", "train.py"}},
		{"local layout", "name: j\ntenant: t\nimage: oci:/var/lib/allot/images/demo:latest\ncommand: allot demo train\n",
			&model.Container{Image: "oci:/var/lib/allot/images/demo:latest"}, []string{"/bin/sh", "-c", "allot demo train"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := ParseJobs("job.yaml", []byte(tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := specs[0].Container; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("container = %+v, want %+v", got, tc.want)
			}
			if !reflect.DeepEqual(specs[0].Command, tc.cmd) {
				t.Errorf("command = %q, want %q", specs[0].Command, tc.cmd)
			}
		})
	}
}

func TestParseJobsImageErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"bad reference", "name: j\ntenant: t\nimage: Team/Train:1\n", 3, "image", "lower-case"},
		{"args without image", "name: j\ntenant: t\ncommand: [x]\nargs: [a]\n", 0, "image", "args, workdir and mounts need an image"},
		{"relative workdir", "name: j\ntenant: t\nimage: x\nworkdir: work\n", 4, "workdir", "absolute"},
		{"mount short form", "name: j\ntenant: t\nimage: x\nmounts: [/a]\n", 4, "mounts[0]", "SOURCE:TARGET"},
		{"mount mode", "name: j\ntenant: t\nimage: x\nmounts: [/a:/b:rx]\n", 4, "mounts[0]", "SOURCE:TARGET"},
		{"mount unknown field", "name: j\ntenant: t\nimage: x\nmounts: [{source: /a, dest: /b}]\n", 4, "mounts[0].dest", "unknown field"},
		{"mount over allot", "name: j\ntenant: t\nimage: x\nmounts:\n  - {source: /a, target: /allot/checkpoints}\n", 5, "mounts[0].target", "job's own directories"},
		{"mount twice", "name: j\ntenant: t\nimage: x\nmounts: [/a:/d, /b:/d]\n", 4, "mounts[1].target", "mounted already"},
		{"mount a list", "name: j\ntenant: t\nimage: x\nmounts: [[/a, /b]]\n", 4, "mounts[0]", "want {source"},
		{"image a list", "name: j\ntenant: t\nimage: [x]\n", 3, "image", "want a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJobs("job.yaml", []byte(tc.yaml), nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want a *spec.Error", err)
			}
			if e.Field != tc.field || (tc.line != 0 && e.Line != tc.line) || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("err = %q (field %q, line %d), want field %q, line %d, a message with %q", e, e.Field, e.Line, tc.field, tc.line, tc.msg)
			}
		})
	}
}

// A job array and a pipeline's steps carry the image to every job.
func TestParseJobsImageArrayAndPipeline(t *testing.T) {
	specs, err := ParseJobs("jobs.yaml", []byte(`
- name: prep
  tenant: t
  image: ghcr.io/team/prep:1
  resources: {gpus_per_instance: 0, cpu: 1}
- name: sweep
  tenant: t
  after: [prep]
  image: ghcr.io/team/train:1
  args: [--seed]
  array: 0-2
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 4 {
		t.Fatalf("%d jobs, want 4", len(specs))
	}
	for _, s := range specs {
		want := "ghcr.io/team/train:1"
		if s.Name == "prep" {
			want = "ghcr.io/team/prep:1"
		}
		if s.Container == nil || s.Container.Image != want {
			t.Errorf("job %s: container %+v, want image %s", s.Name, s.Container, want)
		}
	}
}

func TestParseEndpointsImage(t *testing.T) {
	specs, err := ParseEndpoints("e.yaml", []byte(strings.Replace(chatEndpoint, "command: [allot, demo, serve, --service-time, 30ms]\n",
		"image: ghcr.io/team/serve:2\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	s := specs[0]
	if s.Container == nil || s.Container.Image != "ghcr.io/team/serve:2" || s.Command != nil {
		t.Fatalf("endpoint = command %q, container %+v; want the image's entrypoint (no command)", s.Command, s.Container)
	}
	_, err = ParseEndpoints("e.yaml", []byte(chatEndpoint+"image: x\nmounts: [/m:/allot/x]\n"))
	var e *Error
	if !errors.As(err, &e) || e.Field != "mounts[0].target" {
		t.Fatalf("err = %v, want one of mounts[0].target", err)
	}
}
