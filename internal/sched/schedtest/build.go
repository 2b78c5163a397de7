package schedtest

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Epoch is the start of every test clock.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// World is a fleet, a tenancy and jobs under construction.
type World struct {
	Fleet   model.Fleet
	Tenancy model.Tenancy
	Jobs    []*model.Job
}

// NewWorld returns an empty world with the built-in SKU catalog.
func NewWorld() *World {
	return &World{Fleet: model.Fleet{Catalog: model.BuiltinCatalog()}}
}

// Region adds a region with one cluster of the given fabric, named
// region+"-c", and one rack per call of Rack.
func (w *World) Region(name, residency string, fabric model.Fabric) *World {
	w.Fleet.Regions = append(w.Fleet.Regions, model.Region{
		Name: name, Residency: residency,
		Clusters: []model.Cluster{{Name: name + "-c", Fabric: fabric}},
	})
	return w
}

// Cluster adds a cluster to the last region.
func (w *World) Cluster(name string, fabric model.Fabric) *World {
	r := &w.Fleet.Regions[len(w.Fleet.Regions)-1]
	r.Clusters = append(r.Clusters, model.Cluster{Name: name, Fabric: fabric})
	return w
}

// Rack adds a rack with a power cap (kW, 0 for none) to the last cluster.
func (w *World) Rack(name string, capKW float64) *World {
	r := &w.Fleet.Regions[len(w.Fleet.Regions)-1]
	c := &r.Clusters[len(r.Clusters)-1]
	c.Racks = append(c.Racks, model.Rack{Name: name, PowerCapW: int64(capKW * 1000)})
	return w
}

// Nodes adds count nodes of sku named prefix-1..prefix-count to the last
// cluster, on leaf, in the last rack if there is one.
func (w *World) Nodes(prefix string, count int, sku, leaf string) *World {
	r := &w.Fleet.Regions[len(w.Fleet.Regions)-1]
	c := &r.Clusters[len(r.Clusters)-1]
	rack := ""
	if len(c.Racks) > 0 {
		rack = c.Racks[len(c.Racks)-1].Name
	}
	for i := 1; i <= count; i++ {
		w.Fleet.Nodes = append(w.Fleet.Nodes, model.Node{
			Name: fmt.Sprintf("%s-%d", prefix, i), SKU: sku, Region: r.Name, Cluster: c.Name,
			Leaf: leaf, Rack: rack, Health: model.NodeReady,
		})
	}
	return w
}

// NotReady marks the named nodes NotReady.
func (w *World) NotReady(names ...string) *World {
	for _, name := range names {
		for i := range w.Fleet.Nodes {
			if w.Fleet.Nodes[i].Name == name {
				w.Fleet.Nodes[i].Health = model.NodeNotReady
			}
		}
	}
	return w
}

// Partition adds a partition guaranteed gpus GPUs of gpuModel in region.
func (w *World) Partition(name, region, gpuModel string, gpus int) *World {
	w.Tenancy.Partitions = append(w.Tenancy.Partitions, model.Partition{
		Name: name, Guarantees: []model.Guarantee{{Region: region, GPUModel: gpuModel, GPUs: gpus}},
	})
	return w
}

// BorrowLimit caps borrowing of the last partition's last guarantee.
func (w *World) BorrowLimit(gpus int) *World {
	p := &w.Tenancy.Partitions[len(w.Tenancy.Partitions)-1]
	p.Guarantees[len(p.Guarantees)-1].BorrowLimit = &gpus
	return w
}

// LendLimit caps lending of the last partition's last guarantee.
func (w *World) LendLimit(gpus int) *World {
	p := &w.Tenancy.Partitions[len(w.Tenancy.Partitions)-1]
	p.Guarantees[len(p.Guarantees)-1].LendLimit = &gpus
	return w
}

// PowerHeadroom caps the power (kW) the last region may draw.
func (w *World) PowerHeadroom(kW float64) *World {
	w.Fleet.Regions[len(w.Fleet.Regions)-1].PowerHeadroomW = int64(kW * 1000)
	return w
}

