package price

import (
	"fmt"
	"math"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Kind is how work runs, which decides what it pays.
type Kind string

// The ways to run.
const (
	OnDemand   Kind = "on-demand"
	Reserved1Y Kind = "reserved-1y"
	Reserved3Y Kind = "reserved-3y"
	Spot       Kind = "spot"
)

// Kinds lists the kinds in the order reports show them.
var Kinds = []Kind{OnDemand, Reserved1Y, Reserved3Y, Spot}

// ThreeYearFactor is the 3-year reserved rate over the 1-year one when the
// fleet sets none: a three-year commitment takes a further 30 % off.
const ThreeYearFactor = 0.7

// ThreeYears is the least length of a reservation that pays the 3-year
// rate.
const ThreeYears = 3 * 365 * 24 * time.Hour

// Rates are the prices of one SKU in one region, USD per node-hour, and
// what CPU-only work on it pays, USD per vCPU-hour and per GiB-hour.
type Rates struct {
	OnDemand, Reserved1Y, Reserved3Y, SpotFloor float64
	VCPU, GiB                                   float64
}

// The prices of CPU and memory where a SKU sets none, USD per hour. They
// split Azure's pay-as-you-go list price of a general-purpose D2s v5 VM
// (2 vCPU, 8 GiB: $0.096 per hour in East US) in the proportion Google
// Cloud lists for custom N2 machines ($0.031611 per vCPU-hour, $0.004237
// per GiB-hour): 2 × 0.0316 + 8 × 0.0042 = $0.0968 per hour.
const (
	DefaultVCPUPrice   = 0.0316
	DefaultMemoryPrice = 0.0042
)

// resourcePrices are the CPU and memory prices of s, defaults where unset.
func resourcePrices(s model.SKU) (vcpu, gib float64) {
	vcpu, gib = s.VCPUPrice, s.MemoryPrice
	if vcpu == 0 {
		vcpu = DefaultVCPUPrice
	}
	if gib == 0 {
		gib = DefaultMemoryPrice
	}
	return vcpu, gib
}

// SpotAt is the spot price at utilisation u (clamped to [0, 1]):
// floor + (on_demand − floor) × u². A floor at or above on-demand is the
// price whatever u.
func (r Rates) SpotAt(u float64) float64 {
	if math.IsNaN(u) || u < 0 {
		u = 0
	}
	u = min(u, 1)
	if r.SpotFloor >= r.OnDemand {
		return r.SpotFloor
	}
	return r.SpotFloor + (r.OnDemand-r.SpotFloor)*u*u
}

// Of is the price of running as k at utilisation u (which only spot reads).
func (r Rates) Of(k Kind, u float64) float64 {
	switch k {
	case Reserved1Y:
		return r.Reserved1Y
	case Reserved3Y:
		return r.Reserved3Y
	case Spot:
		return r.SpotAt(u)
	}
	return r.OnDemand
}

// Table holds the rates of every SKU in every region of a fleet.
type Table struct {
	catalog  model.Catalog
	regional map[[2]string]Rates // by SKU and region, from the fleet's prices:
}

// NewTable builds the table of fleet f (which has passed Validate).
func NewTable(f *model.Fleet) *Table {
	t := &Table{catalog: f.Catalog, regional: map[[2]string]Rates{}}
	for _, p := range f.Prices {
		vcpu, gib := resourcePrices(f.Catalog[p.SKU])
		t.regional[[2]string{p.SKU, p.Region}] = Rates{OnDemand: p.OnDemand, Reserved1Y: p.Reserved1Y,
			Reserved3Y: p.Reserved3Y, SpotFloor: p.SpotFloor, VCPU: vcpu, GiB: gib}
	}
	return t
}

// CatalogRates are the rates of s wherever the fleet sets none.
func CatalogRates(s model.SKU) Rates {
	vcpu, gib := resourcePrices(s)
	return Rates{OnDemand: s.PricePerHour, Reserved1Y: s.ReservedRate, Reserved3Y: s.ReservedRate * ThreeYearFactor,
		SpotFloor: min(s.SpotPrice, s.PricePerHour), VCPU: vcpu, GiB: gib}
}

// Rates returns the rates of sku in region; ok is false for an unknown SKU.
func (t *Table) Rates(sku, region string) (r Rates, ok bool) {
	if r, ok := t.regional[[2]string{sku, region}]; ok {
		return r, true
	}
	s, ok := t.catalog[sku]
	if !ok {
		return Rates{}, false
	}
	return CatalogRates(s), true
}

// KindOf is how a job runs: inside a reservation (its placement names one;
// term is the reservation's length, zero when unknown) it pays a reserved
// rate, spot-class work the spot price, anything else on-demand.
func KindOf(spec *model.JobSpec, term time.Duration) Kind {
	switch {
	case spec.Placement.Reservation != "" && term >= ThreeYears:
		return Reserved3Y
	case spec.Placement.Reservation != "":
		return Reserved1Y
	case spec.Priority.Class == model.ClassSpot:
		return Spot
	}
	return OnDemand
}

// Share is the part of a node of SKU s one instance of r holds: its GPUs
// over the node's (fractions included), or on a node without GPUs its CPU
// over the node's. It is at most 1.
func Share(s model.SKU, r model.Resources) float64 {
	if s.GPUs > 0 {
		return min(1, float64(r.MilliPerInstance())/float64(int64(s.GPUs)*model.MilliPerGPU))
	}
	if s.CPUMilli() > 0 {
		return min(1, float64(r.CPUMilli)/float64(s.CPUMilli()))
	}
	return 0
}

// InstanceRate is what one instance of r accrues per hour on a node of SKU
// s with rates rt, running as k at utilisation u: the node's rate times
// its share of the node (Share), and on a node with GPUs at least what its
// CPU and memory cost at rt's prices, so that work holding a GPU node's
// CPU or memory without its GPUs is not free.
func InstanceRate(s model.SKU, rt Rates, k Kind, u float64, r model.Resources) float64 {
	rate := rt.Of(k, u) * Share(s, r)
	if s.GPUs > 0 {
		rate = max(rate, ResourceRate(rt, r))
	}
	return rate
}

// ResourceRate is what r's CPU and memory cost per hour at rt's prices.
func ResourceRate(rt Rates, r model.Resources) float64 {
	return float64(r.CPUMilli)/1000*rt.VCPU + float64(r.MemoryMiB)/1024*rt.GiB
}

// Cost is what a rate in USD per hour accrues over d.
func Cost(rate float64, d time.Duration) float64 { return rate * d.Seconds() / 3600 }

// Cents rounds an amount in USD to the cent.
func Cents(usd float64) float64 { return math.Round(usd*100) / 100 }

// Format writes an amount in USD to the cent, e.g. "$1234.50".
func Format(usd float64) string { return fmt.Sprintf("$%.2f", Cents(usd)) }
