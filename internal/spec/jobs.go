package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// jobFile is the layout of one job.
type jobFile struct {
	Name       string            `yaml:"name"`
	Tenant     string            `yaml:"tenant"`
	Command    command           `yaml:"command"`
	Env        map[string]string `yaml:"env"`
	Image      string            `yaml:"image"`
	Args       []string          `yaml:"args"`
	Workdir    string            `yaml:"workdir"`
	Mounts     []mountEntry      `yaml:"mounts"`
	Resources  resourcesEntry    `yaml:"resources"`
	Priority   priority          `yaml:"priority"`
	Placement  placementEntry    `yaml:"placement"`
	Retry      retryEntry        `yaml:"retry"`
	Checkpoint checkpointEntry   `yaml:"checkpoint"`
	Duration   duration          `yaml:"duration"`
	Labels     map[string]string `yaml:"labels"`
	Array      arrayRange        `yaml:"array"`
	ArrayIndex *int              `yaml:"array_index"`
	After      afterList         `yaml:"after"`
	AfterCond  afterCondition    `yaml:"after_condition"`
	Begin      timestamp         `yaml:"begin"`
	Elastic    *elasticEntry     `yaml:"elastic"`
}

// elasticEntry is the elastic block of a job: the range of instances it
// may run with (model.Elastic).
type elasticEntry struct {
	MinInstances int `yaml:"min_instances"`
	MaxInstances int `yaml:"max_instances"`
	Step         int `yaml:"step"`
}

type resourcesEntry struct {
	// InstanceCount is nil when the file leaves it out: 1, or an elastic
	// job's min_instances.
	InstanceCount   *int     `yaml:"instance_count"`
	GPUsPerInstance int      `yaml:"gpus_per_instance"`
	GPUMilli        int64    `yaml:"gpu_milli"`
	GPUModels       []string `yaml:"gpu_models"`
	CPU             cpu      `yaml:"cpu"`
	Memory          memory   `yaml:"memory"`
}

type placementEntry struct {
	Regions      []string `yaml:"regions"`
	Residency    string   `yaml:"residency"`
	Interconnect string   `yaml:"interconnect"`
	DataRegion   string   `yaml:"data_region"`
	Reservation  string   `yaml:"reservation"`
	Nodes        []string `yaml:"nodes"`
	ExcludeNodes []string `yaml:"exclude_nodes"`
}

type retryEntry struct {
	MaxRetries int      `yaml:"max_retries"`
	Timeout    duration `yaml:"timeout"`
}

type checkpointEntry struct {
	Interval duration `yaml:"interval"`
	Grace    duration `yaml:"grace"`
}

// newJobFile returns a job with the defaults of fields left out: one GPU
// per instance, standard priority (the instance count is instanceCount's).
func newJobFile() jobFile {
	return jobFile{
		Resources: resourcesEntry{GPUsPerInstance: 1},
		Priority:  priority{Class: model.ClassStandard},
	}
}

// priority is a class name with an optional value, "standard:10", or a
// mapping {class: standard, value: 10}.
type priority model.Priority

func (p *priority) decodeNode(d *decoder, n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := model.ParsePriority(n.Value)
		if err != nil {
			return err
		}
		*p = priority(v)
		return nil
	case yaml.MappingNode:
		var m struct {
			Class string `yaml:"class"`
			Value int    `yaml:"value"`
		}
		if err := d.decode(n, path, reflect.ValueOf(&m).Elem()); err != nil {
			return err
		}
		v, err := model.ParsePriority(m.Class)
		if err != nil {
			return d.errorAt(lookup(n, "class"), path+".class", "%s", err)
		}
		v.Value = m.Value
		*p = priority(v)
		return nil
	}
	return fmt.Errorf("want a class like standard or standard:10, or {class: standard, value: 10}, got %s", describe(n))
}

// MaxJobs is the most jobs one file may hold once its arrays are expanded.
const MaxJobs = 10 * model.MaxArraySize

func tooManyJobs(file string) *Error {
	return &Error{File: file, Msg: fmt.Sprintf("the file holds more than %d jobs once its arrays are expanded (limit: %d per file)", MaxJobs, MaxJobs)}
}

