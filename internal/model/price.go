package model

import (
	"fmt"
	"math"
)

// Price is what one SKU costs in one region, in USD per node-hour, when
// the fleet file sets it (prices:); an SKU and region without one sell at
// the catalog's rates (package price turns both into one table).
type Price struct {
	SKU        string
	Region     string
	OnDemand   float64 // pay as you go
	Reserved1Y float64 // inside a reservation of up to three years
	Reserved3Y float64 // inside a reservation of three years or more
	SpotFloor  float64 // spot's price in an idle region; it rises with use
}

// validPrice reports whether x is a price: finite and not negative.
func validPrice(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// validatePrices checks f.Prices: each names a known SKU and region once,
// and its rates are finite, not negative, with the spot floor at most the
// on-demand price (spot never costs more than on-demand).
func (f *Fleet) validatePrices() error {
	seen := map[[2]string]bool{}
	for i, p := range f.Prices {
		fp := fmt.Sprintf("prices[%d]", i)
		if _, ok := f.Catalog[p.SKU]; !ok {
			return fieldErr(fp+".sku", "unknown SKU %q%s", p.SKU, DidYouMean(p.SKU, f.Catalog.Names()))
		}
		if _, ok := f.Region(p.Region); !ok {
			return fieldErr(fp+".region", "unknown region %q%s", p.Region, DidYouMean(p.Region, f.RegionNames()))
		}
		k := [2]string{p.SKU, p.Region}
		if seen[k] {
			return fieldErr(fp+".region", "the price of %s in %s is set twice", p.SKU, p.Region)
		}
		seen[k] = true
		for _, r := range []struct {
			field string
			v     float64
		}{{"on_demand", p.OnDemand}, {"reserved_1y", p.Reserved1Y}, {"reserved_3y", p.Reserved3Y}, {"spot_floor", p.SpotFloor}} {
			if !validPrice(r.v) {
				return fieldErr(fp+"."+r.field, "must be a price in USD per node-hour (0 or more), got %v", r.v)
			}
		}
		if p.SpotFloor > p.OnDemand {
			return fieldErr(fp+".spot_floor", "%v is above on_demand %v: spot never costs more than on-demand", p.SpotFloor, p.OnDemand)
		}
	}
	return nil
}
