package scenario

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/allot-dev/allot/data/traces"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/trace/philly"
)

// trainingJob is a trace job as a training stream draws it.
type trainingJob struct {
	gpus int
	work time.Duration // capped
}

// trainingTrace reads a job trace once per File (runs of several seeds
// share it).
func (f *File) trainingTrace(name string) ([]philly.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if jobs, ok := f.jobTraces[name]; ok {
		return jobs, nil
	}
	var jobs []philly.Job
	err := f.readTrace(name, func(r io.Reader, file string) (err error) {
		jobs, err = philly.ReadJobs(r, file)
		return err
	})
	if err != nil {
		return nil, err
	}
	if f.jobTraces == nil {
		f.jobTraces = map[string][]philly.Job{}
	}
	f.jobTraces[name] = jobs
	return jobs, nil
}

// readTrace reads trace name with read: a built-in trace (data/traces),
// or a CSV file whose path is relative to the scenario.
func (f *File) readTrace(name string, read func(r io.Reader, file string) error) error {
	if !strings.HasSuffix(strings.ToLower(name), ".csv") {
		r, err := traces.Open(name)
		if err != nil {
			return err
		}
		defer r.Close()
		return read(r, name)
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.dir, path)
	}
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	return read(r, path)
}

// generate draws the stream's jobs.
func (t TrainingGen) generate(trace []philly.Job, rng *rand.Rand, load float64) ([]Arrival, error) {
	var pool []trainingJob
	var gpuSeconds float64
	for _, j := range trace {
		if j.GPUs > t.MaxGPUs {
			continue
		}
		d := time.Duration(math.Min(j.Duration, time.Duration(t.MaxDuration).Seconds()) * float64(time.Second)).Round(time.Second)
		d = max(d, time.Second)
		pool = append(pool, trainingJob{gpus: j.GPUs, work: d})
		gpuSeconds += d.Seconds() * float64(j.GPUs)
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("no job of the trace has at most %d GPUs", t.MaxGPUs)
	}
	// Jobs per hour that offer GPUHoursPerHour × load of work.
	meanGPUHours := gpuSeconds / float64(len(pool)) / 3600
	every := time.Duration(float64(time.Hour) * meanGPUHours / (t.GPUHoursPerHour * load))
	c, _ := class(t.Class)
	var out []Arrival
	n := 0
	for at := time.Duration(t.From); ; {
		at += time.Duration(rng.ExpFloat64() * float64(every))
		if at >= time.Duration(t.Until) {
			break
		}
		n++
		j := pool[rng.IntN(len(pool))]
		res, fabric := t.shape(j.gpus)
		out = append(out, Arrival{At: at.Round(time.Second), Work: j.work, Elastic: t.elastic(res.InstanceCount), Job: model.JobSpec{
			Name: fmt.Sprintf("%s-%d", t.Name, n), Tenant: t.Tenant, Priority: c, Labels: t.Labels,
			Resources:  res,
			Placement:  model.Placement{Regions: t.Regions, Residency: t.Residency, Interconnect: fabric},
			Checkpoint: model.Checkpoint{Interval: time.Duration(t.Checkpoint)},
			Duration:   j.work}})
	}
	return out, nil
}

// shape lays out a job of gpus GPUs: one instance up to a node's GPUs,
// else a gang of as few instances as hold them, evenly, on InfiniBand.
func (t TrainingGen) shape(gpus int) (model.Resources, model.Fabric) {
	if gpus <= t.NodeGPUs {
		return model.Resources{InstanceCount: 1, GPUsPerInstance: gpus, GPUModels: t.GPUModels}, ""
	}
	inst := (gpus + t.NodeGPUs - 1) / t.NodeGPUs
	per := (gpus + inst - 1) / inst
	return model.Resources{InstanceCount: inst, GPUsPerInstance: per, GPUModels: t.GPUModels}, model.FabricInfiniBand
}

// elastic is how a job of n instances of the stream is elastic in a run
// with elastic training (ElasticGen; DefaultElastic without a block); nil
// for a job that stays rigid.
func (t TrainingGen) elastic(n int) *model.Elastic {
	e := DefaultElastic
	if t.Elastic != nil {
		e = *t.Elastic
	}
	if n < e.FromInstances {
		return nil
	}
	grow := n * (e.MaxFactor - 1) / e.Step * e.Step
	if grow == 0 {
		return nil
	}
	return &model.Elastic{MinInstances: n, MaxInstances: n + grow, Step: e.Step}
}
