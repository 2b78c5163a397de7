package server

import (
	"context"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
)

// ReservationUse is what a reservation bought against what its owner used
// of it, up to At.
//
// Bought counts the window that has passed: Count × the SKU's GPUs × the
// hours from Start to At (to End once it is over). Used counts the GPU-hours
// of the owner's jobs that name the reservation (placement.reservation),
// the work that runs on its nodes and nowhere else, over the attempts'
// time inside the window. Work lent to spot tenants and the owner's work
// that lands on the nodes without naming the reservation are not counted.
type ReservationUse struct {
	At           time.Time
	GPUs         int           // Count × the SKU's GPUs
	Window       time.Duration // End − Start; 0 when either is open
	Elapsed      time.Duration // of the window, up to At; 0 before the start
	Bought       float64       // GPU-hours bought so far
	BoughtTotal  float64       // GPU-hours of the whole window; 0 when open
	Used         float64       // GPU-hours of the owner's work in it so far
	Jobs         int           // the owner's jobs that ran in it
	OpenStart    bool          // no start: nothing to count Bought from
	OpenEnd      bool          // no end
	UsedPercent  float64       // Used / Bought × 100; 0 when nothing was bought yet
	HasPercent   bool          // UsedPercent is meaningful (Bought > 0)
	StartsIn     time.Duration // until the start, when it lies ahead
	WindowActive bool          // At is inside the window
	// Pricing is the reserved rate the reservation's term buys (work in
	// it pays it; package price) and Rate that rate per GPU-hour, 0 when
	// the price table has none for the SKU: what the bought GPU-hours
	// commit the owner to, used or idle.
	Pricing price.Kind
	Rate    float64
	// Nodes are the nodes the reservation holds (in its window) or keeps
	// for its start (ahead of it), in name order, as this server's last
	// scheduling cycle chose them: none on a server that has not led, or
	// once the window is over.
	Nodes []string
}

// ReservationUse reports the reservation called name as p may see it, with
// what was bought and used of it so far.
func (s *Server) ReservationUse(ctx context.Context, p Principal, name string) (model.Reservation, ReservationUse, error) {
	r, err := s.Reservation(p, name)
	if err != nil {
		return r, ReservationUse{}, err
	}
	jobs, err := s.Jobs(ctx, p, JobFilter{Tenant: r.Owner})
	if err != nil {
		return r, ReservationUse{}, err
	}
	now := s.clock.Now()
	// Jobs deleted past the retention count from the roll-ups of the days
	// the window touches: work that names the reservation runs only in it.
	var deleted usageRow
	until := now
	if !r.End.IsZero() && r.End.Before(until) {
		until = r.End
	}
	owner := func(tenant string) bool { return tenant == r.Owner }
	err = s.usageDays(ctx, r.Start.UTC().Truncate(oneDay), until.UTC().Truncate(oneDay).Add(oneDay), owner, func(_ string, u usageRow) {
		if u.Reservation == r.Name {
			deleted.GPUHours += u.GPUHours
			deleted.Jobs += u.Jobs
		}
	})
	if err != nil {
		return r, ReservationUse{}, err
	}
	w := s.world()
	u := reservationUse(r, w.fleet.Catalog[r.SKU].GPUs, jobs, deleted, now)
	u.Pricing, u.Rate = reservationRate(w, price.NewTable(w.fleet), r)
	if m := s.reserved.Load(); m != nil {
		u.Nodes = slices.Clone((*m)[r.Name])
	}
	return r, u, nil
}

// reservationRate is how work in r is billed (the reserved rate its term
// buys) and that rate per GPU-hour in its region, 0 when the price table
// has none for its SKU.
func reservationRate(w *world, tb *price.Table, r model.Reservation) (price.Kind, float64) {
	term := time.Duration(0)
	if !r.Start.IsZero() && !r.End.IsZero() {
		term = r.End.Sub(r.Start)
	}
	kind := price.KindOf(&model.JobSpec{Placement: model.Placement{Reservation: r.Name}}, term)
	rates, ok := tb.Rates(r.SKU, r.Region)
	if gpus := w.fleet.Catalog[r.SKU].GPUs; ok && gpus > 0 {
		return kind, rates.Of(kind, 0) / float64(gpus)
	}
	return kind, 0
}

