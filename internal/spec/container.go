package spec

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// containerFields are the fields of a job or an endpoint that run it from
// an image (model.Container): image, args, workdir and mounts.
type containerFields struct {
	Image   string
	Args    []string
	Workdir string
	Mounts  []mountEntry
}

// container is the model's container, nil when none of the fields is
// set; args, workdir or mounts without an image give a container whose
// image is empty, which validation names.
func (c containerFields) container() *model.Container {
	if c.Image == "" && c.Args == nil && c.Workdir == "" && c.Mounts == nil {
		return nil
	}
	out := &model.Container{Image: c.Image, Args: c.Args, Workdir: c.Workdir}
	for _, m := range c.Mounts {
		out.Mounts = append(out.Mounts, model.Mount(m))
	}
	return out
}

// mountEntry is one mount: {source: /data, target: /data, read_only:
// true}, or the short form SOURCE:TARGET[:ro|rw].
type mountEntry model.Mount

func (m *mountEntry) decodeNode(d *decoder, n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		parts := strings.Split(n.Value, ":")
		switch {
		case len(parts) == 3 && (parts[2] == "ro" || parts[2] == "rw"):
			m.ReadOnly = parts[2] == "ro"
		case len(parts) != 2:
			return fmt.Errorf("want SOURCE:TARGET or SOURCE:TARGET:ro, e.g. /data/imagenet:/data:ro, got %q", n.Value)
		}
		m.Source, m.Target = parts[0], parts[1]
		return nil
	case yaml.MappingNode:
		var e struct {
			Source   string `yaml:"source"`
			Target   string `yaml:"target"`
			ReadOnly bool   `yaml:"read_only"`
		}
		if err := d.decode(n, path, reflect.ValueOf(&e).Elem()); err != nil {
			return err
		}
		*m = mountEntry{Source: e.Source, Target: e.Target, ReadOnly: e.ReadOnly}
		return nil
	}
	return fmt.Errorf("want {source: /HOST/DIR, target: /DIR, read_only: true} or SOURCE:TARGET[:ro], got %s", describe(n))
}

// containerDoc is c in file form: the fields of a job document.
func containerDoc(c *model.Container) (image string, args []string, workdir string, mounts []mountDoc) {
	if c == nil {
		return "", nil, "", nil
	}
	for _, m := range c.Mounts {
		mounts = append(mounts, mountDoc(m))
	}
	return c.Image, c.Args, c.Workdir, mounts
}

// mountDoc is a mount in a job document.
type mountDoc struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}
