package server

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// fleetCollector computes the gauges of GPUs, jobs, queues and nodes from
// the server's world and cache when Prometheus scrapes: one pass over the
// live (not ended) jobs and one over the fleet's nodes, outside the cache's
// lock once the live jobs are copied out. Scheduling cycles do no work for
// these series.
type fleetCollector struct{ s *Server }

var (
	descGPUs = prometheus.NewDesc("allot_gpus",
		"GPUs in the fleet by region, cluster, GPU model and the health of their node.",
		[]string{"region", "cluster", "gpu_model", "health"}, nil)
	descAllocated = prometheus.NewDesc("allot_gpus_allocated",
		"GPUs held by jobs (a fraction of a GPU counts as that fraction), by region, cluster, GPU model and the partition of the job's tenant.",
		[]string{"region", "cluster", "gpu_model", "partition"}, nil)
	descGuaranteed = prometheus.NewDesc("allot_gpus_guaranteed",
		"GPUs the tenants file guarantees a partition, by region and GPU model.",
		[]string{"region", "gpu_model", "partition"}, nil)
	descBorrowed = prometheus.NewDesc("allot_gpus_borrowed",
		"GPUs a partition's jobs hold beyond its guarantee, by region and GPU model.",
		[]string{"region", "gpu_model", "partition"}, nil)
	descReserved = prometheus.NewDesc("allot_gpus_reserved",
		"GPUs of the reservations active now, by region, GPU model and the partition of the reservation's owner.",
		[]string{"region", "gpu_model", "partition"}, nil)
	descLive = prometheus.NewDesc("allot_live_jobs",
		"Jobs not ended (Queued, Preparing, Running, Preempted) by state and priority class.",
		[]string{"state", "class"}, nil)
	descQueue = prometheus.NewDesc("allot_queue_depth",
		"Queued jobs by tenant, the tenant's partition and priority class.",
		[]string{"tenant", "partition", "class"}, nil)
	descQueueGuaranteed = prometheus.NewDesc("allot_queue_guaranteed_jobs",
		"Queued jobs of a partition's tenants that its guarantee of a pool could serve: the job may run in the region on the GPU model (its regions, residency and GPU models allow it) and asks for GPUs, no more than the guarantee; by region, GPU model and partition.",
		[]string{"region", "gpu_model", "partition"}, nil)
	descPending = prometheus.NewDesc("allot_pending_jobs",
		"Queued jobs by the reason they wait (None: not yet planned).",
		[]string{"reason"}, nil)
	descNodeHealth = prometheus.NewDesc("allot_node_health",
		"1 for the node's current health (Ready, NotReady or Draining), 0 for the others.",
		[]string{"node", "region", "cluster", "health"}, nil)
	descAutoDrained = prometheus.NewDesc("allot_node_auto_drained",
		"1 while allot itself holds the node drained: the server, because jobs of several tenants failed there (allot node resume ends it), or the node's health check, which failed (its next pass ends it); 0 otherwise.",
		[]string{"node", "region", "cluster"}, nil)
	descHeartbeat = prometheus.NewDesc("allot_agent_last_heartbeat_timestamp_seconds",
		"When the node's agent last registered or heartbeated (Unix seconds); only nodes heard from since the server started.",
		[]string{"node"}, nil)
)

// noPartition labels GPUs and jobs of a tenant in no partition.
const noPartition = "none"

// healths are the node healths, in order.
var healths = []model.Health{model.NodeReady, model.NodeNotReady, model.NodeDraining}

// pendingReasons are the core's pending reasons; each has a series from the
// start.
var pendingReasons = []sched.Reason{sched.UnknownTenant, sched.SkuNotAvailable, sched.ResidencyForbidden,
	sched.ReservationNotActive, sched.NoReadyNodes, sched.NodesExcluded, sched.QuotaExceeded, sched.BorrowLimitReached, sched.PowerCapped,
	sched.InsufficientCapacity, sched.TopologyUnsatisfiable, sched.AwaitingPreemption}

