package server

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
	"github.com/allot-dev/allot/internal/server/servertest"
)

func TestReservationUse(t *testing.T) {
	t0 := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	job := func(tenant, res string, gpus int, milli int64, attempts ...[2]time.Time) *model.Job {
		j := &model.Job{Spec: model.JobSpec{Tenant: tenant, Placement: model.Placement{Reservation: res},
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: gpus, GPUMilli: milli}}}
		for _, a := range attempts {
			j.Status.Attempts = append(j.Status.Attempts, model.Attempt{Started: a[0], Ended: a[1]})
		}
		return j
	}
	r := model.Reservation{Name: "r", Owner: "acme", Count: 2, Start: h(0), End: h(10)}
	tests := []struct {
		name                        string
		r                           model.Reservation
		jobs                        []*model.Job
		now                         time.Time
		bought, total, used, percnt float64
		jobsN                       int
		hasPercent                  bool
	}{{
		name: "ahead of the window: nothing bought, nothing used",
		r:    r, now: h(-1), total: 160,
		jobs: []*model.Job{job("acme", "r", 8, 0, [2]time.Time{h(-3), h(-2)})},
	}, {
		name: "in the window: an attempt clipped to the start, one running now",
		r:    r, now: h(2), bought: 32, total: 160, used: 8*1 + 4*0.5, percnt: 100 * 10 / 32.0, jobsN: 2, hasPercent: true,
		jobs: []*model.Job{
			job("acme", "r", 8, 0, [2]time.Time{h(-1), h(1)}),
			job("acme", "r", 4, 0, [2]time.Time{h(1.5), {}}),
			job("acme", "", 8, 0, [2]time.Time{h(0), h(2)}),      // does not name it
			job("globex", "r", 8, 0, [2]time.Time{h(0), h(2)}),   // not the owner's
			job("acme", "other", 8, 0, [2]time.Time{h(0), h(2)}), // another reservation
		},
	}, {
		name: "over: counted to the end; a fraction of a GPU counts its share",
		r:    r, now: h(20), bought: 160, total: 160, used: 0.5 * 4, percnt: 100 * 2 / 160.0, jobsN: 1, hasPercent: true,
		jobs: []*model.Job{job("acme", "r", 1, 500, [2]time.Time{h(6), {}})},
	}, {
		name: "open start: nothing to count bought from",
		r:    model.Reservation{Name: "r", Owner: "acme", Count: 1}, now: h(1), used: 8, jobsN: 1,
		jobs: []*model.Job{job("acme", "r", 8, 0, [2]time.Time{h(0), h(1)})},
	}, {
		name: "open end: bought so far, no total",
		r:    model.Reservation{Name: "r", Owner: "acme", Count: 1, Start: h(0)}, now: h(4), bought: 32, used: 16, percnt: 50, jobsN: 1, hasPercent: true,
		jobs: []*model.Job{job("acme", "r", 8, 0, [2]time.Time{h(1), h(3)}), job("acme", "r", 8, 0, [2]time.Time{{}, {}})},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := reservationUse(tc.r, 8, tc.jobs, usageRow{}, tc.now)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if !near(u.Bought, tc.bought) || !near(u.BoughtTotal, tc.total) || !near(u.Used, tc.used) ||
				!near(u.UsedPercent, tc.percnt) || u.HasPercent != tc.hasPercent || u.Jobs != tc.jobsN {
				t.Errorf("got bought %v (total %v), used %v (%v %%, %v), %d jobs; want %v (%v), %v (%v %%, %v), %d",
					u.Bought, u.BoughtTotal, u.Used, u.UsedPercent, u.HasPercent, u.Jobs,
					tc.bought, tc.total, tc.used, tc.percnt, tc.hasPercent, tc.jobsN)
			}
		})
	}
}

// FuzzReservationUse: any window and attempts give finite, non-negative
// figures, bought so far never above the whole window's, and a percentage
// only when something was bought.
func FuzzReservationUse(f *testing.F) {
	f.Add(int64(0), int64(36000), int64(7200), int64(-3600), int64(3600), 2, 8)
	f.Add(int64(0), int64(0), int64(100), int64(50), int64(0), 1, 1)
	f.Add(int64(10), int64(5), int64(1), int64(2), int64(3), -1, 0)
	f.Fuzz(func(t *testing.T, start, end, now, from, to int64, count, gpus int) {
		at := func(s int64) time.Time {
			if s == 0 {
				return time.Time{}
			}
			return time.Unix(1_800_000_000+s%(1<<32), 0)
		}
		r := model.Reservation{Name: "r", Owner: "acme", Count: count % 1000, Start: at(start), End: at(end)}
		j := &model.Job{Spec: model.JobSpec{Tenant: "acme", Placement: model.Placement{Reservation: "r"},
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: gpus % 64}}}
		j.Status.Attempts = []model.Attempt{{Started: at(from), Ended: at(to)}}
		u := reservationUse(r, 8, []*model.Job{j}, usageRow{}, at(now))
		for _, v := range []float64{u.Bought, u.BoughtTotal, u.Used, u.UsedPercent} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("not finite: %+v", u)
			}
		}
		if r.Count >= 0 && gpus%64 >= 0 && (u.Bought < 0 || u.Used < 0) {
			t.Fatalf("negative figures for a valid shape: %+v", u)
		}
		if u.BoughtTotal > 0 && u.Bought > u.BoughtTotal+1e-9 {
			t.Fatalf("bought %v so far, above the window's %v", u.Bought, u.BoughtTotal)
		}
		if u.HasPercent != (u.Bought > 0) {
			t.Fatalf("percentage %v with bought %v", u.HasPercent, u.Bought)
		}
	})
}

