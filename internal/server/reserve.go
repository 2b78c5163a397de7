package server

import (
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/strategy"
)

// checkReserveLimits refuses a tenant's own reservation r that would pass
// the tenant's reservation limits (model.ReserveLimits) or its quota, given
// the reservations that exist. Administrators are not checked: they sell
// capacity, tenants buy it.
//
// The rules, all evaluated over the time r holds capacity:
//   - the tenant may reserve at all (tenants file: reservation.max_count);
//   - r has an end, and lasts at most reservation.max_duration from its
//     start (from now, when it starts in the past);
//   - at any instant, the nodes of the tenant's reservations that overlap
//     r, plus r's, are at most max_count;
//   - where the tenant has a quota on the SKU's series in r's region, the
//     GPUs of those reservations plus r's stay within it;
//   - at any instant, the reservations of r's SKU and region that overlap
//     r, whoever owns them, plus r, hold at most the nodes of that SKU the
//     region has: a tenant cannot buy nodes already sold;
//   - at any instant, the guaranteed GPUs that partitions keep from
//     lending (under the strategy in force) and the reservations of r's
//     pool (its GPU model in its region), plus r, promise at most the GPUs
//     the pool has (model.Promise): a tenant cannot buy what partitions
//     keep for themselves.
func checkReserveLimits(w *world, r model.Reservation, now time.Time) error {
	t, _ := w.tenancy.Tenant(r.Owner)
	lim := t.Reserve
	if lim.MaxCount == 0 {
		return refuse(CodeForbidden, "owner", "tenant %q may not reserve capacity itself (its reservation.max_count is 0 in the tenants file); ask an administrator", r.Owner)
	}
	if r.End.IsZero() {
		return refuse(CodeInvalidSpec, "end", "must be set: a tenant's reservation lasts at most %s", lim.MaxDuration)
	}
	start := laterOf(r.Start, now)
	if !r.End.After(start) {
		return refuse(CodeInvalidSpec, "end", "must be in the future")
	}
	if d := r.End.Sub(start); d > lim.MaxDuration {
		return refuse(CodeQuotaExceeded, "end", "the reservation would last %s; tenant %q may reserve for at most %s (reservation.max_duration)",
			d.Round(time.Second), r.Owner, lim.MaxDuration)
	}
	sku := w.fleet.Catalog[r.SKU]
	var overlapping []model.Reservation
	for _, x := range w.tenancy.Reservations {
		if x.Owner == r.Owner && overlaps(x, model.Reservation{Start: start, End: r.End}) {
			overlapping = append(overlapping, x)
		}
	}
	nodes := peak(overlapping, start, r.End, func(model.Reservation) int { return 1 })
	if nodes+r.Count > lim.MaxCount {
		return refuse(CodeQuotaExceeded, "count", "tenant %q would hold %d reserved nodes at once (%d already, %d asked); its reservation.max_count is %d",
			r.Owner, nodes+r.Count, nodes, r.Count, lim.MaxCount)
	}
	if err := checkNodesLeft(w, r, start); err != nil {
		return err
	}
	if p, over := promiseWith(w, r, start); over {
		// Figures only: other tenants' reservations are not the tenant's
		// to see (Principal.sees).
		when := "from " + p.At.UTC().Format(time.RFC3339)
		return refuse(CodeConflict, "count", "the GPUs asked are promised to others: %s %s %s: partitions keep %d GPUs from lending and reservations, this one's %d included, hold %d; %d promised at once, the pool has %d",
			p.Region, p.GPUModel, when, p.Kept, r.Count*w.fleet.Catalog[r.SKU].GPUs, p.Reserved, p.Promised, p.Have)
	}
	for _, q := range w.tenancy.Quotas {
		if q.Tenant != r.Owner || q.Region != r.Region || q.Series != sku.Series {
			continue
		}
		same := func(x model.Reservation) int {
			if x.Region != r.Region || w.fleet.Catalog[x.SKU].Series != sku.Series {
				return 0
			}
			return w.fleet.Catalog[x.SKU].GPUs
		}
		held := peak(overlapping, start, r.End, same)
		if want := held + r.Count*sku.GPUs; want > q.GPUs {
			return refuse(CodeQuotaExceeded, "count", "tenant %q would hold %d reserved %s-series GPUs in %s (%d already, %d asked); its quota there is %d",
				r.Owner, want, sku.Series, r.Region, held, r.Count*sku.GPUs, q.GPUs)
		}
	}
	return nil
}

