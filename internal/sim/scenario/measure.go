package scenario

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
	"github.com/allot-dev/allot/internal/report"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sim/engine"
	"github.com/allot-dev/allot/internal/strategy"
)

// checkGuarantees counts, over jobs (the live jobs at now, as the
// minute's cycle left them), a violation minute for every partition with
// a guarantee (as promised, whatever the strategy) that has queued work
// the guarantee has covered for longer than min_run_time — the time the
// core may take to reclaim lent capacity from protected work — counted
// from the later of the work's queueing and the last minute the partition
// was owed nothing (r.clear), so that work that waited behind its own
// partition until the partition fell short is owed from then. The
// guarantee covers work while the partition holds less than it: in one pool (GPU model,
// region, residency) the work may use, the partition holds fewer GPUs than
// guaranteed there, the work is no larger than the guarantee, and the work
// would start were the guarantee given back: a cluster of that pool (of
// the fabric the work asks for) has room for each of its instances on its
// nodes of that model, idle or freed by taking back from other partitions'
// work at most what the partition is owed there (guaranteed less held),
// leaving out the nodes other partitions' active reservations hold, and
// those their reservations ahead will take at their start unless the work
// would give them back by then (precedes). A
// guarantee protects a partition from the others, not from itself: a gang
// counts while it waits when idle capacity or what others hold of its
// guarantee stands in its way, not when its own partition's work does
// (that is the partition's own order, which its queueing shows).
func (r *run) checkGuarantees(now time.Time, jobs []*model.Job) {
	// used is what the pi-th partition holds in the pool of g.
	books := &r.rec.guarantee
	used := func(pi int, g model.Guarantee) int64 {
		k, ok := r.pools[[2]string{g.Region, g.GPUModel}]
		if !ok {
			return 0 // a guarantee where the fleet has no such GPU
		}
		return books.held[pi*books.pools+k]
	}
	// The partitions by their index in Promised (names are unique):
	// whether each holds less than a guarantee somewhere (only their work
	// can count, and most minutes there are none), has work the guarantee
	// covers waiting now, and counts a violation this minute.
	parts := r.w.Promised.Partitions
	r.short, r.owed, r.violated = resetBools(r.short, len(parts)), resetBools(r.owed, len(parts)), resetBools(r.violated, len(parts))
	short, owed, violated := r.short, r.owed, r.violated
	shortCount, violatedCount := 0, 0
	for pi, part := range parts {
		for _, g := range part.Guarantees {
			if used(pi, g) < int64(g.GPUs)*model.MilliPerGPU && !short[pi] {
				short[pi] = true
				shortCount++
			}
		}
	}
	defer func() {
		for pi := range parts {
			if !owed[pi] {
				r.clear[pi] = now
			}
		}
	}()
	if shortCount == 0 {
		return
	}
	grace := time.Duration(r.f.MinRunTime)
	var room func(p, region, gpu string, j *model.Job, owed int64) bool // built at its first use
	for _, j := range jobs {
		if j.Status.State != model.StateQueued || j.Spec.Placement.Reservation != "" {
			continue
		}
		pi, ok := r.partIndex[j.Spec.Tenant]
		if !ok || !short[pi] || violated[pi] {
			continue
		}
		p := parts[pi].Name
		queuedAt, queued := r.rec.queuedAt[j.ID]
		if !queued {
			continue
		}
		// Owed since it was queued, or since the last minute the
		// partition was owed nothing, whichever came later.
		since := queuedAt
		if c := r.clear[pi]; !c.IsZero() && c.After(since) {
			since = c
		}
		need := j.Spec.Resources.TotalMilli()
		if need == 0 {
			continue // CPU-only work is outside guarantees
		}
		for _, g := range parts[pi].Guarantees {
			guaranteed := int64(g.GPUs) * model.MilliPerGPU
			u := used(pi, g)
			if u >= guaranteed || need > guaranteed || !r.mayRun(j, g.Region, g.GPUModel) {
				continue
			}
			if room == nil {
				r.holding = r.eng.AppendHolding(r.holding[:0])
				room = r.roomCheck(now, r.holding)
			}
			if room(p, g.Region, g.GPUModel, j, guaranteed-u) {
				owed[pi] = true
				if now.Sub(since) <= grace {
					break // owed for less than min_run_time yet
				}
				violated[pi] = true
				violatedCount++
				if _, seen := r.firstViolation[p]; !seen {
					r.firstViolation[p] = fmt.Sprintf("%s: %s (%s, %d×%d GPUs) waited %s, %s of it owed, while the partition held %d of its %d %s GPUs in %s",
						now.Format(time.RFC3339), j.Spec.Name, j.ID, j.Spec.Resources.InstanceCount, j.Spec.Resources.GPUsPerInstance,
						now.Sub(queuedAt).Round(time.Minute), now.Sub(since).Round(time.Minute), u/model.MilliPerGPU, g.GPUs, g.GPUModel, g.Region)
				}
				break
			}
		}
		if violatedCount == shortCount {
			break // every partition that can count does
		}
	}
	for pi, v := range violated {
		if v {
			r.violations[parts[pi].Name]++
		}
	}
}

