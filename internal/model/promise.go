package model

import (
	"fmt"
	"strings"
	"time"
)

// Promise is what a tenancy promises of one pool, the GPUs of one model in
// one region, at one instant, that nobody else may use: the guaranteed GPUs
// its partitions keep even while idle (a guarantee's GPUs beyond its
// lend_limit; none when it lends all) and the reservations active then.
// Guaranteed GPUs that are lent are not counted: others use them while
// idle, and preemption reclaims them from everything but reserved nodes.
//
// A partition's kept guarantee and the reservations of its tenants
// overlap: the reserved work is the partition's use, so it counts towards
// the guarantee, and the partition is promised the larger of the two. A
// reservation of a tenant without a partition, or of one whose partition
// keeps nothing in the pool, is promised in full. When the sum exceeds the
// pool, the core keeps the idle guarantees and the reservations' work waits
// (a job beyond its partition's guarantee only borrows what others do not
// keep). Under the static strategy every guarantee is kept
// (package strategy), so the tenancy to ask is the one the core is given.
type Promise struct {
	Region   string
	GPUModel string
	// At is the instant; zero means before every reservation that has a
	// start.
	At time.Time
	// Have is the pool's GPUs, whatever the nodes' health.
	Have int
	// Kept is the sum of the guaranteed GPUs the partitions do not lend.
	Kept int
	// Reserved is the sum of the GPUs of the reservations active at At,
	// and Reservations their names in tenancy order.
	Reserved     int
	Reservations []string
	// Promised is what must be held at once (see the type's comment):
	// at least the larger of Kept and Reserved, at most their sum.
	Promised int
}

// Over reports whether the pool holds less than is promised.
func (p Promise) Over() bool { return p.Promised > p.Have }

func (p Promise) String() string {
	when := "always"
	if !p.At.IsZero() {
		when = "from " + p.At.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s %s %s: guarantees kept from lending (%d GPUs) and reservations %s (%d GPUs) promise %d at once; the pool has %d",
		p.Region, p.GPUModel, when, p.Kept, strings.Join(p.Reservations, ", "), p.Reserved, p.Promised, p.Have)
}

// PromiseAt is what t promises of the GPUs of gpuModel in region at the
// instant at. t's guarantees must be resolved (Validate).
func (t *Tenancy) PromiseAt(f *Fleet, region, gpuModel string, at time.Time) Promise {
	p := Promise{Region: region, GPUModel: gpuModel, At: at, Have: f.GPUCount(region, gpuModel)}
	kept := map[string]int{} // by partition
	for _, part := range t.Partitions {
		for _, g := range part.Guarantees {
			if g.Region == region && g.GPUModel == gpuModel && g.LendLimit != nil && g.GPUs > *g.LendLimit {
				kept[part.Name] += g.GPUs - *g.LendLimit
				p.Kept += g.GPUs - *g.LendLimit
			}
		}
	}
	reserved := map[string]int{} // by partition, "" for none
	for _, r := range t.Reservations {
		sku, ok := f.Catalog[r.SKU]
		if !ok || r.Region != region || sku.GPUModel != gpuModel || !r.ActiveAt(at) {
			continue
		}
		owner, _ := t.Tenant(r.Owner)
		part := owner.Partition
		if kept[part] == 0 {
			part = ""
		}
		reserved[part] += r.Count * sku.GPUs
		p.Reserved += r.Count * sku.GPUs
		p.Reservations = append(p.Reservations, r.Name)
	}
	p.Promised = reserved[""]
	for part, k := range kept {
		p.Promised += max(k, reserved[part])
	}
	return p
}

// Overpromises lists the pools where t promises more GPUs than f has at
// some instant from `from` on (zero: ever), each at the instant it promises
// most (the earliest of equals), in the fleet's pool order. The promise
// only rises where a reservation starts, so from and those starts are the
// instants looked at.
func (t *Tenancy) Overpromises(f *Fleet, from time.Time) []Promise {
	var out []Promise
	for _, pool := range f.Pools() {
		instants := []time.Time{from}
		for _, r := range t.Reservations {
			if sku, ok := f.Catalog[r.SKU]; ok && r.Region == pool[0] && sku.GPUModel == pool[1] && r.Start.After(from) {
				instants = append(instants, r.Start)
			}
		}
		var worst Promise
		for _, at := range instants {
			p := t.PromiseAt(f, pool[0], pool[1], at)
			if p.Promised-p.Have > worst.Promised-worst.Have || worst.Region == "" ||
				p.Promised-p.Have == worst.Promised-worst.Have && p.At.Before(worst.At) {
				worst = p
			}
		}
		if worst.Over() {
			out = append(out, worst)
		}
	}
	return out
}

// Pools lists the fleet's (region, GPU model) pairs that have GPUs, in
// node order.
func (f *Fleet) Pools() [][2]string {
	seen := map[[2]string]bool{}
	var out [][2]string
	for _, n := range f.Nodes {
		s := f.Catalog[n.SKU]
		if k := [2]string{n.Region, s.GPUModel}; s.GPUs > 0 && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
