package sched

import (
	"slices"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// poolKey names the capacity a partition guarantee covers. Inside a cycle
// pools are numbered (state.pools) and counted in slices.
type poolKey struct{ region, gpuModel string }

// seriesKey names the capacity a hard quota covers, for every tenant; a
// cycle numbers them too (state.series).
type seriesKey struct{ region, series string }

// quotaKey is one tenant's share of one numbered series key.
type quotaKey struct{ tenant, series int }

// group is a set of nodes with the same region, cluster and SKU: every
// static filter gives the same answer for all of them.
type group struct {
	nodes     []*NodeInfo // in rank order
	open      []*NodeInfo // nodes holding work with GPU capacity left, in no order
	full      []*NodeInfo // nodes holding work with no GPU capacity left, in no order
	idleFrom  int         // no idle node sits before this position in nodes
	sku       model.SKU
	pool      int // in state.pools
	series    int // in state.series
	region    *regionState
	cluster   string
	fabric    model.Fabric
	residency string
	domain    int      // in state.domains
	notFull   []uint64 // bit per position in nodes: the node is not on the full list
	ready     int      // Ready nodes
	notReady  int      // nodes not Ready
	// Ready nodes a reservation holds in this cycle, by node index.
	reservedReady []int
	// images are the ids of the images a node of the group holds, sorted
	// (images.go).
	images []int32
	// unevenPower is set when the group's region has a power cap, or one
	// of its nodes sits in a capped rack with nodes of another draw per
	// GPU or of another gang domain (indexPower): counting gang slots
	// against the cap then depends on the order of the nodes.
	unevenPower bool
}

type regionState struct {
	name      string
	residency string
	capW      int64 // 0: no cap
	drawW     int64
	left      int64  // scratch of gangDomains, valid while stamp is current
	stamp     uint64 // gangDomains call that set left
}

type rackState struct {
	capW  int64 // 0: no cap
	drawW int64
	left  int64  // scratch of gangDomains, valid while stamp is current
	stamp uint64 // gangDomains call that set left
}

type reservationState struct {
	model.Reservation
	active bool
	named  bool // its owner's work that names it is queued
	nodes  []int
	// earmarks are the nodes it will take at its start, kept while the
	// window lies ahead (earmark.go); nil once it is active or over.
	earmarks []int
	// Of the nodes of its SKU and region it did not get: NotReady ones,
	// and Ready ones an earlier reservation took.
	notReady, heldByOthers int
	// steered are its owner's queued jobs that name it, while every one
	// of them names its nodes (placement.nodes or exclude_nodes); unsteered
	// is set, and steered left empty, once one names none.
	steered   []*model.Job
	unsteered bool
}

type partitionState struct {
	name string
	guar []int64 // milli-GPU by pool
	used []int64
	// used when the current preemption began (startVictims): whom it may
	// evict is decided on that.
	usedBefore []int64
	borrow     []int64 // borrowing cap beyond guar; -1: none
	lend       []int64 // lending cap; -1: all idle guarantee
	weight     float64 // sum of member weights
	total      int64   // guaranteed milli over all pools
}

type tenantState struct {
	idx       int // in quota keys
	name      string
	partition *partitionState
	weight    float64
	used      int64   // milli-GPU held now
	entitled  float64 // milli-GPU this tenant may count as its own
	// By numbered series: the hard quota in milli-GPU (-1 for none; nil
	// when the tenant has no quota at all) and what the tenant holds.
	quota, quotaUsed []int64
}

// share is the tenant's used capacity over what it is entitled to; the
// queue serves the lowest share first.
func (t *tenantState) share() float64 { return float64(t.used) / t.entitled }

// running is a job holding capacity at the start of the cycle or bound in it.
type running struct {
	job    *model.Job
	tenant *tenantState
	req    Request
	nodes  []int   // node index per instance
	gpus   [][]int // GPUs per instance
	pool   int     // of its first instance's node
	// evicted is set once a preemption in this cycle released the job.
	evicted bool
	// fresh marks a job bound in this cycle; it is not a victim in the same one.
	fresh bool
	// resized marks an elastic job the cycle grew or shrank: neither
	// resized again nor evicted in the same cycle (elastic.go).
	resized bool
	cost    float64   // GPU-seconds lost if evicted in this cycle
	since   time.Time // the last checkpoint or the start (lastSaved)
	// released is set when a Session was told the job stopped holding; the
	// next cycle drops it from state.running.
	released bool
	class    model.Class
	// onReserved is set when an instance runs on a node a reservation
	// holds in this cycle (see markReserved).
	onReserved bool
	onNotReady bool // an instance runs on a node that is not Ready
	// cpuOnGPU is set for work that holds no GPU on a node that has GPUs:
	// it is filed as spot work, and work that needs GPUs evicts it
	// (GPUWorkFirst), so CPU-only work cannot keep GPUs idle.
	cpuOnGPU bool
	guarded  time.Time // when protection from preemption ends, if after now (protectedUntil)
	bucket   int       // in state.runBuckets, -1 for none
	// read marks the job read by a pass over victim lists (victimStream's
	// outStamp or scan), so that a job on two lists is read once.
	read uint64
	// rank is the job's place in victim order (victimCmp) among the work
	// running when the cycle began, from 1; 0 for work bound since.
	// victimLess compares ranks where both have one.
	rank int32
}

// state is the core's private, mutable copy of the world for one cycle.
type state struct {
	now        time.Time
	cfg        Config
	nodes      []*NodeInfo
	nodeByName map[string]int
	groups     []*group
	groupOf    []int      // node index -> group index
	groupPos   []int      // node index -> position in its group's nodes
	fileOf     []fileKind // node index -> the group list holding it
	filePos    []int      // node index -> position in that list
	rackOf     []int      // node index -> rack index, -1 for none
	regionOf   []*regionState
	racks      []rackState
	regions    map[string]*regionState
	resOf      []int // node index -> reservation index, -1 for none
	earOf      []int // node index -> index of the reservation that earmarks it ahead of its start, -1 for none
	// earmarked is set when a reservation earmarks nodes in this cycle.
	earmarked bool
	// holds are the jobs that keep nodes in this cycle (hold.go), in the
	// order they were chosen; holdOf is, by node index, the index in holds
	// of the one that keeps the node, -1 for none; held lists those nodes.
	holds  []holdState
	holdOf []int
	held   []int
	// awaits are the jobs of this cycle that wait for protected victims
	// (await.go); keptOf is, by node index, the index in awaits of the one
	// whose victims run there, -1 for none; keptNodes lists those nodes.
	awaits    []awaitState
	keptOf    []int
	keptNodes []int
	// protectedOn collects, while one attempt looks for victims, the nodes
	// of those it may evict only once their protection ends; once the
	// search failed for protection, the nodes of the victims it would take
	// were none protected (preempt).
	protectedOn []int
	// unguarded makes the victim search treat protected work as evictable
	// now (preempt's second search).
	unguarded  bool
	heldBuf    []*running // heldWork's list, reused
	res        []reservationState
	resByName  map[string]int
	partitions map[string]*partitionState
	// partitionList holds the partitions of the map, in the tenancy's
	// order, for loops that visit them all.
	partitionList []*partitionState
	tenants       map[string]*tenantState
	pools         []poolKey
	poolID        map[poolKey]int
	series        []seriesKey
	seriesID      map[seriesKey]int
	quota         map[quotaKey]int64 // limit in milli-GPU (also in tenantState.quota)
	poolFree      []int64            // free milli-GPU on Ready nodes, by pool
	// counts numbers the states of use (account), so that what depends
	// on use alone may be kept while it stays; a preemption that tried
	// victims out and restored them all puts it back.
	counts   uint64
	running  []*running
	byNode   [][]*running // node index -> jobs with an instance there, in no order
	nodeWork []*running   // scratch of reserveCost

	domains []*domain // gang domains: one GPU model in one cluster
	leaves  []*leaf   // leaf groups inside domains
	leafOf  []int     // node index -> leaf index

	chooser Chooser
	// imageIDs numbers the images the nodes hold (Snapshot.Images) from
	// 1; nil when no node holds one (images.go).
	imageIDs   map[string]int32
	cands      []*NodeInfo // scratch: the nodes that passed the filters
	candGroups []*group    // scratch: the groups cands came from, in order
	local      []*NodeInfo // scratch: candidates in the job's data region
	offIB      []*NodeInfo // scratch: candidates off InfiniBand, for inference replicas
	kept       []*NodeInfo // scratch: candidates where no attempt of the job failed
	keyBuf     []byte      // scratch: the shape key of the job being scheduled
	sortKeys   []victimKey // scratch of sortRunning
	// spare is the Pending list of a Plan given back (Session.Recycle),
	// for the next cycle's; nil when none.
	spare []Pending
	// scratch of queues: each job's group, and the queued jobs by class
	// and tenant (the tenants' queues are slices of it for the cycle).
	queueOf  []int
	queueAll []*model.Job
	// elastic lists, in victim order, the running elastic jobs of the
	// cycle (elastic.go); resized what the cycle resized, to be undone.
	elastic []*running
	// shrinkable lists those of them above their minimum by a step at
	// least: the only ones a shrink reads.
	shrinkable []*running
	resized    []resized
	headroom   map[int]int64 // milli-GPU kept free of growth, by pool (Snapshot.Headroom)
	// vacated holds the nodes where the cycle evicted work or shrank a
	// job: growth stays off them, so that it never takes what a
	// preemption freed.
	vacated  map[int]bool
	cuts     []cut     // scratch of shrinkFor
	stamp    uint64    // numbers calls that keep scratch marks (gangDomains, startVictims, room)
	domOrder []*domain // scratch of gangDomains
	// powerCut counts the instances the last gangDomains call left out
	// because a rack or region power cap would break, and powerCutNode is
	// the last node where one did (its rack's cap when powerCutRack, else
	// its region's): a gang short of room only for power is PowerCapped,
	// not InsufficientCapacity, and powerCutText says why.
	powerCut     int
	powerCutNode int
	powerCutRack bool
	groupPass    []uint64 // scratch of startVictims: group -> stamp when a's filters admit it
	// Running work off reserved nodes by class, partition and pool,
	// running work with an instance on a reserved node, and work wholly
	// inside its owner's reservations (which only the owner's work that
	// names one may evict, yieldsToNamed), each in victimLess order
	// (indexRunning). workOnNotReady is set when some running work has an
	// instance on a node that is not Ready.
	runBuckets  []*runBucket
	runBucketOf map[runKey]int
	onReserved  []*running
	ownReserved []*running
	// classMilli is the milli-GPU running work of each class holds on the
	// Ready nodes of each pool (indexRunning): a bound on what evictions
	// there could free (mayFreeLendable).
	classMilli     [][model.ClassReserved + 1]int64
	workOnNotReady bool
	victims        victimStream // scratch of preempt
	// Running work by tenant and class, in victimLess order, when
	// Config.PriorityGap is on (priority.go).
	ownWork map[ownKey]*[]*running

	// Groups by pool, series, rack and region (buildFreedIndex), to drop
	// only the cached verdicts a preemption can change.
	poolGroups, seriesGroups, rackGroups [][]uint64
	regionGroups                         map[string][]uint64
	freed                                []uint64  // scratch of scheduleJob
	room                                 room      // scratch of preempt
	cold                                 coldNodes // scratch of preempt: node moves held back (cold.go)
	one                                  oneDomain // scratch of preempt: one domain's victims (onedomain.go)
	// misses are the cycle's preemptions that found no victims to make
	// room, by the shape key without CPU and memory (missKey).
	misses    map[string][]preemptMiss
	settled   map[string]failure // jobs that fail whatever CPU and memory they ask, by missKey (settle)
	blind     map[string]failure // placements that failed whatever the CPU and memory asked, by missKey
	missAll   bool               // set by preempt: its miss holds whatever CPU and memory a job asks
	blindable bool               // set by place: its failure was one for blind
	missBuf   []byte             // scratch of missKey
	skuSizes  []skuSize          // listSKUSizes
}

// newState builds a cycle's state from scratch: the fleet and tenancy,
// then the work holding capacity, then what depends on now.
func newState(s *Snapshot, now time.Time, cfg Config) *state {
	st := newBase(s.Fleet, s.Tenancy, cfg)
	st.setHeadroom(s.Headroom)
	st.setImages(s.Images)
	st.buildRunning(s.Jobs)
	st.begin(now, s.Jobs)
	return st
}

// sortRunning sorts running work into victim order (victimCmp). It sorts
// pairs of each job's cost, which decides nearly every comparison, and the
// job, so that a comparison reads no job through a pointer until two costs
// tie. A Session's order from its previous cycle is no help: every minute
// the jobs that checkpointed move from wherever they were to the front.
// keys is scratch, returned for the next call.
func sortRunning(rs []*running, keys []victimKey) []victimKey {
	keys = keys[:0]
	for _, rj := range rs {
		keys = append(keys, victimKey{rj.cost, rj})
	}
	slices.SortFunc(keys, func(x, y victimKey) int {
		switch {
		case x.cost < y.cost:
			return -1
		case x.cost > y.cost:
			return 1
		}
		return victimCmp(x.rj, y.rj)
	})
	for i := range keys {
		rs[i] = keys[i].rj
	}
	clear(keys) // no pointer outlives the sort
	return keys
}

// victimKey is a running job and its cost, for sortRunning.
type victimKey struct {
	cost float64
	rj   *running
}

// newBase builds what the fleet and the tenancy alone decide: nodes,
// groups, pools, partitions, tenants, gang domains. No work is counted yet.
func newBase(f *model.Fleet, t *model.Tenancy, cfg Config) *state {
	st := &state{
		cfg:        cfg,
		nodeByName: make(map[string]int, len(f.Nodes)),
		regions:    map[string]*regionState{},
		resByName:  map[string]int{},
		partitions: map[string]*partitionState{},
		tenants:    map[string]*tenantState{},
		poolID:     map[poolKey]int{},
		seriesID:   map[seriesKey]int{},
		quota:      map[quotaKey]int64{},
	}
	st.chooser.Scorer = cfg.Scorer
	st.buildFleet(f)
	st.buildTenancy(t)
	st.buildDomains()
	st.indexPower()
	return st
}

// begin readies a state holding the running work for a cycle at now: it
// redoes everything that depends on the time and the queue (reservation
// windows and the nodes they take, what evicting each job loses,
// protection, the victim order) and leaves the counts of capacity as they
// are. A Session calls it on the state it carries; newState on one built
// for the cycle. Of jobs, only the queued ones count.
func (st *state) begin(now time.Time, jobs []*model.Job) {
	st.now = now
	st.room.a, st.victims.a = nil, nil
	for i := range st.res {
		rs := &st.res[i]
		for _, n := range rs.nodes {
			st.resOf[n] = -1
		}
		for _, n := range rs.earmarks {
			st.earOf[n] = -1
		}
		rs.nodes, rs.earmarks, rs.notReady, rs.heldByOthers = rs.nodes[:0], rs.earmarks[:0], 0, 0
		rs.active, rs.named, rs.steered, rs.unsteered = rs.ActiveAt(now), false, rs.steered[:0], false
	}
	for _, j := range jobs {
		name := j.Spec.Placement.Reservation
		if name == "" || j.Status.State != model.StateQueued {
			continue
		}
		if r, ok := st.resByName[name]; ok && st.res[r].Owner == j.Spec.Tenant {
			rs := &st.res[r]
			rs.named = true
			switch p := &j.Spec.Placement; {
			case len(p.Nodes)+len(p.ExcludeNodes) == 0:
				rs.steered, rs.unsteered = rs.steered[:0], true
			case !rs.unsteered:
				rs.steered = append(rs.steered, j)
			}
		}
	}
	kept := st.running[:0]
	for _, rj := range st.running {
		if rj.released {
			continue // a Session was told it stopped
		}
		rj.fresh, rj.evicted, rj.resized = false, false, false
		rj.cost = st.lostGPUSeconds(rj)
		kept = append(kept, rj)
	}
	clear(st.running[len(kept):])
	st.running = kept
	st.reserve()
	st.earmark()
	st.indexReady()
	// Running work in victim order, so that every list indexRunning files
	// it on comes out in that order. A Session sorts the order of its
	// previous cycle, which the passing minute changes little.
	st.sortKeys = sortRunning(st.running, st.sortKeys)
	for i, rj := range st.running {
		rj.rank = int32(i + 1)
	}
	st.onReserved, st.ownReserved, st.workOnNotReady = st.onReserved[:0], st.ownReserved[:0], false
	st.classMilli = append(st.classMilli[:0], make([][model.ClassReserved + 1]int64, len(st.pools))...)
	for _, b := range st.runBuckets {
		clear(b.work)
		b.work = b.work[:0]
	}
	st.clearOwn()
	st.elastic, st.shrinkable, st.resized, st.vacated = st.elastic[:0], st.shrinkable[:0], st.resized[:0], nil
	for _, rj := range st.running {
		st.indexRunning(rj, false)
		if e := rj.job.Spec.Elastic; e != nil {
			st.elastic = append(st.elastic, rj)
			if len(rj.nodes)-e.StepOrOne() >= e.MinInstances {
				st.shrinkable = append(st.shrinkable, rj)
			}
		}
	}
}

func (st *state) buildFleet(f *model.Fleet) {
	rackIdx := map[string]int{}
	clusterFabric := map[string]model.Fabric{}
	for _, r := range f.Regions {
		st.regions[r.Name] = &regionState{name: r.Name, residency: r.Residency, capW: r.PowerHeadroomW}
		for _, c := range r.Clusters {
			clusterFabric[c.Name] = c.Fabric
			for _, rk := range c.Racks {
				rackIdx[rk.Name] = len(st.racks)
				st.racks = append(st.racks, rackState{capW: rk.PowerCapW})
			}
		}
	}
	total := 0
	for _, n := range f.Nodes {
		total += f.Catalog[n.SKU].GPUs
	}
	milli := make([]int64, total) // one backing array for every node's GPUs
	st.nodes = make([]*NodeInfo, len(f.Nodes))
	st.groupOf = make([]int, len(f.Nodes))
	st.groupPos = make([]int, len(f.Nodes))
	st.fileOf = make([]fileKind, len(f.Nodes))
	st.filePos = make([]int, len(f.Nodes))
	st.rackOf = make([]int, len(f.Nodes))
	st.regionOf = make([]*regionState, len(f.Nodes))
	st.byNode = make([][]*running, len(f.Nodes))
	groupIdx := map[[3]string]int{}
	for i, n := range f.Nodes {
		sku := f.Catalog[n.SKU]
		free := milli[:sku.GPUs:sku.GPUs]
		milli = milli[sku.GPUs:]
		for g := range free {
			free[g] = model.MilliPerGPU
		}
		reg := st.regions[n.Region]
		ni := &NodeInfo{
			Index: i, Rank: i, Name: n.Name, SKU: n.SKU, Series: sku.Series, GPUModel: sku.GPUModel,
			Region: n.Region, Residency: reg.residency, Cluster: n.Cluster, Fabric: clusterFabric[n.Cluster],
			Leaf: n.Leaf, Rack: n.Rack, Ready: n.Health == model.NodeReady,
			Draining: n.Health == model.NodeDraining, PowerW: sku.PowerW,
			FreeMilli: free, FreeWhole: sku.GPUs,
			CPUCap: sku.CPUMilli(), CPUFree: sku.CPUMilli(), MemCap: sku.MemoryMiB(), MemFree: sku.MemoryMiB(),
		}
		st.nodes[i] = ni
		st.regionOf[i] = reg
		st.nodeByName[n.Name] = i
		st.rackOf[i] = -1
		if r, ok := rackIdx[n.Rack]; ok {
			st.rackOf[i] = r
		}
		key := [3]string{n.Region, n.Cluster, n.SKU}
		gi, ok := groupIdx[key]
		if !ok {
			gi = len(st.groups)
			groupIdx[key] = gi
			st.groups = append(st.groups, &group{
				sku: sku, pool: st.poolOf(poolKey{n.Region, sku.GPUModel}), series: st.seriesOf(seriesKey{n.Region, sku.Series}), region: reg,
				cluster: n.Cluster, fabric: ni.Fabric, residency: reg.residency,
			})
		}
		st.groupPos[i] = len(st.groups[gi].nodes)
		st.groups[gi].nodes = append(st.groups[gi].nodes, ni)
		st.groupOf[i] = gi
		if ni.Ready {
			st.poolFree[st.groups[gi].pool] += int64(sku.GPUs) * model.MilliPerGPU
		}
	}
	st.resOf = make([]int, len(f.Nodes))
	st.earOf = make([]int, len(f.Nodes))
	st.holdOf, st.held, st.holds = make([]int, len(f.Nodes)), nil, nil
	st.keptOf = make([]int, len(f.Nodes))
	for i := range st.holdOf {
		st.holdOf[i], st.keptOf[i] = -1, -1
	}
	for i := range st.resOf {
		st.resOf[i], st.earOf[i] = -1, -1
	}
	for _, g := range st.groups {
		g.notFull = make([]uint64, (len(g.nodes)+63)/64)
		for p := range g.nodes {
			g.setNotFull(p, true)
		}
	}
}

func (st *state) buildTenancy(t *model.Tenancy) {
	for _, p := range t.Partitions {
		for _, g := range p.Guarantees {
			st.poolOf(poolKey{g.Region, g.GPUModel}) // number every pool before sizing
		}
	}
	for _, q := range t.Quotas {
		st.seriesOf(seriesKey{q.Region, q.Series})
	}
	n := len(st.pools)
	for _, p := range t.Partitions {
		ps := &partitionState{name: p.Name, guar: make([]int64, n), used: make([]int64, n),
			borrow: make([]int64, n), lend: make([]int64, n)}
		for k := range ps.borrow {
			ps.borrow[k], ps.lend[k] = -1, -1
		}
		for _, g := range p.Guarantees {
			k := st.poolID[poolKey{g.Region, g.GPUModel}]
			ps.guar[k] += int64(g.GPUs) * model.MilliPerGPU
			ps.total += int64(g.GPUs) * model.MilliPerGPU
			if g.BorrowLimit != nil {
				ps.borrow[k] = int64(*g.BorrowLimit) * model.MilliPerGPU
			}
			if g.LendLimit != nil {
				ps.lend[k] = int64(*g.LendLimit) * model.MilliPerGPU
			}
		}
		if _, dup := st.partitions[p.Name]; !dup {
			st.partitionList = append(st.partitionList, ps)
		} else {
			st.partitionList = slices.DeleteFunc(st.partitionList, func(q *partitionState) bool { return q.name == p.Name })
			st.partitionList = append(st.partitionList, ps)
		}
		st.partitions[p.Name] = ps
	}
	for _, x := range t.Tenants {
		ts := &tenantState{idx: len(st.tenants), name: x.Name, weight: x.Weight, partition: st.partitions[x.Partition]}
		if ts.weight <= 0 {
			ts.weight = 1
		}
		if ts.partition != nil {
			ts.partition.weight += ts.weight
		}
		ts.quotaUsed = make([]int64, len(st.series))
		st.tenants[x.Name] = ts
	}
	for _, ts := range st.tenants {
		// Entitlement: the tenant's weighted part of its partition's
		// guarantee, plus one GPU per unit of weight so that tenants
		// without guarantees still share by weight.
		ts.entitled = ts.weight * model.MilliPerGPU
		if p := ts.partition; p != nil && p.weight > 0 {
			ts.entitled += float64(p.total) * ts.weight / p.weight
		}
	}
	for _, q := range t.Quotas {
		if ts, ok := st.tenants[q.Tenant]; ok {
			k := quotaKey{ts.idx, st.seriesID[seriesKey{q.Region, q.Series}]}
			st.quota[k] = int64(q.GPUs) * model.MilliPerGPU
			if ts.quota == nil {
				ts.quota = make([]int64, len(st.series))
				for i := range ts.quota {
					ts.quota[i] = -1
				}
			}
			ts.quota[k.series] = st.quota[k]
		}
	}
	for _, r := range t.Reservations {
		st.resByName[r.Name] = len(st.res)
		st.res = append(st.res, reservationState{Reservation: r}) // active from begin
	}
}

// tenant returns the state of the named tenant, making an unlimited,
// partition-less one for names the tenancy does not know (the caller
// reports UnknownTenant for queued jobs; running jobs still count).
func (st *state) tenant(name string) (*tenantState, bool) {
	if t, ok := st.tenants[name]; ok {
		return t, true
	}
	t := &tenantState{idx: len(st.tenants), name: name, weight: 1, entitled: model.MilliPerGPU,
		quotaUsed: make([]int64, len(st.series))}
	st.tenants[name] = t
	return t, false
}

func (st *state) buildRunning(jobs []*model.Job) {
	// One allocation for the records and one for their node lists: a
	// cycle builds them all again, and the simulator runs many cycles.
	holding, instances := 0, 0
	for _, j := range jobs {
		if j.Status.State.Holds() && len(j.Status.Allocations) > 0 {
			holding++
			instances += len(j.Status.Allocations)
		}
	}
	records := make([]running, holding)
	nodes := make([]int, instances)
	gpus := make([][]int, instances)
	st.running = make([]*running, 0, holding)
	for _, j := range jobs {
		if !j.Status.State.Holds() || len(j.Status.Allocations) == 0 {
			continue
		}
		t, _ := st.tenant(j.Spec.Tenant)
		n := len(j.Status.Allocations)
		rj := &records[0]
		records = records[1:]
		*rj = running{job: j, tenant: t, req: RequestOf(j.Spec.Resources), nodes: nodes[:0:n], gpus: gpus[:0:n]}
		nodes, gpus = nodes[n:], gpus[n:]
		ok := true
		for _, a := range j.Status.Allocations {
			i, found := st.nodeByName[a.Node]
			if !found {
				ok = false // the node left the fleet; the server requeues such jobs
				break
			}
			rj.nodes = append(rj.nodes, i)
			rj.gpus = append(rj.gpus, a.GPUs)
		}
		if !ok {
			continue
		}
		rj.pool = st.groups[st.groupOf[rj.nodes[0]]].pool
		st.commit(rj) // its cost is counted at begin
	}
}

// commit charges a job's capacity everywhere it is counted.
func (st *state) commit(rj *running) {
	rj.since = lastSaved(rj.job)
	st.account(rj, +1)
	st.running = append(st.running, rj)
}

// indexRunning files rj by priority class and, when an instance runs on a
// node a reservation holds (reservations hold their nodes for the whole
// cycle once reserve ran), on the list of such work; preempt reads these
// lists instead of all running work. With sorted set rj goes to its place
// in victimLess order; otherwise it is appended and the caller sorts.
func (st *state) indexRunning(rj *running, sorted bool) {
	rj.class, rj.guarded = rj.job.Spec.Priority.Class, time.Time{}
	if rj.cpuOnGPU = st.cpuOnGPU(rj); rj.cpuOnGPU {
		rj.class = model.ClassSpot // filed with the work any higher class reads (evictable)
	}
	if t := st.protectedUntil(rj); t.After(st.now) {
		rj.guarded = t
	}
	last := rj.bucket // the bucket of its last filing, likely its own again
	rj.onReserved, rj.onNotReady, rj.bucket = false, false, -1
	for _, i := range rj.nodes {
		if st.resOf[i] >= 0 {
			rj.onReserved = true
		}
		if !st.nodes[i].Ready {
			rj.onNotReady, st.workOnNotReady = true, true
		}
	}
	file := func(l []*running) []*running {
		if !sorted {
			return append(l, rj)
		}
		at := sort.Search(len(l), func(i int) bool { return victimLess(rj, l[i]) })
		return slices.Insert(l, at, rj)
	}
	st.countClass(rj, +1)
	switch {
	case rj.onReserved && st.inOwnReservation(rj):
		st.ownReserved = file(st.ownReserved)
	case rj.onReserved:
		st.onReserved = file(st.onReserved)
	case rj.class >= model.ClassSpot && rj.class <= model.ClassReserved:
		k := runKey{class: rj.class, partition: rj.tenant.partition, pool: rj.pool}
		for _, i := range rj.nodes {
			if st.groups[st.groupOf[i]].pool != rj.pool {
				k.spread = true
			}
		}
		bi, ok := last, last >= 0 && last < len(st.runBuckets) && st.runBuckets[last].runKey == k
		if !ok {
			bi, ok = st.runBucketOf[k]
		}
		if !ok {
			if st.runBucketOf == nil {
				st.runBucketOf = map[runKey]int{}
			}
			bi = len(st.runBuckets)
			st.runBucketOf[k] = bi
			st.runBuckets = append(st.runBuckets, &runBucket{runKey: k})
		}
		b := st.runBuckets[bi]
		b.work = file(b.work)
		rj.bucket = bi
	}
	st.fileOwn(rj, sorted)
}

// cpuOnGPU reports whether rj holds no GPU and runs on a node with GPUs.
func (st *state) cpuOnGPU(rj *running) bool {
	if rj.req.TotalMilli() > 0 {
		return false
	}
	for _, i := range rj.nodes {
		if st.nodes[i].GPUs() > 0 {
			return true
		}
	}
	return false
}

// unindexRunning takes rj, evicted for good, off the lists of running work
// that indexRunning filed it on, so that later preemptions do not read past
// it.
func (st *state) unindexRunning(rj *running) {
	drop := func(l []*running) []*running {
		at := sort.Search(len(l), func(i int) bool { return !victimLess(l[i], rj) })
		if at < len(l) && l[at] == rj {
			return slices.Delete(l, at, at+1)
		}
		return l
	}
	st.unfileOwn(rj)
	st.countClass(rj, -1)
	switch {
	case rj.onReserved && st.inOwnReservation(rj): // filed as indexRunning did
		st.ownReserved = drop(st.ownReserved)
		return
	case rj.onReserved:
		st.onReserved = drop(st.onReserved)
		return
	}
	if rj.bucket >= 0 {
		b := st.runBuckets[rj.bucket]
		b.work = drop(b.work)
	}
}

// countClass adds (sign +1) or takes away rj's milli-GPU on Ready nodes to
// its class's use of their pools.
func (st *state) countClass(rj *running, sign int64) {
	if rj.class < model.ClassSpot || rj.class > model.ClassReserved {
		return
	}
	m := sign * rj.req.TotalMilli()
	for _, i := range rj.nodes {
		if st.nodes[i].Ready {
			st.classMilli[st.groups[st.groupOf[i]].pool][rj.class] += m
		}
	}
}

// runKey is what decides whether running work off reserved nodes is
// evictable (evictable): its class, its tenant's partition (nil for none)
// and the pool of its first instance; and whether all of it runs in that
// pool, so that a job whose filters admit no group of the pool gains
// nothing from evicting it (relevant).
type runKey struct {
	class     model.Class
	partition *partitionState
	pool      int
	spread    bool // some instance runs in another pool
}

// runBucket is the running work off reserved nodes of one runKey, in
// victimLess order.
type runBucket struct {
	runKey
	work []*running
}

// release returns an evicted job's capacity.
func (st *state) release(rj *running) {
	st.account(rj, -1)
	rj.evicted = true
}

func (st *state) account(rj *running, sign int64) {
	st.counts++
	for k := range rj.nodes {
		st.accountNode(rj, k, sign)
		st.accountUse(rj, k, sign)
	}
}

// accountNode binds (sign +1) or unbinds (-1) rj's k-th instance on its
// node: the node's free capacity, its group's lists and the node's work.
func (st *state) accountNode(rj *running, k int, sign int64) {
	i := rj.nodes[k]
	st.holdNode(st.nodes[i], &rj.req, rj.gpus[k], sign)
	if sign > 0 {
		st.byNode[i] = append(st.byNode[i], rj)
	} else {
		st.byNode[i] = removeRunning(st.byNode[i], rj)
	}
}

// accountUse charges (sign +1) or refunds (-1) what rj's k-th instance
// uses beyond its node: power, the pool's free capacity, the partition's,
// the quota's and the tenant's use.
func (st *state) accountUse(rj *running, k int, sign int64) {
	i := rj.nodes[k]
	n := st.nodes[i]
	m := rj.req.TotalMilli()
	st.holdPower(n, &rj.req, sign)
	g := st.groups[st.groupOf[i]]
	if n.Ready {
		st.poolFree[g.pool] -= sign * m
	}
	if p := rj.tenant.partition; p != nil {
		p.used[g.pool] += sign * m
	}
	if m != 0 {
		rj.tenant.quotaUsed[g.series] += sign * m
	}
	rj.tenant.used += sign * m
}

// hold binds (sign +1) or unbinds (-1) one instance on a node and charges
// or refunds its power, keeping the group's lists in step. Tenants are
// charged by account; placeGang holds instances alone to try a gang out.
func (st *state) hold(n *NodeInfo, r *Request, gpus []int, sign int64) {
	st.holdNode(n, r, gpus, sign)
	st.holdPower(n, r, sign)
}

// holdNode is hold's part on the node: its capacity and its group's lists.
func (st *state) holdNode(n *NodeInfo, r *Request, gpus []int, sign int64) {
	if sign > 0 {
		n.Bind(r, gpus)
	} else {
		n.Unbind(r, gpus)
	}
	st.refile(n)
}

// holdPower is hold's part on the power caps of the node's rack and region.
func (st *state) holdPower(n *NodeInfo, r *Request, sign int64) {
	w := sign * st.powerOf(n, r.TotalMilli())
	st.regionOf[n.Index].drawW += w
	if rk := st.rackOf[n.Index]; rk >= 0 {
		st.racks[rk].drawW += w
	}
}

// fileKind says which list of its group a node is on.
type fileKind uint8

const (
	fileIdle fileKind = iota // nothing bound: found through group.nodes
	fileOpen                 // work bound, GPU capacity left
	fileFull                 // work bound, no GPU capacity left
)

// refile moves n to the group list that matches its state.
func (st *state) refile(n *NodeInfo) {
	i := n.Index
	want := fileIdle
	switch {
	case n.Pods == 0:
	case n.FreeWhole > 0 || n.FreeMilliTotal() > 0 || n.GPUs() == 0:
		want = fileOpen
	default:
		want = fileFull
	}
	have := st.fileOf[i]
	if want == have {
		return
	}
	g := st.groups[st.groupOf[i]]
	g.setNotFull(st.groupPos[i], want != fileFull)
	if list := g.list(have); list != nil {
		pos := st.filePos[i]
		last := (*list)[len(*list)-1]
		(*list)[pos] = last
		st.filePos[last.Index] = pos
		*list = (*list)[:len(*list)-1]
	}
	if list := g.list(want); list != nil {
		st.filePos[i] = len(*list)
		*list = append(*list, n)
	} else {
		g.idleFrom = min(g.idleFrom, st.groupPos[i])
	}
	st.fileOf[i] = want
}

func (g *group) list(k fileKind) *[]*NodeInfo {
	switch k {
	case fileOpen:
		return &g.open
	case fileFull:
		return &g.full
	}
	return nil
}

func removeRunning(list []*running, rj *running) []*running {
	for i, x := range list {
		if x == rj {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// poolOf numbers a pool, adding it when new.
func (st *state) poolOf(k poolKey) int {
	if id, ok := st.poolID[k]; ok {
		return id
	}
	st.poolID[k] = len(st.pools)
	st.pools = append(st.pools, k)
	st.poolFree = append(st.poolFree, 0)
	return len(st.pools) - 1
}

// seriesOf numbers a region and series, adding it when new.
func (st *state) seriesOf(k seriesKey) int {
	if id, ok := st.seriesID[k]; ok {
		return id
	}
	st.seriesID[k] = len(st.series)
	st.series = append(st.series, k)
	return len(st.series) - 1
}

// powerOf is the draw of milli-GPU on node n: its SKU's full-load power
// spread evenly over its GPUs.
func (st *state) powerOf(n *NodeInfo, milli int64) int64 {
	g := int64(n.GPUs())
	if g == 0 || milli == 0 {
		return 0
	}
	return n.PowerW * milli / (g * model.MilliPerGPU)
}