// resetBools is b with n false entries, reusing its array.
func resetBools(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// roomCheck returns the room test of checkGuarantees at now, with the
// holding jobs: whether j would start in a cluster of region on nodes of
// model gpu were partition p given back owed milli-GPU (memoised: many
// queued jobs share a shape).
func (r *run) roomCheck(now time.Time, holding []*model.Job) func(p, region, gpu string, j *model.Job, owed int64) bool {
	own := map[string]map[string]int64{}    // partition → node → milli-GPU its work holds there
	held := map[string]int64{}              // node → milli-GPU all work holds there
	resWork := map[string]map[string]bool{} // reservation → nodes its work runs on
	for _, j := range holding {
		for _, a := range j.Status.Allocations {
			held[a.Node] += int64(len(a.GPUs)) * a.GPUMilli
		}
		p := r.partOf[j.Spec.Tenant]
		if p == "" {
			continue
		}
		if own[p] == nil {
			own[p] = map[string]int64{}
		}
		res := j.Spec.Placement.Reservation
		if res != "" && resWork[res] == nil {
			resWork[res] = map[string]bool{}
		}
		for _, a := range j.Status.Allocations {
			own[p][a.Node] += int64(len(a.GPUs)) * a.GPUMilli
			if res != "" {
				resWork[res][a.Node] = true
			}
		}
	}
	// Active reservations and those ahead, of each region, for the room
	// check.
	active := map[string][]model.Reservation{} // region → its active reservations
	ahead := map[string][]model.Reservation{}  // region → its reservations not yet open
	for _, res := range r.w.Tenancy.Reservations {
		switch {
		case res.ActiveAt(now):
			active[res.Region] = append(active[res.Region], res)
		case res.Start.After(now):
			ahead[res.Region] = append(ahead[res.Region], res)
		}
	}
	type roomKey struct {
		part, region, gpu string
		milli             int64
		count             int
		fabric            model.Fabric
		kept              uint64 // the reservations ahead j would not give nodes back to in time, by index (the first 64 of a region; later ones count as room, which can only add violation minutes)
	}
	rooms := map[roomKey]bool{}
	return func(p, region, gpu string, j *model.Job, owed int64) bool {
		k := roomKey{p, region, gpu, j.Spec.Resources.MilliPerInstance(), j.Spec.Resources.InstanceCount, j.Spec.Placement.Interconnect, 0}
		for i, res := range ahead[region] {
			if i < 64 && r.partOf[res.Owner] != p && !r.precedes(j, now, res.Start) {
				k.kept |= 1 << i
			}
		}
		if v, ok := rooms[k]; ok {
			return v
		}
		reserved, more := r.othersReserved(p, active[region], resWork)
		for i, res := range ahead[region] {
			if k.kept&(1<<i) != 0 {
				more[res.SKU] += res.Count // the nodes it will take at its start
			}
		}
		v := r.room(j, region, gpu, owed, own[p], held, reserved, more)
		rooms[k] = v
		return v
	}
}

// precedes reports whether j, started at now, would give a reservation
// that opens at start its nodes back by then, as a reservation bought
// ahead is promised (docs/strategies.md): it ends by then (its
// retry.timeout and checkpoint grace), or it checkpoints and would be past
// its protection (min_run_time, or the resize interval of elastic work
// when longer) with one checkpoint saved, so that the reservation may
// evict it at its start losing at most one interval. Other work would
// keep a node the reservation needs, so that node is no room for it.
func (r *run) precedes(j *model.Job, now, start time.Time) bool {
	if t := j.Spec.Retry.Timeout; t > 0 && !now.Add(t+j.Spec.Checkpoint.GraceOrDefault()).After(start) {
		return true
	}
	every := j.Spec.Checkpoint.Interval
	protect := time.Duration(r.f.MinRunTime)
	if j.Spec.Elastic != nil {
		protect = max(protect, model.DefaultResizeInterval)
	}
	return every > 0 && !now.Add(protect+every).After(start)
}

// othersReserved returns the nodes that active reservations of partitions
// other than p hold: the nodes their work runs on, and, for the rest of a
// reservation's count, as many more nodes of its SKU (sku name → count).
func (r *run) othersReserved(p string, active []model.Reservation, resWork map[string]map[string]bool) (map[string]bool, map[string]int) {
	nodes, more := map[string]bool{}, map[string]int{}
	for _, res := range active {
		if r.partOf[res.Owner] == p {
			continue
		}
		n := 0
		for node := range resWork[res.Name] {
			nodes[node] = true
			n++
		}
		if n < res.Count {
			more[res.SKU] += res.Count - n
		}
	}
	return nodes, more
}

// room reports whether a cluster of region (of the fabric j asks for) has
// room for each of j's instances on its nodes of model gpu, taking back at
// most owed milli-GPU from other partitions' work (own: milli-GPU per node
// of the partition's own work, which stays; held: of all work), and
// leaving out the nodes others hold (reserved, and more[sku] further nodes
// of each SKU: those with the most room, as the core earmarks idle nodes
// first). Each node offers instances at a rising cost in what must be
// taken back (none while idle capacity lasts); the cheapest instances of
// all nodes are the least a start needs.
func (r *run) room(j *model.Job, region, gpu string, owed int64, own, held map[string]int64, reserved map[string]bool, more map[string]int) bool {
	per := j.Spec.Resources.MilliPerInstance()
	want := max(j.Spec.Resources.InstanceCount, 1)
	if per <= 0 {
		return false
	}
	for _, c := range r.clusters[region] {
		if f := j.Spec.Placement.Interconnect; f != "" && f != c.fabric {
			continue
		}
		offers := map[string][]offer{} // SKU → its nodes' offers
		for _, n := range c.nodes {
			if n.model != gpu || reserved[n.name] {
				continue
			}
			offers[n.sku] = append(offers[n.sku], offerOf(n.gpus, own[n.name], held[n.name], per))
		}
		var costs []int64
		for sku, os := range offers {
			slices.SortFunc(os, func(a, b offer) int { return cmp.Compare(a.slots, b.slots) })
			for _, o := range os[:max(len(os)-more[sku], 0)] { // the reservations' further nodes: those with most room
				costs = append(costs, o.costs...)
			}
		}
		if len(costs) < want {
			continue
		}
		slices.Sort(costs)
		var total int64
		for _, v := range costs[:want] {
			total += v
		}
		if total <= owed {
			return true
		}
	}
	return false
}

// offer is what a node offers an instance shape: how many instances fit
// beside the partition's own work, and what each further one costs in
// other partitions' work taken back (ascending).
type offer struct {
	slots int
	costs []int64
}

// offerOf is what a node of gpus GPUs offers instances of per milli-GPU
// when the partition's own work holds own milli there and all work held:
// the instances that fit beside the partition's own work, each at the
// milli-GPU of other partitions' work it takes back beyond the idle
// capacity the instances before it used (whole GPUs for whole-GPU
// instances).
func offerOf(gpus int, own, held, per int64) offer {
	capacity := int64(gpus) * model.MilliPerGPU
	if per >= model.MilliPerGPU { // whole GPUs: partly used ones are not free
		own = (own + model.MilliPerGPU - 1) / model.MilliPerGPU * model.MilliPerGPU
		held = (held + model.MilliPerGPU - 1) / model.MilliPerGPU * model.MilliPerGPU
	}
	idle := max(capacity-held, 0)
	n := int(max(capacity-own, 0) / per)
	costs := make([]int64, n)
	for k := range n {
		costs[k] = max(int64(k+1)*per-idle, 0) - max(int64(k)*per-idle, 0)
	}
	return offer{n, costs}
}

func (r *run) partition(name string) *model.Partition {
	for i := range r.w.Promised.Partitions {
		if r.w.Promised.Partitions[i].Name == name {
			return &r.w.Promised.Partitions[i]
		}
	}
	return &model.Partition{}
}

// mayRun reports whether j's placement allows region and GPU model.
func (r *run) mayRun(j *model.Job, region, gpu string) bool {
	pl := j.Spec.Placement
	if len(pl.Regions) > 0 && !slices.Contains(pl.Regions, region) {
		return false
	}
	if pl.Residency != "" {
		if reg, ok := r.w.Fleet.Region(region); !ok || reg.Residency != pl.Residency {
			return false
		}
	}
	return j.Spec.Resources.AcceptsModel(gpu)
}

// result gathers the Result of the run.
func (r *run) result() *Result {
	w, rec := r.w, r.rec
	res := &Result{Scenario: r.f.Name, Strategy: string(w.Promised.Strategy), Policies: r.opt.Policies != nil,
		Seed: r.opt.Seed, Load: r.opt.Load,
		FleetFactor: w.Factor, Nodes: len(w.Fleet.Nodes), Cycles: r.eng.Cycles(), PolicyFirings: r.firings,
		PolicyOverrideCycles: r.overridden,
		Preemptions:          rec.preemptions, LostGPUHours: rec.lostSeconds / 3600,
		SpotGPUHours: rec.spotSeconds / 3600, SpotLostGPUHours: rec.spotLost / 3600, RedoneGPUHours: rec.redone / 3600,
		RestartsHome: rec.home, RestartsAway: rec.away,
		Elastic: r.opt.Elastic, Grows: rec.grows, Shrinks: rec.shrinks, ResizeLostGPUHours: rec.resizeLost / 3600}
	if r.opt.NoOverflow {
		res.Variant = "no-overflow"
	}
	if r.opt.Checkpoints != engine.CheckpointsShared {
		res.Checkpoints = r.opt.Checkpoints.String()
	}
	for _, n := range w.Fleet.Nodes {
		res.GPUs += w.Fleet.Catalog[n.SKU].GPUs
	}
	length := w.End.Sub(w.Start)
	if res.GPUs > 0 {
		res.UtilisationPct = 100 * rec.busySeconds / (float64(res.GPUs) * length.Seconds())
		for _, h := range rec.hourly {
			res.HourlyUtilisation = append(res.HourlyUtilisation, h/(float64(res.GPUs)*3600))
		}
	}
	days := length.Hours() / 24
	var epGPUHours float64
	metMinutes := 0
	for _, ep := range r.endpoints {
		e := EndpointResult{Name: ep.spec.Name, Tenant: ep.spec.Tenant, SLOMs: ep.gen.SLO.P95Ms, Metric: ep.gen.SLO.Metric,
			Minutes: ep.minutes, PeakReplicas: ep.peakReplicas, WorstP95Ms: math.Round(ep.worstP95 * 1000),
			GPUHours: rec.endpointGPUSeconds[ep.spec.Name] / 3600, P95Ms: ep.p95Ms}
		if ep.minutes > 0 {
			e.AttainmentPct = 100 * float64(ep.within) / float64(ep.minutes)
		}
		if days > 0 {
			e.RequestsPerDayM = ep.requests / days / 1e6
		}
		if ep.requests > 0 {
			e.MissedPct = 100 * ep.missed / ep.requests
		}
		if len(ep.ratios) > 0 {
			ratios := slices.Clone(ep.ratios)
			sort.Float64s(ratios)
			e.AutoscalerRatio = quantile(ratios, 0.5)
			errs := make([]float64, len(ratios))
			for i, x := range ratios {
				errs[i] = 100 * math.Abs(x-1)
			}
			sort.Float64s(errs)
			e.AutoscalerErrorPct = quantile(errs, 0.5)
		}
		epGPUHours += e.GPUHours
		metMinutes += ep.within
		res.Endpoints = append(res.Endpoints, e)
		if e.AttainmentPct < TargetAttainmentPct {
			res.Misses = append(res.Misses, fmt.Sprintf("endpoint %s: SLO attained in %.2f%% of minutes", e.Name, e.AttainmentPct))
		}
	}
	for _, p := range w.Promised.Partitions {
		pr := PartitionResult{Name: p.Name, Tier: p.Tier, ViolationMinutes: r.violations[p.Name], FirstViolation: r.firstViolation[p.Name]}
		for _, g := range p.Guarantees {
			pr.GuaranteedGPUs += g.GPUs
		}
		res.Partitions = append(res.Partitions, pr)
		if pr.ViolationMinutes > 0 {
			res.Misses = append(res.Misses, fmt.Sprintf("partition %s: %d minutes below its guarantee with work waiting", p.Name, pr.ViolationMinutes))
		}
	}
	if metMinutes > 0 {
		res.GPUHoursPerSLOMinute = epGPUHours / float64(metMinutes)
	}
	r.reservations(res)
	r.queueing(res)
	r.training(res)
	for _, t := range w.Promised.Tenants {
		res.Tenants = append(res.Tenants, TenantUse{Tenant: t.Name, GPUHours: rec.gpuSeconds[t.Name] / 3600,
			USD: price.Cents(rec.meter().usd[t.Name])})
	}
	res.Meets = len(res.Misses) == 0
	core := strategy.Apply(&sched.Snapshot{Fleet: w.Fleet, Tenancy: w.Tenancy}, w.Start).Tenancy
	for _, p := range core.Overpromises(w.Fleet, w.Start) {
		res.Warnings = append(res.Warnings, "the tenancy promises more GPUs than a pool has: "+p.String())
	}
	return res
}

func (r *run) reservations(res *Result) {
	onTime, n := 0, 0
	for _, id := range r.rec.order {
		name := r.rec.reserve[id]
		if name == "" {
			continue
		}
		j := r.rec.submitted[id]
		rr := ReservationResult{Name: name, Owner: j.Spec.Tenant, Opens: j.Status.SubmittedAt.Format(time.RFC3339), WaitMin: -1}
		if s, ok := r.rec.firstStart[id]; ok {
			wait := s.Sub(j.Status.SubmittedAt)
			rr.WaitMin = wait.Minutes()
			rr.OnTime = wait <= time.Duration(r.f.OnTime)
		}
		n++
		if rr.OnTime {
			onTime++
		} else {
			res.Misses = append(res.Misses, fmt.Sprintf("reservation %s: its work did not start within %s of the opening", name, time.Duration(r.f.OnTime)))
		}
		res.Reservations = append(res.Reservations, rr)
	}
	res.ReservationsOnTimePct = 100
	if n > 0 {
		res.ReservationsOnTimePct = 100 * float64(onTime) / float64(n)
	}
}

func (r *run) queueing(res *Result) {
	byTier := map[string][]float64{}
	never := map[string]int{}
	end := r.w.End
	for _, id := range r.rec.order {
		j := r.rec.submitted[id]
		tier := r.rec.tier[j.Spec.Tenant]
		wait := end.Sub(j.Status.SubmittedAt)
		if s, ok := r.rec.firstStart[id]; ok {
			wait = s.Sub(j.Status.SubmittedAt)
		} else {
			never[tier]++
		}
		byTier[tier] = append(byTier[tier], wait.Seconds())
		res.QueueDelays = append(res.QueueDelays, wait.Seconds())
	}
	for _, t := range r.tiers() {
		d := byTier[t]
		sort.Float64s(d)
		res.Tiers = append(res.Tiers, TierResult{Tier: t, Jobs: len(d), NeverRan: never[t], MeanMinutes: mean(d) / 60,
			P50Minutes: quantile(d, 0.5) / 60, P95Minutes: quantile(d, 0.95) / 60, P99Minutes: quantile(d, 0.99) / 60})
	}
}

// training measures the training jobs: queueing, completion time, and the
// work done and kept (that of jobs still live counted to now).
func (r *run) training(res *Result) {
	t := &res.Training
	end := r.w.End
	var waits, jcts []float64
	goodput := r.rec.goodput
	for _, id := range r.rec.order {
		if !r.rec.training[id] {
			continue
		}
		j := r.rec.submitted[id]
		t.Jobs++
		wait := end.Sub(j.Status.SubmittedAt)
		if s, ok := r.rec.firstStart[id]; ok {
			wait = s.Sub(j.Status.SubmittedAt)
		}
		waits = append(waits, wait.Seconds())
		done := end
		if e, ok := r.rec.ended[id]; ok {
			t.Completed++
			done = e
		} else if d, w, ok := r.eng.Progress(id); ok && w > 0 {
			goodput += r.rec.work[id] * d.Seconds() / w.Seconds()
		}
		jcts = append(jcts, done.Sub(j.Status.SubmittedAt).Hours())
	}
	sort.Float64s(waits)
	t.MeanQueueMin = mean(waits) / 60
	t.MedianQueueMin = quantile(waits, 0.5) / 60
	t.P95QueueMin = quantile(waits, 0.95) / 60
	t.MeanJCTHours = mean(jcts)
	t.GoodputGPUHours = goodput / 3600
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// ReportRun is the result as the report package shows it.
func (res *Result) ReportRun(w *World) report.Run {
	name := res.Strategy
	if res.Policies {
		name += " + policies"
	}
	if res.Variant != "" {
		name += " (" + res.Variant + ")"
	}
	run := report.Run{Name: name, Utilisation: res.HourlyUtilisation, SampleHours: 1, QueueDelays: res.QueueDelays}
	for _, e := range res.Endpoints {
		run.Endpoints = append(run.Endpoints, report.EndpointSeries{Name: e.Name, SLOMs: e.SLOMs, Metric: e.Metric, P95Ms: e.P95Ms})
	}
	hours := w.End.Sub(w.Start).Hours()
	for _, p := range w.Promised.Partitions {
		t := report.Tenant{Name: p.Name}
		for _, g := range p.Guarantees {
			t.Guaranteed += float64(g.GPUs)
		}
		for _, tu := range res.Tenants {
			if tn, ok := w.Promised.Tenant(tu.Tenant); ok && tn.Partition == p.Name && hours > 0 {
				t.AvgUsed += tu.GPUHours / hours
			}
		}
		run.Tenants = append(run.Tenants, t)
	}
	add := func(k, v string) { run.Figures = append(run.Figures, [2]string{k, v}) }
	add("fleet", fmt.Sprintf("%d GPUs (factor %g)", res.GPUs, res.FleetFactor))
	for _, e := range res.Endpoints {
		add("SLO attainment "+e.Name, fmt.Sprintf("%.2f %%", e.AttainmentPct))
	}
	for _, p := range res.Partitions {
		add("guarantee violation minutes "+p.Name, fmt.Sprint(p.ViolationMinutes))
	}
	add("reservations on time", fmt.Sprintf("%.0f %%", res.ReservationsOnTimePct))
	add("spot GPU-hours run / lost", fmt.Sprintf("%.0f / %.0f", res.SpotGPUHours, res.SpotLostGPUHours))
	for _, t := range res.Tiers {
		add("queueing mean/p50/p95 "+t.Tier, fmt.Sprintf("%.1f / %.1f / %.1f min", t.MeanMinutes, t.P50Minutes, t.P95Minutes))
	}
	add("training mean queueing / JCT", fmt.Sprintf("%.1f min / %.1f h", res.Training.MeanQueueMin, res.Training.MeanJCTHours))
	add("training goodput", fmt.Sprintf("%.0f GPU-h", res.Training.GoodputGPUHours))
	add("GPU utilisation", fmt.Sprintf("%.1f %%", res.UtilisationPct))
	for _, tu := range res.Tenants {
		add("cost "+tu.Tenant, fmt.Sprintf("$%.0f", tu.USD))
	}
	add("meets targets", fmt.Sprint(res.Meets))
	return run
}

// tiers lists every tier of the promised tenancy, sorted, so that every
// run reports the same rows.
func (r *run) tiers() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range r.rec.tier {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}