// Tenant adds a tenant in partition (empty for none).
func (w *World) Tenant(name, partition string) *World {
	w.Tenancy.Tenants = append(w.Tenancy.Tenants, model.Tenant{Name: name, Kind: model.TenantInternal, Partition: partition, Weight: 1})
	return w
}

// Quota adds a hard quota.
func (w *World) Quota(tenant, region, series string, gpus int) *World {
	w.Tenancy.Quotas = append(w.Tenancy.Quotas, model.Quota{Tenant: tenant, Region: region, Series: series, GPUs: gpus})
	return w
}

// Reserve adds a reservation of count nodes, active from start to end (zero
// times for open-ended).
func (w *World) Reserve(name, owner, sku, region string, count int, start, end time.Time) *World {
	w.Tenancy.Reservations = append(w.Tenancy.Reservations, model.Reservation{
		Name: name, Owner: owner, SKU: sku, Region: region, Count: count, Start: start, End: end,
	})
	return w
}

// Job adds a queued job and returns a builder for it.
func (w *World) Job(id, tenant string) *JobBuilder {
	j := &model.Job{ID: id, Spec: model.JobSpec{
		Name: id, Tenant: tenant, Command: []string{"true"},
		Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1},
		Priority:  model.Priority{Class: model.ClassStandard},
	}, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: Epoch}}
	w.Jobs = append(w.Jobs, j)
	return &JobBuilder{Job: j}
}

// Snapshot returns the world as the core sees it.
func (w *World) Snapshot() *sched.Snapshot {
	return &sched.Snapshot{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Jobs: w.Jobs}
}

// Validate checks the fleet and tenancy as a reader would.
func (w *World) Validate() error {
	if err := w.Fleet.Validate(); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	if err := w.Tenancy.Validate(&w.Fleet); err != nil {
		return fmt.Errorf("tenancy: %w", err)
	}
	return nil
}

// JobBuilder sets a job's fields.
type JobBuilder struct{ Job *model.Job }

// GPUs asks for count instances of gpus whole GPUs each.
func (b *JobBuilder) GPUs(count, gpus int) *JobBuilder {
	b.Job.Spec.Resources.InstanceCount, b.Job.Spec.Resources.GPUsPerInstance = count, gpus
	return b
}

// Elastic lets the job run with its instance count up to max instances,
// step at a time (model.Elastic).
func (b *JobBuilder) Elastic(max, step int) *JobBuilder {
	n := b.Job.Spec.Resources.InstanceCount
	b.Job.Spec.Elastic = &model.Elastic{MinInstances: n, MaxInstances: max, Step: step}
	return b
}

// Milli asks for a fraction of one GPU.
func (b *JobBuilder) Milli(m int64) *JobBuilder {
	b.Job.Spec.Resources.GPUsPerInstance, b.Job.Spec.Resources.GPUMilli = 1, m
	return b
}

// Models restricts the GPU models.
func (b *JobBuilder) Models(m ...string) *JobBuilder { b.Job.Spec.Resources.GPUModels = m; return b }

// CPU sets milli-cores and MiB per instance.
func (b *JobBuilder) CPU(milli, memMiB int64) *JobBuilder {
	b.Job.Spec.Resources.CPUMilli, b.Job.Spec.Resources.MemoryMiB = milli, memMiB
	return b
}

// Class sets the priority class.
func (b *JobBuilder) Class(c model.Class) *JobBuilder { b.Job.Spec.Priority.Class = c; return b }

// Value sets the priority value inside the class.
func (b *JobBuilder) Value(v int) *JobBuilder { b.Job.Spec.Priority.Value = v; return b }

// Regions restricts the regions.
func (b *JobBuilder) Regions(r ...string) *JobBuilder { b.Job.Spec.Placement.Regions = r; return b }

