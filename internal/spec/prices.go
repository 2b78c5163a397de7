package spec

import (
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
)

// priceEntry is one entry of a fleet file's prices: what an SKU costs in
// one region, USD per node-hour. A rate left out is the catalog's
// (package price); so an entry may set only on_demand.
type priceEntry struct {
	SKU        string   `yaml:"sku"`
	Region     string   `yaml:"region"`
	OnDemand   *float64 `yaml:"on_demand"`
	Reserved1Y *float64 `yaml:"reserved_1y"`
	Reserved3Y *float64 `yaml:"reserved_3y"`
	SpotFloor  *float64 `yaml:"spot_floor"`
}

// fleetPrices turns the entries into model prices, filling the rates left
// out from the catalog; an entry of an unknown SKU keeps zeros there
// (Fleet.Validate refuses it).
func fleetPrices(cat model.Catalog, entries []priceEntry) []model.Price {
	out := make([]model.Price, 0, len(entries))
	for _, e := range entries {
		var base price.Rates
		if s, ok := cat[e.SKU]; ok {
			base = price.CatalogRates(s)
		}
		pick := func(x *float64, def float64) float64 {
			if x != nil {
				return *x
			}
			return def
		}
		out = append(out, model.Price{SKU: e.SKU, Region: e.Region,
			OnDemand: pick(e.OnDemand, base.OnDemand), Reserved1Y: pick(e.Reserved1Y, base.Reserved1Y),
			Reserved3Y: pick(e.Reserved3Y, base.Reserved3Y), SpotFloor: pick(e.SpotFloor, base.SpotFloor)})
	}
	return out
}
