package spec

import (
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// afterList is the jobs a job waits for: a list of names or IDs, or one
// written as a plain string.
type afterList []string

func (a *afterList) decodeNode(d *decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode {
		*a = afterList{n.Value}
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("want the names of jobs of this file or job IDs, e.g. [prepare] or [prepare, train], got %s", describe(n))
	}
	var list []string
	if err := d.decode(n, path, reflect.ValueOf(&list).Elem()); err != nil {
		return err
	}
	*a = list
	return nil
}

// afterCondition is a job's after_condition: ok, any or notok.
type afterCondition model.AfterCondition

func (c *afterCondition) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want ok, any or notok, got %s", describe(n))
	}
	v, err := model.ParseAfterCondition(n.Value)
	if err != nil {
		return err
	}
	*c = afterCondition(v)
	return nil
}

// jobAt is where a job of a file is written: the node its path starts
// from and the path ("" or "[2]").
type jobAt struct {
	root *yaml.Node
	path string
}

// pipelineCycle refuses jobs of one file that wait for each other in a
// circle (model.AfterCycle), naming the circle at the after: of its first
// job.
func (d *decoder) pipelineCycle(specs []model.JobSpec, at []jobAt) error {
	c := model.AfterCycle(specs)
	if c == nil {
		return nil
	}
	w := at[c[0]]
	return d.errorAtPath(w.root, join(w.path, "after"),
		"job %q waits for itself through a cycle: %s; a pipeline's steps must wait only for earlier steps",
		specs[c[0]].Name, model.CycleText(specs, c))
}