// checkNodesLeft refuses r when the reservations of its SKU and region that
// overlap [start, r.End), plus r, would hold more nodes at some instant
// than the region has of the SKU.
func checkNodesLeft(w *world, r model.Reservation, start time.Time) error {
	have := w.fleet.NodeCount(r.Region, r.SKU)
	var same []model.Reservation
	for _, x := range w.tenancy.Reservations {
		if x.SKU == r.SKU && x.Region == r.Region && overlaps(x, model.Reservation{Start: start, End: r.End}) {
			same = append(same, x)
		}
	}
	if held := peak(same, start, r.End, func(model.Reservation) int { return 1 }); held+r.Count > have {
		return refuse(CodeConflict, "count", "region %s has %d nodes of %s and reservations overlapping this one already hold up to %d of them; %d asked",
			r.Region, have, r.SKU, held, r.Count)
	}
	return nil
}

// promiseWith is what the tenancy, with r added, promises of r's pool at
// the instant of [start, r.End) where it promises most beyond the pool's
// GPUs, and whether that is more than the pool has. The promise only rises
// where a reservation starts, so start and the starts inside the window are
// the instants looked at.
func promiseWith(w *world, r model.Reservation, start time.Time) (model.Promise, bool) {
	if !r.End.IsZero() && !r.End.After(start) {
		return model.Promise{}, false // over before it is checked
	}
	ten := *w.tenancy
	ten.Reservations = append(slices.Clone(w.tenancy.Reservations), r)
	ten = *coreTenancy(w.fleet, &ten, start)
	gpuModel := w.fleet.Catalog[r.SKU].GPUModel
	worst := ten.PromiseAt(w.fleet, r.Region, gpuModel, start)
	for _, x := range w.tenancy.Reservations {
		if x.Region == r.Region && x.Start.After(start) && (r.End.IsZero() || x.Start.Before(r.End)) &&
			w.fleet.Catalog[x.SKU].GPUModel == gpuModel {
			if p := ten.PromiseAt(w.fleet, r.Region, gpuModel, x.Start); p.Promised > worst.Promised {
				worst = p
			}
		}
	}
	return worst, worst.Over()
}

// coreTenancy is t as the core is given it at now under t's strategy
// (package strategy): under static, say, no guarantee is lent.
func coreTenancy(f *model.Fleet, t *model.Tenancy, now time.Time) *model.Tenancy {
	return strategy.Apply(&sched.Snapshot{Fleet: f, Tenancy: t}, now).Tenancy
}

// laterOf returns the later of two times.
func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// overlaps reports whether two reservations hold capacity at a common
// instant (zero times are open ends).
func overlaps(a, b model.Reservation) bool {
	return (a.End.IsZero() || b.Start.Before(a.End)) && (b.End.IsZero() || a.Start.Before(b.End))
}

// peak is the largest sum over rs of Count × per(r) at any instant of
// [from, to): the sum only rises where a reservation starts, so it is
// enough to look at from and at every start inside the window.
func peak(rs []model.Reservation, from, to time.Time, per func(model.Reservation) int) int {
	points := []time.Time{from}
	for _, x := range rs {
		if x.Start.After(from) && x.Start.Before(to) {
			points = append(points, x.Start)
		}
	}
	best := 0
	for _, p := range points {
		sum := 0
		for _, x := range rs {
			if x.ActiveAt(p) {
				sum += x.Count * per(x)
			}
		}
		best = max(best, sum)
	}
	return best
}
