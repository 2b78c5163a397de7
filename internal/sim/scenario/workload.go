package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Arrival is one job of the workload: submitted At after the start, with
// Work to do at full speed.
type Arrival struct {
	At   time.Duration
	Job  model.JobSpec
	Work time.Duration
	// Reservation names the reservation whose opening the job is; empty
	// for other work.
	Reservation string
	// Elastic is how the job is elastic in a run with elastic training
	// (Options.Elastic: a training stream's gang, TrainingGen.Elastic);
	// nil for work that stays rigid. Job.Elastic is nil either way.
	Elastic *model.Elastic
}

// Workload generates the scenario's jobs in submit order for a seed and a
// load factor (arrival streams and training streams come load times as
// often; fixed jobs and reservations stay). It depends only on the file,
// the seed and the load: every fleet size and strategy sees the same work.
func (f *File) Workload(seed int64, load float64) ([]Arrival, error) {
	if !(load > 0) {
		return nil, fmt.Errorf("scenario %s: load must be positive, got %g", f.Name, load)
	}
	var out []Arrival
	for _, r := range f.Reservations {
		if r.Work.Instances == 0 {
			continue
		}
		sku := model.BuiltinCatalog()[r.SKU]
		out = append(out, Arrival{At: time.Duration(r.Opens), Reservation: r.Name, Work: time.Duration(r.Work.Duration),
			Job: model.JobSpec{Name: r.Name + "-work", Tenant: r.Owner,
				Resources: model.Resources{InstanceCount: r.Work.Instances, GPUsPerInstance: sku.GPUs, GPUModels: []string{sku.GPUModel}},
				Priority:  model.Priority{Class: model.ClassReserved},
				Placement: model.Placement{Reservation: r.Name, Regions: []string{r.Region}}}})
	}
	for _, j := range f.Jobs {
		c, _ := class(j.Class)
		out = append(out, Arrival{At: time.Duration(j.At), Work: time.Duration(j.Duration), Job: model.JobSpec{
			Name: j.Name, Tenant: j.Tenant, Priority: c, Labels: j.Labels,
			Resources: model.Resources{InstanceCount: max(j.Instances, 1), GPUsPerInstance: max(j.GPUsPerInstance, 1),
				GPUModels: j.GPUModels},
			Placement:  model.Placement{Regions: j.Regions, Residency: j.Residency, Interconnect: model.Fabric(j.Interconnect)},
			Checkpoint: model.Checkpoint{Interval: time.Duration(j.Checkpoint)},
			Duration:   time.Duration(j.Duration)}})
	}
	for i, a := range f.Arrivals {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
		c, _ := class(a.Class)
		n := 0
		for at := time.Duration(a.From); ; {
			at += time.Duration(rng.ExpFloat64() * float64(a.Every) / load)
			if at >= time.Duration(a.Until) {
				break
			}
			n++
			inst := 1
			if len(a.Instances) > 0 {
				inst = a.Instances[rng.IntN(len(a.Instances))]
			}
			gpus := a.GPUsPerInstance[rng.IntN(len(a.GPUsPerInstance))]
			lo, hi := math.Log(float64(a.MinDuration)), math.Log(float64(a.MaxDuration))
			d := time.Duration(math.Exp(lo + rng.Float64()*(hi-lo))).Round(time.Second)
			out = append(out, Arrival{At: at.Round(time.Second), Work: d, Job: model.JobSpec{
				Name: fmt.Sprintf("%s-%d", a.Name, n), Tenant: a.Tenant, Priority: c, Labels: a.Labels,
				Resources:  model.Resources{InstanceCount: inst, GPUsPerInstance: gpus, GPUModels: a.GPUModels},
				Placement:  model.Placement{Regions: a.Regions, Residency: a.Residency, Interconnect: model.Fabric(a.Interconnect)},
				Checkpoint: model.Checkpoint{Interval: time.Duration(a.Checkpoint)},
				Duration:   d}})
		}
	}
	for i, t := range f.Training {
		jobs, err := f.trainingTrace(t.Trace)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: training[%d].trace: %w", f.Name, i, err)
		}
		more, err := t.generate(jobs, rand.New(rand.NewPCG(uint64(seed), 1<<40+uint64(i))), load)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: training[%d]: %w", f.Name, i, err)
		}
		out = append(out, more...)
	}
	sort.SliceStable(out, func(x, y int) bool { return out[x].At < out[y].At })
	for i := range out {
		if err := out[i].Job.Validate(); err != nil {
			return nil, fmt.Errorf("scenario %s: job %s: %w", f.Name, out[i].Job.Name, err)
		}
		if e := out[i].Elastic; e != nil {
			s := out[i].Job
			s.Elastic = e
			if err := s.Validate(); err != nil {
				return nil, fmt.Errorf("scenario %s: job %s, elastic: %w", f.Name, s.Name, err)
			}
		}
	}
	return out, nil
}

// endpointSpec is the endpoint of e as the server would hold it.
func endpointSpec(e EndpointGen) model.EndpointSpec {
	c, _ := class(e.Class)
	models := e.GPUModels
	if len(models) == 0 {
		for m := range e.Throughput {
			models = append(models, m)
		}
		sort.Strings(models)
	}
	maxR := e.MaxReplicas
	if maxR == 0 {
		maxR = e.MinReplicas
	}
	return model.EndpointSpec{Name: e.Name, Tenant: e.Tenant, Model: e.Model,
		Resources:   model.Resources{InstanceCount: 1, GPUsPerInstance: max(e.GPUsPerInstance, 1), GPUModels: models},
		Priority:    c,
		MinReplicas: e.MinReplicas, MaxReplicas: maxR,
		SLO:        model.SLO{P95: time.Duration(e.SLO.P95Ms * float64(time.Millisecond))},
		Placement:  model.Placement{Regions: e.Regions, Residency: e.Residency},
		Throughput: e.Throughput}
}

// rate is the endpoint's request rate at t (requests/s) before noise.
func (c Load) rate(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
	x := 0.5 + 0.5*math.Cos(2*math.Pi*(h-c.PeakHour)/24)
	r := c.TroughRPS + (c.PeakRPS-c.TroughRPS)*x
	if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
		r *= c.Weekend
	}
	return r
}