// Residency requires a residency zone.
func (b *JobBuilder) Residency(z string) *JobBuilder { b.Job.Spec.Placement.Residency = z; return b }

// Interconnect requires a fabric between the gang's nodes.
func (b *JobBuilder) Interconnect(f model.Fabric) *JobBuilder {
	b.Job.Spec.Placement.Interconnect = f
	return b
}

// Reservation asks to run inside a reservation.
func (b *JobBuilder) Reservation(name string) *JobBuilder {
	b.Job.Spec.Placement.Reservation = name
	return b
}

// Image runs the job from image ref (model.Container).
func (b *JobBuilder) Image(ref string) *JobBuilder {
	b.Job.Spec.Container = &model.Container{Image: ref}
	return b
}

// Submitted sets the submission time.
func (b *JobBuilder) Submitted(t time.Time) *JobBuilder { b.Job.Status.SubmittedAt = t; return b }

// Running marks the job running since start on the given placements.
func (b *JobBuilder) Running(start time.Time, allocs ...model.Allocation) *JobBuilder {
	b.Job.Status.State = model.StateRunning
	b.Job.Status.StartedAt = start
	b.Job.Status.Allocations = allocs
	for i := range b.Job.Status.Allocations {
		if b.Job.Status.Allocations[i].GPUMilli == 0 {
			b.Job.Status.Allocations[i].GPUMilli = model.MilliPerGPU
		}
	}
	return b
}

// Timeout bounds each attempt with retry.timeout and sets the checkpoint
// grace (zero: the default).
func (b *JobBuilder) Timeout(d, grace time.Duration) *JobBuilder {
	b.Job.Spec.Retry.Timeout, b.Job.Spec.Checkpoint.Grace = d, grace
	return b
}

// Checkpoints sets the checkpoint interval: an eviction loses at most
// that much work.
func (b *JobBuilder) Checkpoints(every time.Duration) *JobBuilder {
	b.Job.Spec.Checkpoint.Interval = every
	return b
}

// Checkpointed records the last checkpoint.
func (b *JobBuilder) Checkpointed(t time.Time) *JobBuilder { b.Job.Status.LastCheckpoint = t; return b }

// CheckpointOn records that the job's last checkpoint lies on node's disk.
func (b *JobBuilder) CheckpointOn(node string) *JobBuilder {
	b.Job.Status.CheckpointPath, b.Job.Status.CheckpointNode = "/work/jobs/"+b.Job.ID+"/checkpoints/step-100", node
	return b
}

// OnlyOn names the only nodes the job may run on (placement.nodes).
func (b *JobBuilder) OnlyOn(nodes ...string) *JobBuilder {
	b.Job.Spec.Placement.Nodes = nodes
	return b
}

// Exclude names nodes the job must not run on (placement.exclude_nodes).
func (b *JobBuilder) Exclude(nodes ...string) *JobBuilder {
	b.Job.Spec.Placement.ExcludeNodes = nodes
	return b
}

// FailedOn records an ended attempt of the job for each node, that failed
// there: the job is queued to retry.
func (b *JobBuilder) FailedOn(nodes ...string) *JobBuilder {
	for _, n := range nodes {
		at := len(b.Job.Status.Attempts) + 1
		b.Job.Status.Attempts = append(b.Job.Status.Attempts, model.Attempt{Number: at, Nodes: []string{n},
			Started: b.Job.Status.SubmittedAt, Ended: b.Job.Status.SubmittedAt, ExitCode: 1, Reason: "Failed", FailedNode: n})
	}
	b.Job.Status.Retries = len(nodes)
	return b
}

// Preempted records that the job was preempted n times before.
func (b *JobBuilder) Preempted(n int) *JobBuilder { b.Job.Status.Preemptions = n; return b }

// On is shorthand for an allocation of whole GPUs.
func On(node string, gpus ...int) model.Allocation {
	return model.Allocation{Node: node, GPUs: gpus, GPUMilli: model.MilliPerGPU}
}