// liveStates are the states of jobs not ended, in order.
var liveStates = []model.State{model.StateQueued, model.StatePreparing, model.StateRunning, model.StatePreempted, model.StateBlocked}

func (fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGPUs, descAllocated, descGuaranteed, descBorrowed, descReserved,
		descLive, descQueue, descQueueGuaranteed, descPending, descNodeHealth, descAutoDrained, descHeartbeat} {
		ch <- d
	}
}

// pool is GPUs of one model in one region; place adds the cluster.
type (
	pool  struct{ region, model string }
	place struct{ region, cluster, model string }
)

func (c fleetCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	w := s.world()
	now := s.clock.Now()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	partOf := make(map[string]string, len(w.tenancy.Tenants))
	for _, t := range w.tenancy.Tenants {
		partOf[t.Name] = t.Partition
		if t.Partition == "" {
			partOf[t.Name] = noPartition
		}
	}
	partition := func(tenant string) string {
		if p, ok := partOf[tenant]; ok {
			return p
		}
		return noPartition
	}

	// Nodes: GPUs by place and health, and each node's health.
	type gpuKey struct {
		place
		health model.Health
	}
	gpus := map[gpuKey]int{}
	places := map[pool][]string{} // clusters with GPUs of a pool
	for _, n := range w.fleet.Nodes {
		sku := w.fleet.Catalog[n.SKU]
		if sku.GPUs > 0 {
			k := place{n.Region, n.Cluster, sku.GPUModel}
			if _, ok := gpus[gpuKey{k, model.NodeReady}]; !ok {
				for _, h := range healths {
					gpus[gpuKey{k, h}] += 0
				}
				places[pool{n.Region, sku.GPUModel}] = append(places[pool{n.Region, sku.GPUModel}], n.Cluster)
			}
			gpus[gpuKey{k, n.Health}] += sku.GPUs
		}
		for _, h := range healths {
			gauge(descNodeHealth, b2f(n.Health == h), n.Name, n.Region, n.Cluster, string(h))
		}
		rec, _, _ := s.cache.node(n.Name)
		gauge(descAutoDrained, b2f(drainedByAllot(rec.Drain)), n.Name, n.Region, n.Cluster)
	}
	for k, v := range gpus {
		gauge(descGPUs, float64(v), k.region, k.cluster, k.model, string(k.health))
	}

	// Guarantees: every cluster of a guaranteed pool shows the partition's
	// allocation, 0 when nothing runs there.
	type partPool struct {
		pool
		partition string
	}
	type partPlace struct {
		place
		partition string
	}
	guaranteed := map[partPool]int{}
	covered := map[partPool]int{}                // queued jobs a guarantee could serve
	guarantees := map[string][]model.Guarantee{} // by partition
	alloc := map[partPlace]int64{}               // milli-GPU
	for _, p := range w.tenancy.Partitions {
		for _, g := range p.Guarantees {
			k := pool{g.Region, g.GPUModel}
			guaranteed[partPool{k, p.Name}] += g.GPUs
			covered[partPool{k, p.Name}] += 0
			guarantees[p.Name] = append(guarantees[p.Name], g)
			for _, cl := range places[k] {
				alloc[partPlace{place{g.Region, cl, g.GPUModel}, p.Name}] += 0
			}
		}
	}

	// Jobs: one pass over the live ones.
	type queueKey struct {
		tenant string
		class  model.Class
	}
	type liveKey struct {
		state model.State
		class model.Class
	}
	live := map[liveKey]int{}
	queue := map[queueKey]int{}
	pending := map[string]int{}
	for _, t := range w.tenancy.Tenants {
		for _, cl := range classes {
			queue[queueKey{t.Name, cl}] = 0
		}
	}
	for _, r := range pendingReasons {
		pending[r.String()] = 0
	}
	for _, j := range s.cache.liveJobs() {
		st, cl := j.Status.State, j.Spec.Priority.Class
		live[liveKey{st, cl}]++
		if st == model.StateQueued {
			queue[queueKey{j.Spec.Tenant, cl}]++
			p := partition(j.Spec.Tenant)
			for _, g := range guarantees[p] {
				if guaranteeServes(w.fleet, g, j) {
					covered[partPool{pool{g.Region, g.GPUModel}, p}]++
				}
			}
			r := j.Status.Reason
			if r == "" {
				r = "None"
			}
			pending[r]++
		}
		if !st.Holds() {
			continue
		}
		for _, a := range j.Status.Allocations {
			n, ok := w.nodes[a.Node]
			if !ok {
				continue
			}
			k := place{n.Region, n.Cluster, w.fleet.Catalog[n.SKU].GPUModel}
			alloc[partPlace{k, partition(j.Spec.Tenant)}] += int64(len(a.GPUs)) * a.GPUMilli
		}
	}
	for _, st := range liveStates {
		for _, cl := range classes {
			gauge(descLive, float64(live[liveKey{st, cl}]), string(st), cl.String())
		}
	}
	for k, v := range queue {
		gauge(descQueue, float64(v), k.tenant, partition(k.tenant), k.class.String())
	}
	for r, v := range pending {
		gauge(descPending, float64(v), r)
	}
	for k, v := range covered {
		gauge(descQueueGuaranteed, float64(v), k.region, k.model, k.partition)
	}

	// Allocation, and borrowing beyond the guarantee per pool.
	used := map[partPool]int64{}
	for k, v := range alloc {
		gauge(descAllocated, float64(v)/model.MilliPerGPU, k.region, k.cluster, k.model, k.partition)
		used[partPool{pool{k.region, k.model}, k.partition}] += v
	}
	for k, g := range guaranteed {
		gauge(descGuaranteed, float64(g), k.region, k.model, k.partition)
		if _, ok := used[k]; !ok {
			used[k] = 0
		}
	}
	for k, u := range used {
		b := float64(u)/model.MilliPerGPU - float64(guaranteed[k])
		gauge(descBorrowed, max(0, b), k.region, k.model, k.partition)
	}

	// Reservations active now.
	reserved := map[partPool]int{}
	for _, r := range w.tenancy.Reservations {
		sku, ok := w.fleet.Catalog[r.SKU]
		if !ok || !r.ActiveAt(now) {
			continue
		}
		reserved[partPool{pool{r.Region, sku.GPUModel}, partition(r.Owner)}] += r.Count * sku.GPUs
	}
	for k, v := range reserved {
		gauge(descReserved, float64(v), k.region, k.model, k.partition)
	}

	// Agents' heartbeats.
	s.beatsMu.Lock()
	for n, at := range s.beats {
		gauge(descHeartbeat, float64(at.UnixNano())/float64(time.Second), n)
	}
	s.beatsMu.Unlock()
}

// guaranteeServes reports whether guarantee g could serve queued job j:
// j asks for GPUs, no more than g, and may run in g's region on its GPU
// model (regions, residency, GPU models). Work of another pool does not
// make a partition's shortfall in this one a broken promise.
func guaranteeServes(f *model.Fleet, g model.Guarantee, j *model.Job) bool {
	need := j.Spec.Resources.TotalMilli()
	if need <= 0 || need > int64(g.GPUs)*model.MilliPerGPU || !j.Spec.Resources.AcceptsModel(g.GPUModel) {
		return false
	}
	pl := j.Spec.Placement
	if len(pl.Regions) > 0 && !slices.Contains(pl.Regions, g.Region) {
		return false
	}
	if pl.Residency != "" {
		if r, ok := f.Region(g.Region); !ok || r.Residency != pl.Residency {
			return false
		}
	}
	return true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// liveJobs returns the jobs not ended, in no order.
func (c *cache) liveJobs() []*model.Job {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*model.Job, 0, len(c.live))
	for id := range c.live {
		out = append(out, c.jobs[id].job)
	}
	return out
}