// A cost report's commitments: the part of each reservation's window in
// the period, up to now, at its reserved rate, against what the owner's
// work naming it used in the period; reservations outside the period, or
// of tenants the principal does not see, are left out.
func TestReservationCosts(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	globex := Principal{Tenant: "globex"}
	// 8 of globex-h100's 16 H100s from t0 (noon) for 10 hours, the period
	// from 2 hours before t0 to 12 hours after, now 14 hours after.
	j := h.submit(globex, `{name: res, tenant: globex, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {reservation: globex-h100}}`)
	h.cycle()
	h.clock.Advance(10 * time.Hour)
	h.cancel(j.ID)
	h.clock.Advance(4 * time.Hour)
	since, until := t0.Add(-2*time.Hour), t0.Add(12*time.Hour)
	costs, err := h.srv.ReservationCosts(ctx, globex, "", since, until)
	if err != nil {
		t.Fatal(err)
	}
	tb := price.NewTable(h.srv.world().fleet)
	rates, _ := tb.Rates("ND96-H100x8-IB", "westeurope")
	if len(costs) != 1 {
		t.Fatalf("%d reservations, want globex-h100 alone: %+v", len(costs), costs)
	}
	c := costs[0]
	if c.Reservation.Name != "globex-h100" || c.Pricing != price.Reserved1Y || c.Bought != 16*14 || c.Used != 8*10 ||
		math.Abs(c.Rate-rates.Reserved1Y/8) > 1e-12 {
		t.Fatalf("globex-h100: %+v, want 224 GPU-hours bought, 80 used, at %v per GPU-hour", c, rates.Reserved1Y/8)
	}
	// The period ends before now: the commitment is the period's.
	if costs, _ := h.srv.ReservationCosts(ctx, admin, "globex", t0, t0.Add(5*time.Hour)); len(costs) != 1 || costs[0].Bought != 16*5 || costs[0].Used != 8*5 {
		t.Errorf("five hours from t0: %+v", costs)
	}
	if costs, _ := h.srv.ReservationCosts(ctx, copilot, "", since, until); len(costs) != 0 {
		t.Errorf("copilot sees %+v", costs)
	}
	if costs, _ := h.srv.ReservationCosts(ctx, admin, "", since, until); len(costs) != 1 {
		t.Errorf("admin: %+v, want globex-h100 (acme-a100-2027 starts in 2027)", costs)
	}
}

// TestReservationNodes: a reservation's report names the nodes the last
// cycle gave it (none before the first cycle), and the next cycle's
// choice replaces them.
func TestReservationNodes(t *testing.T) {
	ctx := context.Background()
	fleet, ten := servertest.Example(t)
	srv, err := New(ctx, Config{Store: servertest.Store(t, t.TempDir()), Fleet: fleet, Tenancy: ten, Clock: NewManualClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	nodes := func() []string {
		t.Helper()
		_, u, err := srv.ReservationUse(ctx, Principal{Admin: true}, "globex-h100")
		if err != nil {
			t.Fatal(err)
		}
		return u.Nodes
	}
	if got := nodes(); len(got) != 0 {
		t.Fatalf("before any cycle: %v, want none", got)
	}
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	// The example's globex-h100 holds 2 of westeurope's 4 H100 nodes, idle
	// ones by name.
	if got := nodes(); !slices.Equal(got, []string{"westeurope-h100-01", "westeurope-h100-02"}) {
		t.Fatalf("after a cycle: %v, want westeurope-h100-01 and -02", got)
	}
	// A job naming it that keeps off -01 moves the reservation there.
	spec := batchSpecs(t, `{name: g, tenant: globex, resources: {gpus_per_instance: 8}, placement: {reservation: globex-h100, exclude_nodes: [westeurope-h100-01]}}`)[0]
	if _, err := srv.Submit(ctx, Principal{Tenant: "globex"}, spec); err != nil {
		t.Fatal(err)
	}
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := nodes(); !slices.Equal(got, []string{"westeurope-h100-02", "westeurope-h100-03"}) {
		t.Fatalf("with a queued job keeping off -01: %v, want -02 and -03", got)
	}
	// node show says which reservation holds a node.
	for node, want := range map[string]string{"westeurope-h100-03": "globex-h100", "westeurope-h100-01": ""} {
		if d, err := srv.Node(node); err != nil || d.Reservation != want || d.Ahead {
			t.Errorf("node %s: reservation %q (ahead %v), %v; want %q", node, d.Reservation, d.Ahead, err, want)
		}
	}
}