// besides leaves out of the validation errors verr those about a field
// that already has an error of reading in derr (or lies inside or around
// one): the value validated there is a default, not what the file says.
func besides(verr, derr error) error {
	bad := Errors(derr)
	var out []error
	for _, v := range flatten(verr) {
		var ve *Error
		keep := true
		if errors.As(v, &ve) {
			for _, b := range bad {
				if ve.Field == b.Field || strings.HasPrefix(ve.Field, b.Field+".") || strings.HasPrefix(ve.Field, b.Field+"[") ||
					strings.HasPrefix(b.Field, ve.Field+".") || b.Field == "" {
					keep = false
				}
			}
		}
		if keep {
			out = append(out, v)
		}
	}
	return joinErrors(out...)
}

// instanceCount is the instance count as written or, left out, an elastic
// job's minimum, else 1.
func (j *jobFile) instanceCount() int {
	switch {
	case j.Resources.InstanceCount != nil:
		return *j.Resources.InstanceCount
	case j.Elastic != nil:
		return j.Elastic.MinInstances
	}
	return 1
}

// model is e as model.Elastic, nil when the file has no elastic block.
func (e *elasticEntry) model() *model.Elastic {
	if e == nil {
		return nil
	}
	return &model.Elastic{MinInstances: e.MinInstances, MaxInstances: e.MaxInstances, Step: e.Step}
}

// arrayRange is a job array's range as written: "0-99", "0-99:10",
// "1,5,9" or a single index (model.ParseArray); nil when not set.
type arrayRange []int

func (a *arrayRange) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a range such as 0-99 or 0-99:10, got %s", describe(n))
	}
	idx, err := model.ParseArray(n.Value)
	if err != nil {
		return err
	}
	*a = idx
	return nil
}

// ReadJobs reads the jobs in the file at pathOrDir or, when it is a
// directory, in its *.yaml, *.yml and *.json files in name order. See
// ParseJobs.
func ReadJobs(pathOrDir string, sets []string) ([]model.JobSpec, error) {
	return ReadJobFiles([]string{pathOrDir}, sets)
}

// ReadJobFiles reads the jobs of every file or directory in paths, in
// turn, as ReadJobs reads one; it reports the problems of all of them.
func ReadJobFiles(paths []string, sets []string) ([]model.JobSpec, error) {
	var specs []model.JobSpec
	err := readSpecFiles("jobs", paths, func(file string, data []byte) error {
		s, err := ParseJobs(file, data, sets)
		specs = append(specs, s...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return specs, nil
}

// readSpecFiles calls parse with the name and content of each file in
// paths or, for a directory, of each of its *.yaml, *.yml and *.json files
// in name order. It reads every file and returns the problems of all of
// them (at most MaxErrors), stopping only when a file cannot be read. what
// names the files' contents in errors of reading ("jobs").
func readSpecFiles(what string, paths []string, parse func(file string, data []byte) error) error {
	var files []string
	for _, pathOrDir := range paths {
		info, err := os.Stat(pathOrDir)
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		if !info.IsDir() {
			files = append(files, pathOrDir)
			continue
		}
		entries, err := os.ReadDir(pathOrDir)
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		n := len(files)
		for _, e := range entries { // sorted by name
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(pathOrDir, e.Name()))
				}
			}
		}
		if len(files) == n {
			return fmt.Errorf("read %s: no *.yaml, *.yml or *.json files in %s", what, pathOrDir)
		}
	}
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		errs = append(errs, parse(f, data))
	}
	return joinErrors(errs...)
}