// reservationUse works out ReservationUse for r, whose nodes have
// nodeGPUs GPUs each, from the owner's jobs and the roll-up of those
// deleted, at now.
func reservationUse(r model.Reservation, nodeGPUs int, jobs []*model.Job, deleted usageRow, now time.Time) ReservationUse {
	u := ReservationUse{At: now, GPUs: r.Count * nodeGPUs, OpenStart: r.Start.IsZero(), OpenEnd: r.End.IsZero(),
		WindowActive: r.ActiveAt(now)}
	if !u.OpenStart && !u.OpenEnd {
		u.Window = r.End.Sub(r.Start)
		u.BoughtTotal = float64(u.GPUs) * u.Window.Hours()
	}
	if !u.OpenStart && now.Before(r.Start) {
		u.StartsIn = r.Start.Sub(now)
	}
	// The part of the window that has passed: [from, to).
	to := now
	if !u.OpenEnd && r.End.Before(to) {
		to = r.End
	}
	if !u.OpenStart && to.After(r.Start) {
		u.Elapsed = to.Sub(r.Start)
		u.Bought = float64(u.GPUs) * u.Elapsed.Hours()
	}
	from := r.Start // zero when open: every attempt counts from its start
	u.Used, u.Jobs = usedIn(r, jobs, from, to)
	u.Used += deleted.GPUHours
	u.Jobs += deleted.Jobs
	if u.Bought > 0 {
		u.UsedPercent, u.HasPercent = 100*u.Used/u.Bought, true
	}
	return u
}

// usedIn returns the GPU-hours the owner's jobs that name r ran within
// [from, to) (from zero: since they started), and how many jobs ran in
// it. An attempt not ended counts to to.
func usedIn(r model.Reservation, jobs []*model.Job, from, to time.Time) (gpuHours float64, ran int) {
	for _, j := range jobs {
		if j.Spec.Tenant != r.Owner || j.Spec.Placement.Reservation != r.Name {
			continue
		}
		counted := false
		for i, a := range j.Status.Attempts {
			gpus := attemptGPUs(j, i)
			if a.Started.IsZero() {
				continue
			}
			start, end := maxTime(a.Started, from), a.Ended
			if end.IsZero() || end.After(to) {
				end = to // running now, or past the period
			}
			if end.After(start) {
				gpuHours += gpus * end.Sub(start).Hours()
				counted = true
			}
		}
		if counted {
			ran++
		}
	}
	return gpuHours, ran
}

// ReservationCost is what a reservation committed its owner to within a
// period (the part of its window inside it, up to now), against what the
// owner's work naming it used of that, in GPU-hours and at its reserved
// rate per GPU-hour (Rate; 0 without a price for its SKU).
type ReservationCost struct {
	Reservation  model.Reservation
	Pricing      price.Kind
	Rate         float64
	Bought, Used float64 // GPU-hours
}

// ReservationCosts reports the reservations p may see, of tenant when not
// empty, whose windows overlap [since, until): what each committed its
// owner to within it, used or idle; a reservation its owner deleted inside
// its window is still billed to its end (reservation_bill.go). Jobs
// deleted past the retention count from the roll-ups of the days the
// period covers whole. A reservation with an open start has no commitment
// to count and is left out.
func (s *Server) ReservationCosts(ctx context.Context, p Principal, tenant string, since, until time.Time) ([]ReservationCost, error) {
	now := s.clock.Now()
	until = minTime(until, now)
	w := s.world()
	tb := price.NewTable(w.fleet)
	// GPU-hours of deleted jobs, by owner and reservation.
	deleted := map[[2]string]float64{}
	err := s.usageDays(ctx, since, until, func(string) bool { return true }, func(tenant string, u usageRow) {
		if u.Reservation != "" {
			deleted[[2]string{tenant, u.Reservation}] += u.GPUHours
		}
	})
	if err != nil {
		return nil, err
	}
	jobsOf := map[string][]*model.Job{}
	var out []ReservationCost
	gone, err := s.released(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, r := range append(s.Reservations(p), gone...) {
		if r.Start.IsZero() || (tenant != "" && r.Owner != tenant) {
			continue
		}
		from, to := maxTime(since, r.Start), until
		if !r.End.IsZero() {
			to = minTime(to, r.End)
		}
		if !to.After(from) {
			continue
		}
		jobs, ok := jobsOf[r.Owner]
		if !ok {
			var err error
			if jobs, err = s.Jobs(ctx, p, JobFilter{Tenant: r.Owner}); err != nil {
				return nil, err
			}
			jobsOf[r.Owner] = jobs
		}
		c := ReservationCost{Reservation: r, Bought: float64(r.Count*w.fleet.Catalog[r.SKU].GPUs) * to.Sub(from).Hours()}
		c.Pricing, c.Rate = reservationRate(w, tb, r)
		c.Used, _ = usedIn(r, jobs, from, to)
		c.Used += deleted[[2]string{r.Owner, r.Name}]
		out = append(out, c)
	}
	return out, nil
}
