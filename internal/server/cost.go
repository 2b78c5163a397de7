package server

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
)

// Cost groups: by tenant and job as Accounting does, and by region or SKU
// of the nodes the work ran on.
const (
	ByRegion = "region"
	BySKU    = "sku"
)

// CostQuery selects the period and jobs of a cost report: what the jobs of
// Tenant (all p may see when empty) accrued within [Since, Until), grouped
// By tenant, region, sku or job.
type CostQuery struct {
	Tenant       string
	Since, Until time.Time
	By           string
}

// CostRow is what one group accrued: USD in all and by how the work ran
// (price.Kind), the GPU-hours behind it, and how many attempts ran in the
// period.
type CostRow struct {
	Tenant, Region, SKU string // by tenant (and job), region, sku
	Job, Name           string // by job
	Attempts            int
	GPUHours            float64
	CPUHours            float64 // vCPU-hours the work asked for
	USD                 float64
	ByKind              map[price.Kind]float64
}

// regionUse is the share of each region's GPUs that jobs hold: the GPUs of
// their allocations over the region's GPUs in the fleet, 0 to 1. Jobs in
// gone no longer hold theirs.
func regionUse(w *world, holding []*model.Job, gone map[string]bool) map[string]float64 {
	total := map[string]float64{}
	for _, n := range w.fleet.Nodes {
		total[n.Region] += float64(w.fleet.Catalog[n.SKU].GPUs)
	}
	held := map[string]float64{}
	for _, j := range holding {
		if gone[j.ID] {
			continue
		}
		for _, a := range j.Status.Allocations {
			if n, ok := w.nodes[a.Node]; ok {
				held[n.Region] += float64(int64(len(a.GPUs))*a.GPUMilli) / model.MilliPerGPU
			}
		}
	}
	use := map[string]float64{}
	for r, t := range total {
		if t > 0 {
			use[r] = min(1, held[r]/t)
		}
	}
	return use
}

// reservationTerm is the length of the reservation named name, zero when
// it is unknown or open-ended.
func reservationTerm(w *world, name string) time.Duration {
	for _, r := range w.tenancy.Reservations {
		if r.Name == name && !r.Start.IsZero() && !r.End.IsZero() {
			return r.End.Sub(r.Start)
		}
	}
	return 0
}

// priceAttempt fixes the price of j's newest attempt as it starts: how it
// runs (price.KindOf) and each instance's rate, the node's price in its
// region at the region's utilisation use times the instance's share of
// the node.
func priceAttempt(j *model.Job, w *world, tb *price.Table, use map[string]float64) {
	n := len(j.Status.Attempts)
	if n == 0 {
		return
	}
	a := &j.Status.Attempts[n-1]
	kind := price.KindOf(&j.Spec, reservationTerm(w, j.Spec.Placement.Reservation))
	a.Pricing, a.Rates = string(kind), instanceRates(j, a, w, tb, kind, use)
}

// instanceRates prices each instance of attempt a of j as kind; an
// instance on a node the fleet no longer has accrues nothing.
func instanceRates(j *model.Job, a *model.Attempt, w *world, tb *price.Table, kind price.Kind, use map[string]float64) []float64 {
	rates := make([]float64, len(a.Nodes))
	for i, name := range a.Nodes {
		node, ok := w.nodes[name]
		if !ok {
			continue
		}
		r, ok := tb.Rates(node.SKU, node.Region)
		if !ok {
			continue
		}
		rates[i] = price.InstanceRate(w.fleet.Catalog[node.SKU], r, kind, use[node.Region], j.Spec.Resources)
	}
	return rates
}

// attemptRates returns what each instance of a accrues per hour and how
// it runs: as recorded when it started, or for an attempt recorded before
// prices were, at today's table with spot at its floor.
func attemptRates(j *model.Job, a *model.Attempt, w *world, tb *price.Table) ([]float64, price.Kind) {
	if a.Pricing != "" && len(a.Rates) == len(a.Nodes) {
		return a.Rates, price.Kind(a.Pricing)
	}
	kind := price.KindOf(&j.Spec, reservationTerm(w, j.Spec.Placement.Reservation))
	return instanceRates(j, a, w, tb, kind, nil), kind
}

// Cost reports what the jobs p may see accrued over q's period, from the
// job records: for every attempt, the part of its run inside the period
// times each instance's rate; by tenant, region or SKU with the roll-ups of
// jobs deleted past the retention, for the days the period covers whole.
// Rows come largest first. It reads every job record once.
func (s *Server) Cost(ctx context.Context, p Principal, q CostQuery) ([]CostRow, error) {
	if q.Tenant != "" && !p.Sees(q.Tenant) {
		return nil, refuse(CodeForbidden, "tenant", "a tenant token sees only its own cost")
	}
	switch q.By {
	case ByTenant, ByJob, ByRegion, BySKU:
	default:
		return nil, refuse(CodeInvalidSpec, "by", "%q: want tenant, region, sku or job", q.By)
	}
	if !q.Until.After(q.Since) || q.Until.Sub(q.Since) > MaxAccountingPeriod {
		return nil, refuse(CodeInvalidSpec, "since", "the period %s to %s is empty or longer than %v",
			q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339), MaxAccountingPeriod)
	}
	rows, err := s.costRows(ctx, q, func(tenant string) bool {
		return p.Sees(tenant) && (q.Tenant == "" || tenant == q.Tenant)
	})
	if err != nil {
		return nil, err
	}
	out := make([]CostRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].USD != out[b].USD {
			return out[a].USD > out[b].USD
		}
		x, y := out[a], out[b]
		return x.Tenant+"\x00"+x.Region+"\x00"+x.SKU+"\x00"+x.Job < y.Tenant+"\x00"+y.Region+"\x00"+y.SKU+"\x00"+y.Job
	})
	return out, nil
}