// ParseJobs reads the jobs in the file named name. The file holds one or
// more YAML documents separated by "---", or JSON; each document is a job
// or a list of jobs. Each --set override in sets ("retry.max_retries=5") is
// applied to every job before it is read. Every returned spec has passed
// model.JobSpec.Validate; any error is an *Error.
func ParseJobs(name string, data []byte, sets []string) ([]model.JobSpec, error) {
	overrides, err := parseSets(sets, reflect.TypeFor[jobFile]())
	if err != nil {
		return nil, err
	}
	docs, err := parseDocuments(name, data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	var specs []model.JobSpec
	var at []jobAt   // where each spec of specs is written, for pipeline errors
	var errs []error // of every job: a person fixes the file in one go
	for _, doc := range docs {
		if doc.Kind != yaml.SequenceNode {
			root, err := d.applySets(doc, overrides)
			if err != nil {
				return nil, err
			}
			s, err := d.job(root, root, "")
			if tooLarge(err) {
				return nil, err
			}
			specs, errs = append(specs, s...), append(errs, err)
			for range s {
				at = append(at, jobAt{root, ""})
			}
			if len(specs) > MaxJobs {
				return nil, tooManyJobs(name)
			}
			continue
		}
		// A list of jobs: work on a copy, so that aliases to items stay intact.
		list := *doc
		list.Content = append([]*yaml.Node(nil), doc.Content...)
		for i := range list.Content {
			item, err := d.applySets(resolve(list.Content[i]), overrides)
			if err != nil {
				return nil, err
			}
			list.Content[i] = item
			s, err := d.job(&list, item, fmt.Sprintf("[%d]", i))
			if tooLarge(err) {
				return nil, err
			}
			specs, errs = append(specs, s...), append(errs, err)
			for range s {
				at = append(at, jobAt{&list, fmt.Sprintf("[%d]", i)})
			}
			if len(specs) > MaxJobs {
				return nil, tooManyJobs(name)
			}
		}
	}
	if err := joinErrors(errs...); err != nil {
		return nil, err
	}
	if err := d.pipelineCycle(specs, at); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, &Error{File: name, Msg: "file is empty: want a job (name: …, tenant: …, resources: …)"}
	}
	return specs, nil
}

// job reads and validates the job at n, whose path from root is path: one
// spec, or one per index of its array.
func (d *decoder) job(root, n *yaml.Node, path string) ([]model.JobSpec, error) {
	j := newJobFile()
	derr := d.decode(n, path, reflect.ValueOf(&j).Elem())
	if derr != nil && (tooLarge(derr) || n.Kind != yaml.MappingNode) {
		return nil, derr
	}
	r := j.Resources
	s := model.JobSpec{
		Elastic:   j.Elastic.model(),
		Name:      j.Name,
		Tenant:    j.Tenant,
		Command:   []string(j.Command),
		Env:       j.Env,
		Container: containerFields{Image: j.Image, Args: j.Args, Workdir: j.Workdir, Mounts: j.Mounts}.container(),
		Resources: model.Resources{
			InstanceCount: j.instanceCount(), GPUsPerInstance: r.GPUsPerInstance, GPUMilli: r.GPUMilli,
			GPUModels: r.GPUModels, CPUMilli: int64(r.CPU), MemoryMiB: int64(r.Memory),
		},
		Priority: model.Priority(j.Priority),
		Placement: model.Placement{
			Regions: j.Placement.Regions, Residency: j.Placement.Residency,
			Interconnect: model.Fabric(j.Placement.Interconnect),
			DataRegion:   j.Placement.DataRegion, Reservation: j.Placement.Reservation,
			Nodes: j.Placement.Nodes, ExcludeNodes: j.Placement.ExcludeNodes,
		},
		Retry:          model.Retry{MaxRetries: j.Retry.MaxRetries, Timeout: time.Duration(j.Retry.Timeout)},
		Checkpoint:     model.Checkpoint{Interval: time.Duration(j.Checkpoint.Interval), Grace: time.Duration(j.Checkpoint.Grace)},
		Duration:       time.Duration(j.Duration),
		Labels:         j.Labels,
		ArrayIndex:     j.ArrayIndex,
		After:          []string(j.After),
		AfterCondition: model.AfterCondition(j.AfterCond),
		Begin:          time.Time(j.Begin),
	}
	var verr error
	if j.Array != nil && j.ArrayIndex != nil {
		verr = d.errorAtPath(root, join(path, "array_index"), "a job sets array (the range of a new array) or array_index (one member), not both")
	}
	if err := s.Validate(); err != nil {
		verr = joinErrors(verr, d.fromModel(root, err, func(f string) string {
			if path == "" {
				return f
			}
			return path + "." + strings.TrimPrefix(f, ".")
		}))
	}
	if derr != nil || verr != nil {
		return nil, joinErrors(derr, besides(verr, derr))
	}
	if j.Array == nil {
		return []model.JobSpec{s}, nil
	}
	out := make([]model.JobSpec, len(j.Array))
	for i, idx := range j.Array {
		out[i] = model.ArrayMember(s, idx)
		if err := out[i].Validate(); err != nil { // the name grew
			return nil, d.fromModel(root, err, func(string) string { return join(path, "name") })
		}
	}
	return out, nil
}
