package model

import "time"

// LabelInstance marks a job record that is an instance: a lease of whole
// nodes of one SKU, created with 'allot instance create' and held until
// deleted. Its value is the SKU's name. An instance is a job in every
// other way, so quotas, partitions, reservations and preemption treat it
// as they treat jobs.
const LabelInstance = "allot.dev/instance"

// MaxInstanceCount is the most nodes one instance request leases.
const MaxInstanceCount = 64

// MaxEvictionGrace is the longest eviction notice an instance may ask for.
const MaxEvictionGrace = time.Hour

// IsInstance reports whether the job is an instance (LabelInstance).
func (s *JobSpec) IsInstance() bool {
	_, ok := s.Labels[LabelInstance]
	return ok
}

// InstanceSpec returns the job spec of an instance of count nodes of sku in
// region for tenant: each of its count instances takes one whole node of
// that SKU (every GPU, all its CPU and memory), pinned to the region and
// the SKU, with no duration: it runs until deleted. grace is the eviction
// notice (the checkpoint grace: the time between being told to stop and
// being stopped); command is what holds the node where agents run jobs,
// nil on simulated nodes. name, count and grace are checked by
// JobSpec.Validate and the caller.
func InstanceSpec(name, tenant string, sku SKU, region string, count int, prio Priority, grace time.Duration, command []string) JobSpec {
	s := JobSpec{
		Name: name, Tenant: tenant, Command: command, Priority: prio,
		Resources:  Resources{InstanceCount: count, GPUsPerInstance: sku.GPUs, CPUMilli: sku.CPUMilli(), MemoryMiB: sku.MemoryMiB()},
		Placement:  Placement{Regions: []string{region}, SKU: sku.Name},
		Checkpoint: Checkpoint{Grace: grace},
		Labels:     map[string]string{LabelInstance: sku.Name},
	}
	if sku.GPUs > 0 {
		s.Resources.GPUModels = []string{sku.GPUModel}
	}
	return s
}
