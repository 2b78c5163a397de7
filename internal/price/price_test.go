package price

import (
	"math"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

func TestSpotAt(t *testing.T) {
	r := Rates{OnDemand: 10, SpotFloor: 2}
	for _, c := range []struct {
		u, want float64
	}{
		{0, 2}, {0.5, 4}, {0.9, 2 + 8*0.81}, {1, 10}, {-1, 2}, {2, 10}, {math.NaN(), 2},
	} {
		if got := r.SpotAt(c.u); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("SpotAt(%v) = %v, want %v", c.u, got, c.want)
		}
	}
	if got := (Rates{OnDemand: 1, SpotFloor: 3}).SpotAt(0.5); got != 3 {
		t.Errorf("a floor above on-demand: SpotAt = %v, want the floor 3", got)
	}
	// Monotone in u.
	prev := -1.0
	for u := 0.0; u <= 1; u += 0.01 {
		p := r.SpotAt(u)
		if p < prev {
			t.Fatalf("SpotAt falls at u=%v: %v < %v", u, p, prev)
		}
		prev = p
	}
}

func TestTable(t *testing.T) {
	f := &model.Fleet{Catalog: model.BuiltinCatalog(), Prices: []model.Price{
		{SKU: "NC4-T4x1", Region: "eu", OnDemand: 1, Reserved1Y: 0.6, Reserved3Y: 0.4, SpotFloor: 0.2},
	}}
	tb := NewTable(f)
	for _, c := range []struct {
		name, sku, region string
		kind              Kind
		u                 float64
		want              float64
		ok                bool
	}{
		{"regional on-demand", "NC4-T4x1", "eu", OnDemand, 0, 1, true},
		{"regional reserved 3y", "NC4-T4x1", "eu", Reserved3Y, 0, 0.4, true},
		{"regional spot at half use", "NC4-T4x1", "eu", Spot, 0.5, 0.2 + 0.8*0.25, true},
		{"catalog elsewhere", "NC4-T4x1", "us", OnDemand, 0, 0.53, true},
		{"catalog reserved 1y", "NC4-T4x1", "us", Reserved1Y, 0, 0.33, true},
		{"catalog reserved 3y", "NC4-T4x1", "us", Reserved3Y, 0, 0.33 * ThreeYearFactor, true},
		{"catalog spot floor", "NC4-T4x1", "us", Spot, 0, 0.16, true},
		{"unknown SKU", "nope", "us", OnDemand, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, ok := tb.Rates(c.sku, c.region)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if got := r.Of(c.kind, c.u); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("price = %v, want %v", got, c.want)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	spot := model.Priority{Class: model.ClassSpot}
	for _, c := range []struct {
		name string
		spec model.JobSpec
		term time.Duration
		want Kind
	}{
		{"standard", model.JobSpec{Priority: model.Priority{Class: model.ClassStandard}}, 0, OnDemand},
		{"spot", model.JobSpec{Priority: spot}, 0, Spot},
		{"in a reservation of a month", model.JobSpec{Placement: model.Placement{Reservation: "r"}}, 720 * time.Hour, Reserved1Y},
		{"in a reservation of three years", model.JobSpec{Placement: model.Placement{Reservation: "r"}}, ThreeYears, Reserved3Y},
		{"spot inside a reservation pays reserved", model.JobSpec{Priority: spot, Placement: model.Placement{Reservation: "r"}}, 0, Reserved1Y},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := KindOf(&c.spec, c.term); got != c.want {
				t.Errorf("KindOf = %s, want %s", got, c.want)
			}
		})
	}
}

func TestShare(t *testing.T) {
	cat := model.BuiltinCatalog()
	for _, c := range []struct {
		name string
		sku  string
		r    model.Resources
		want float64
	}{
		{"whole node", "ND96-H100x8-IB", model.Resources{GPUsPerInstance: 8}, 1},
		{"two of eight", "ND96-H100x8-IB", model.Resources{GPUsPerInstance: 2}, 0.25},
		{"a quarter GPU of eight", "ND96-H100x8-IB", model.Resources{GPUsPerInstance: 1, GPUMilli: 250}, 1.0 / 32},
		{"CPU only on a GPU node", "ND96-H100x8-IB", model.Resources{CPUMilli: 4000}, 0},
		{"CPU on a node without GPUs", "cpu", model.Resources{CPUMilli: 4000}, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ok := cat[c.sku]
			if !ok {
				s = model.SKU{Name: "cpu", VCPU: 8}
			}
			if got := Share(s, c.r); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("Share = %v, want %v", got, c.want)
			}
		})
	}
}

func TestCostAndCents(t *testing.T) {
	if got := Cost(98.32, 90*time.Second); math.Abs(got-98.32/40) > 1e-12 {
		t.Errorf("Cost = %v", got)
	}
	if got := Format(2.4579); got != "$2.46" {
		t.Errorf("Format = %q", got)
	}
}
