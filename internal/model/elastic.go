package model

import (
	"fmt"
	"time"
)

// Elastic lets a gang run with any number of instances from MinInstances to
// MaxInstances in steps of Step, as TorchElastic's --nnodes MIN:MAX: the
// core guarantees the minimum as a gang (all or nothing, one fabric) and
// may give it more instances that nothing else would use, taking them back
// (the instances added last first) before it evicts anything whole. A
// resize ends the attempt and starts the next with the new world size,
// which resumes from the job's checkpoint. Resources.InstanceCount equals
// MinInstances: it is what the job waits for in the queue.
type Elastic struct {
	MinInstances int
	MaxInstances int
	// Step is how many instances a resize adds or removes at a time; the
	// job's size is always MinInstances plus a multiple of Step. Zero
	// means 1.
	Step int
}

// StepOrOne returns the step, 1 when none is set.
func (e *Elastic) StepOrOne() int {
	if e.Step <= 0 {
		return 1
	}
	return e.Step
}

// DefaultResizeInterval is the least time between two resizes of one job,
// and how long capacity must be expected to stay free for a job to grow
// into it, when the operator sets none.
const DefaultResizeInterval = 10 * time.Minute

// validateElastic checks the elastic block against the rest of the spec.
func (s *JobSpec) validateElastic() []error {
	e := s.Elastic
	if e == nil {
		return nil
	}
	var errs []error
	add := func(field, format string, args ...any) { errs = append(errs, fieldErr(field, format, args...)) }
	switch {
	case e.MinInstances < 1 || e.MinInstances > 4096:
		add("elastic.min_instances", "must be between 1 and 4096, got %d", e.MinInstances)
	case e.MaxInstances < e.MinInstances || e.MaxInstances > 4096:
		add("elastic.max_instances", "must be between min_instances (%d) and 4096, got %d", e.MinInstances, e.MaxInstances)
	case e.Step < 0:
		add("elastic.step", "must not be negative, got %d", e.Step)
	case (e.MaxInstances-e.MinInstances)%e.StepOrOne() != 0:
		add("elastic.step", "%d does not divide max_instances - min_instances (%d - %d = %d): the job could never reach its maximum",
			e.Step, e.MaxInstances, e.MinInstances, e.MaxInstances-e.MinInstances)
	case s.Resources.InstanceCount != e.MinInstances:
		add("resources.instance_count", "must equal elastic.min_instances (%d) for an elastic job, got %d", e.MinInstances, s.Resources.InstanceCount)
	}
	if s.Resources.Fractional() {
		add("elastic", "an elastic job takes whole GPUs: gpu_milli %d is a fraction of one", s.Resources.GPUMilli)
	}
	if s.Resources.GPUsPerInstance == 0 {
		add("elastic", "an elastic job takes GPUs: gpus_per_instance is 0")
	}
	return errs
}

// Size is the number of instances the job holds now: its allocations while
// it holds any, else the instances it asks for to start.
func (j *Job) Size() int {
	if n := len(j.Status.Allocations); n > 0 {
		return n
	}
	return j.Spec.Resources.InstanceCount
}

// String describes the elastic range for people: "2-6 instances, step 2".
func (e *Elastic) String() string {
	if e.StepOrOne() == 1 {
		return fmt.Sprintf("%d-%d instances", e.MinInstances, e.MaxInstances)
	}
	return fmt.Sprintf("%d-%d instances, step %d", e.MinInstances, e.MaxInstances, e.Step)
}
