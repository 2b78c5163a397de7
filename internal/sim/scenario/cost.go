package scenario

import (
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
)

// costMeter prices the run's work as the server bills it (package price,
// docs/cost.md): each attempt at the rate fixed when it starts, reserved
// inside a reservation, spot for spot-like work, on-demand otherwise, times
// the share of each node it holds.
type costMeter struct {
	w     *World
	table *price.Table
	nodes map[string]model.Node
	gpus  map[string]float64 // region → GPUs
	rate  map[string]float64 // tenant → USD per hour of the attempts it holds
	usd   map[string]float64 // tenant → USD accrued
}

func newCostMeter(w *World) *costMeter {
	m := &costMeter{w: w, table: price.NewTable(w.Fleet), nodes: map[string]model.Node{}, gpus: map[string]float64{},
		rate: map[string]float64{}, usd: map[string]float64{}}
	for _, n := range w.Fleet.Nodes {
		m.nodes[n.Name] = n
		m.gpus[n.Region] += float64(w.Fleet.Catalog[n.SKU].GPUs)
	}
	return m
}

// started is the USD per hour of j's attempt that starts now: spot at the
// utilisation of each region by the other work holding capacity (held,
// GPUs per region, j not among them). The caller adds it to rate.
func (m *costMeter) started(j *model.Job, spotLike bool, held map[string]float64) float64 {
	var term time.Duration
	for _, r := range m.w.Tenancy.Reservations {
		if r.Name == j.Spec.Placement.Reservation && !r.Start.IsZero() && !r.End.IsZero() {
			term = r.End.Sub(r.Start)
		}
	}
	kind := price.KindOf(&j.Spec, term)
	if spotLike && kind == price.OnDemand {
		kind = price.Spot // the hybrid strategy's overflow runs as spot
	}
	rate := 0.0
	for _, a := range j.Status.Allocations {
		n := m.nodes[a.Node]
		r, ok := m.table.Rates(n.SKU, n.Region)
		sku := m.w.Fleet.Catalog[n.SKU]
		if !ok || sku.GPUs == 0 {
			continue
		}
		u := 0.0
		if m.gpus[n.Region] > 0 {
			u = max(held[n.Region], 0) / m.gpus[n.Region]
		}
		share := float64(int64(len(a.GPUs))*a.GPUMilli) / float64(int64(sku.GPUs)*model.MilliPerGPU)
		rate += r.Of(kind, u) * share
	}
	return rate
}

// advance accrues dt of the held attempts' rates to their tenants.
func (m *costMeter) advance(dt time.Duration) {
	for t, rate := range m.rate {
		if rate > 0 {
			m.usd[t] += price.Cost(rate, dt)
		}
	}
}
