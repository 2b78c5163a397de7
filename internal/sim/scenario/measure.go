package scenario

import (
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

// checkGuarantees counts a violation minute for every partition with a
// guarantee (as promised, whatever the strategy) that has queued work
// which has waited longer than min_run_time — the time the core may take
// to reclaim lent capacity from protected work — and fits its unused
// guarantee in one pool (GPU model, region, residency, size) and in one
// place of that pool: a cluster (of the fabric the work asks for) whose
// nodes of that model, counting every GPU the partition does not hold
// itself and no other tenant's active reservation holds, have room for
// each of its instances.
func (r *run) checkGuarantees(now time.Time) {
	type key struct{ part, region, model string }
	used := map[key]int64{}
	heldOn := map[string]map[string]int{} // partition → node → GPUs it holds there
	jobs := r.eng.Jobs()
	for _, j := range jobs {
		if !j.Status.State.Holds() {
			continue
		}
		p := r.partOf[j.Spec.Tenant]
		if p == "" {
			continue
		}
		if heldOn[p] == nil {
			heldOn[p] = map[string]int{}
		}
		for _, a := range j.Status.Allocations {
			pool := r.nodePool[a.Node]
			used[key{p, pool[0], pool[1]}] += int64(len(a.GPUs)) * a.GPUMilli
			heldOn[p][a.Node] += len(a.GPUs)
		}
	}
	// Nodes of each region and SKU that active reservations hold, by owner.
	type resKey struct{ region, sku string }
	reserved := map[resKey]map[string]int{}
	for _, res := range r.w.Tenancy.Reservations {
		if res.ActiveAt(now) {
			k := resKey{res.Region, res.SKU}
			if reserved[k] == nil {
				reserved[k] = map[string]int{}
			}
			reserved[k][res.Owner] += res.Count
		}
	}
	type slotKey struct {
		part, cluster, model string
		per                  int
	}
	slots := map[slotKey]int{}
	room := func(p, region, gpu string, j *model.Job) bool {
		per := max(j.Spec.Resources.GPUsPerInstance, 1)
		for _, c := range r.clusters[region] {
			if f := j.Spec.Placement.Interconnect; f != "" && f != c.fabric {
				continue
			}
			k := slotKey{p, c.name, gpu, per}
			n, ok := slots[k]
			if !ok {
				for _, node := range c.nodes {
					if node.model == gpu {
						n += (node.gpus - heldOn[p][node.name]) / per
					}
				}
				slots[k] = n
			}
			// Others' reservations hold whole nodes of their SKU.
			for _, sku := range c.skus {
				for owner, count := range reserved[resKey{region, sku.name}] {
					if r.partOf[owner] != p && sku.model == gpu {
						n -= min(count, sku.nodes) * (sku.gpus / per)
					}
				}
			}
			if n >= max(j.Spec.Resources.InstanceCount, 1) {
				return true
			}
		}
		return false
	}
	grace := time.Duration(r.f.MinRunTime)
	violated := map[string]bool{}
	for _, j := range jobs {
		p := r.partOf[j.Spec.Tenant]
		since, queued := r.rec.queuedAt[j.ID]
		if p == "" || violated[p] || j.Status.State != model.StateQueued || !queued || now.Sub(since) <= grace ||
			j.Spec.Placement.Reservation != "" {
			continue
		}
		part := r.partition(p)
		need := j.Spec.Resources.TotalMilli()
		if need == 0 {
			continue // CPU-only work is outside guarantees
		}
		for _, g := range part.Guarantees {
			free := int64(g.GPUs)*model.MilliPerGPU - used[key{p, g.Region, g.GPUModel}]
			if free >= need && r.mayRun(j, g.Region, g.GPUModel) && room(p, g.Region, g.GPUModel, j) {
				violated[p] = true
				if _, seen := r.firstViolation[p]; !seen {
					r.firstViolation[p] = fmt.Sprintf("%s: %s (%s, %d×%d GPUs) waited %s with %d %s GPUs of the guarantee in %s unused",
						now.Format(time.RFC3339), j.Spec.Name, j.ID, j.Spec.Resources.InstanceCount, j.Spec.Resources.GPUsPerInstance,
						now.Sub(since).Round(time.Minute), free/model.MilliPerGPU, g.GPUModel, g.Region)
				}
				break
			}
		}
	}
	for p := range violated {
		r.violations[p]++
	}
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
	res := &Result{Scenario: r.f.Name, Strategy: string(w.Tenancy.Strategy), Policies: r.opt.Policies != nil,
		FleetFactor: w.Factor, Nodes: len(w.Fleet.Nodes), Cycles: r.eng.Cycles(), PolicyFirings: r.firings,
		PolicyOverrideCycles: r.overridden,
		Preemptions:          rec.preemptions, LostGPUHours: rec.lostSeconds / 3600,
		SpotGPUHours: rec.spotSeconds / 3600, SpotLostGPUHours: rec.spotLost / 3600, RedoneGPUHours: rec.redone / 3600,
		RestartsHome: rec.home, RestartsAway: rec.away}
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
	for _, ep := range r.endpoints {
		e := EndpointResult{Name: ep.spec.Name, Tenant: ep.spec.Tenant, SLOMs: ep.gen.SLOMs, Minutes: ep.minutes,
			PeakReplicas: ep.peakReplicas, WorstP95Ms: math.Round(ep.worstP95 * 1000)}
		if ep.minutes > 0 {
			e.AttainmentPct = 100 * float64(ep.within) / float64(ep.minutes)
		}
		if days > 0 {
			e.RequestsPerDayM = ep.requests / days / 1e6
		}
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
	r.reservations(res)
	r.queueing(res)
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
		res.Tiers = append(res.Tiers, TierResult{Tier: t, Jobs: len(d), NeverRan: never[t],
			P50Minutes: quantile(d, 0.5) / 60, P99Minutes: quantile(d, 0.99) / 60})
	}
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
	run := report.Run{Name: name, Utilisation: res.HourlyUtilisation, SampleHours: 1, QueueDelays: res.QueueDelays}
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
		add("queueing p50/p99 "+t.Tier, fmt.Sprintf("%.1f / %.1f min", t.P50Minutes, t.P99Minutes))
	}
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
