package model

import (
	"strings"
	"testing"
	"time"
)

func TestOverpromises(t *testing.T) {
	t0 := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	hour := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	// Pool r/H100: 4 nodes of 8 GPUs = 32 GPUs; pool r/T4: 2 nodes of 4.
	f := &Fleet{Catalog: BuiltinCatalog(), Regions: []Region{{Name: "r", Residency: "us", Clusters: []Cluster{{Name: "c", Fabric: FabricInfiniBand}}}}}
	for i, sku := range []string{"ND96-H100x8-IB", "ND96-H100x8-IB", "ND96-H100x8-IB", "ND96-H100x8-IB", "NC64-T4x4", "NC64-T4x4"} {
		f.Nodes = append(f.Nodes, Node{Name: string(rune('a' + i)), SKU: sku, Region: "r", Cluster: "c", Health: NodeReady})
	}
	tenancy := func(rs ...Reservation) *Tenancy {
		return &Tenancy{
			Partitions: []Partition{
				// ai keeps 16 of its 24 H100 GPUs from lending; cust keeps all.
				{Name: "ai", Guarantees: []Guarantee{{Region: "r", GPUModel: "H100", GPUs: 24, LendLimit: ptr(8)}}},
				{Name: "cust", Guarantees: []Guarantee{{Region: "r", GPUModel: "H100", GPUs: 8, LendLimit: ptr(0)}, {Region: "r", GPUModel: "T4", GPUs: 4, LendLimit: ptr(0)}}},
				// lender lends all it is guaranteed: it keeps nothing.
				{Name: "lender", Guarantees: []Guarantee{{Region: "r", GPUModel: "T4", GPUs: 4}}},
				{Name: "elastic"},
			},
			Tenants: []Tenant{{Name: "a", Partition: "ai"}, {Name: "c", Partition: "cust"}, {Name: "e", Partition: "elastic"}, {Name: "free"},
				{Name: "l", Partition: "lender"}},
			Reservations: rs,
		}
	}
	h100 := func(name, owner string, count, from, to int) Reservation {
		return Reservation{Name: name, Owner: owner, SKU: "ND96-H100x8-IB", Region: "r", Count: count, Start: hour(from), End: hour(to)}
	}
	for _, tc := range []struct {
		name string
		ten  *Tenancy
		from time.Time
		want []string // Promise.String of each over-promised pool
	}{
		{name: "guarantees alone fit", ten: tenancy()},
		{name: "a reservation inside its partition's guarantee", ten: tenancy(h100("mine", "c", 1, 0, 10))},
		{name: "a reservation beyond the guarantees' room, by a partition without one",
			ten:  tenancy(h100("big", "e", 2, 5, 10)),
			want: []string{"r H100 from 2027-03-01T05:00:00Z: guarantees kept from lending (24 GPUs) and reservations big (16 GPUs) promise 40 at once; the pool has 32"}},
		{name: "a tenant without a partition", ten: tenancy(h100("x", "free", 2, 0, 10)),
			want: []string{"r H100 from 2027-03-01T00:00:00Z: guarantees kept from lending (24 GPUs) and reservations x (16 GPUs) promise 40 at once; the pool has 32"}},
		{name: "the owner's partition counts the larger of its guarantee and its reservations",
			ten: tenancy(h100("c1", "c", 1, 0, 10), h100("c2", "c", 1, 0, 10))}, // 16 ai + max(8, 16) = 32
		{name: "one more node is too many", ten: tenancy(h100("c1", "c", 2, 0, 10), h100("c2", "c", 1, 0, 10)),
			want: []string{"r H100 from 2027-03-01T00:00:00Z: guarantees kept from lending (24 GPUs) and reservations c1, c2 (24 GPUs) promise 40 at once; the pool has 32"}},
		{name: "reservations that do not overlap in time", ten: tenancy(h100("early", "e", 1, 0, 5), h100("late", "e", 1, 5, 10))},
		{name: "the worst instant is reported", ten: tenancy(h100("early", "e", 1, 0, 10), h100("late", "e", 1, 5, 10), h100("later", "free", 1, 6, 10)),
			want: []string{"r H100 from 2027-03-01T06:00:00Z: guarantees kept from lending (24 GPUs) and reservations early, late, later (24 GPUs) promise 48 at once; the pool has 32"}},
		// From 0 h on, 24 + 16 + 8 GPUs are promised; from 7 h on, 24 + 8.
		{name: "only what is promised from a time on", from: hour(7), ten: tenancy(h100("early", "e", 2, 0, 6), h100("now", "e", 1, 0, 10))},
		{name: "from a time on, and over", from: hour(7), ten: tenancy(h100("early", "e", 2, 0, 6), h100("now", "e", 2, 0, 10)),
			want: []string{"r H100 from 2027-03-01T07:00:00Z: guarantees kept from lending (24 GPUs) and reservations now (16 GPUs) promise 40 at once; the pool has 32"}},
		{name: "guarantees that are lent are not kept", // T4: cust keeps 4, lender 0; 4 more reserved of 8
			ten: tenancy(Reservation{Name: "t4", Owner: "l", SKU: "NC64-T4x4", Region: "r", Count: 1})},
		{name: "an open-ended reservation filling a pool exactly", // 4 kept + 4 reserved of 8
			ten: tenancy(Reservation{Name: "open", Owner: "e", SKU: "NC64-T4x4", Region: "r", Count: 1})},
		{name: "another model's pool is its own, an open-ended reservation there always",
			ten:  tenancy(Reservation{Name: "t4", Owner: "e", SKU: "NC64-T4x4", Region: "r", Count: 2}),
			want: []string{"r T4 always: guarantees kept from lending (4 GPUs) and reservations t4 (8 GPUs) promise 12 at once; the pool has 8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range tc.ten.Overpromises(f, tc.from) {
				if !p.Over() {
					t.Errorf("listed a pool that holds its promise: %v", p)
				}
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func ptr(n int) *int { return &n }

func TestPromiseAt(t *testing.T) {
	f := &Fleet{Catalog: BuiltinCatalog(), Regions: []Region{{Name: "r"}},
		Nodes: []Node{{Name: "n", SKU: "ND96-H100x8-IB", Region: "r"}, {Name: "m", SKU: "NC40-H100x1", Region: "r"}}}
	ten := &Tenancy{Partitions: []Partition{{Name: "p", Guarantees: []Guarantee{{Region: "r", GPUModel: "H100", GPUs: 4, LendLimit: ptr(0)}}}},
		Tenants:      []Tenant{{Name: "a", Partition: "p"}},
		Reservations: []Reservation{{Name: "one", Owner: "a", SKU: "NC40-H100x1", Region: "r", Count: 1}}}
	p := ten.PromiseAt(f, "r", "H100", time.Time{})
	if p.Have != 9 || p.Kept != 4 || p.Reserved != 1 || p.Promised != 4 || p.Over() {
		t.Fatalf("got %+v: want 9 GPUs (two SKUs of one model), 4 kept, 1 reserved inside the guarantee, 4 promised", p)
	}
}