// costRows adds up the cost of the jobs of the tenants keep accepts, by
// q.By, over q's period.
func (s *Server) costRows(ctx context.Context, q CostQuery, keep func(tenant string) bool) (map[string]*CostRow, error) {
	kvs, _, err := s.st.List(ctx, prefixJobs)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	w := s.world()
	tb := price.NewTable(w.fleet)
	rows := map[string]*CostRow{}
	for _, kv := range kvs {
		j, err := decodeJob(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", kv.Key, err)
		}
		if !keep(j.Spec.Tenant) {
			continue
		}
		gpus := float64(j.Spec.Resources.MilliPerInstance()) / model.MilliPerGPU
		cpus := float64(j.Spec.Resources.CPUMilli) / 1000
		for i := range j.Status.Attempts {
			a := &j.Status.Attempts[i]
			from, to, ok := attemptSpan(j, i, q.Since, q.Until)
			if !ok {
				continue
			}
			rates, kind := attemptRates(j, a, w, tb)
			counted := map[string]bool{}
			for k, name := range a.Nodes {
				node := w.nodes[name]
				r := costRow(rows, q.By, j.Spec.Tenant, j.ID, j.Spec.Name, node.Region, node.SKU)
				if !counted[r.key()] {
					counted[r.key()] = true
					r.Attempts++
				}
				usd := price.Cost(rates[k], to.Sub(from))
				r.USD += usd
				r.ByKind[kind] += usd
				r.GPUHours += gpus * to.Sub(from).Hours()
				r.CPUHours += cpus * to.Sub(from).Hours()
			}
		}
	}
	if q.By == ByJob {
		return rows, nil // deleted jobs are not listed (RetentionWarning)
	}
	err = s.usageDays(ctx, q.Since, q.Until, keep, func(tenant string, u usageRow) {
		r := costRow(rows, q.By, tenant, "", "", u.Region, u.SKU)
		r.Attempts += u.Attempts
		r.USD += u.USD
		r.ByKind[price.Kind(u.Kind)] += u.USD
		r.GPUHours += u.GPUHours
		r.CPUHours += u.CPUHours
	})
	return rows, err
}

func (r *CostRow) key() string { return r.Tenant + "\x00" + r.Region + "\x00" + r.SKU + "\x00" + r.Job }

// costRow returns the row of rows that work of tenant's job (ID and name)
// in region on sku falls in by by, adding it when new.
func costRow(rows map[string]*CostRow, by, tenant, job, name, region, sku string) *CostRow {
	r := CostRow{}
	switch by {
	case ByTenant:
		r.Tenant = tenant
	case ByJob:
		r.Tenant, r.Job, r.Name = tenant, job, name
	case ByRegion:
		r.Region = region
	case BySKU:
		r.SKU = sku
	}
	if have, ok := rows[r.key()]; ok {
		return have
	}
	r.ByKind = map[price.Kind]float64{}
	rows[r.key()] = &r
	return &r
}

// attemptPricer returns what prices the attempts a cycle starts: at the
// utilisation of each region as the cycle found it (before its binds), so
// every job bound in one cycle sees the same spot price. The table and the
// utilisation are made at the first bind: a cycle that binds nothing pays
// nothing for them.
func attemptPricer(w *world, holding []*model.Job, gone map[string]bool) func(*model.Job) {
	var tb *price.Table
	var use map[string]float64
	return func(j *model.Job) {
		if tb == nil {
			tb, use = price.NewTable(w.fleet), regionUse(w, holding, gone)
		}
		priceAttempt(j, w, tb, use)
	}
}

// priceOffers sets each offer's prices in its region now: on-demand, and
// spot at the region's utilisation by the jobs holding capacity.
func (s *Server) priceOffers(w *world, offers []SKUOffer) {
	tb, use := price.NewTable(w.fleet), regionUse(w, s.cache.holding(), nil)
	for i := range offers {
		o := &offers[i]
		if r, ok := tb.Rates(o.SKU.Name, o.Region); ok {
			o.OnDemand, o.Spot = r.OnDemand, r.SpotAt(use[o.Region])
		}
	}
}

// packRates is how an attempt's rates are stored: one value when every
// instance pays the same (a gang of thousands on one SKU stores one
// number, not thousands), else one per instance.
func packRates(r []float64) []float64 {
	for _, x := range r {
		if x != r[0] {
			return r
		}
	}
	if len(r) > 1 {
		return r[:1:1]
	}
	return r
}

// unpackRates reverses packRates for an attempt of n instances.
func unpackRates(r []float64, n int) []float64 {
	if len(r) != 1 || n <= 1 {
		return r
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = r[0]
	}
	return out
}
