package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
)

// A tenant reserves within its reservation limits and its quota; an
// administrator is not limited. The tenants file (examples/tenants.yaml)
// gives acme max_count 4, max_duration 720h, a quota of 16 ND GPUs in
// eastus, and a file reservation of 2 westus A100 nodes from March to
// September 2027; hobbyist has no reservation limits.
func TestReservationLimits(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	now := h.clock.Now()
	day := 24 * time.Hour
	// The cases below reach the 2027 file reservation; how far ahead a
	// tenant may reserve is TestReservationLead's.
	h.srv.cfg.MaxReservationLead = 3650 * day
	acme, hobbyist := Principal{Tenant: "acme"}, Principal{Tenant: "hobbyist"}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name  string
		by    Principal
		r     model.Reservation
		code  Code // "" means accepted
		field string
	}{
		{"no limits: may not reserve", hobbyist,
			model.Reservation{SKU: "ND96-H100x8-IB", Region: "eastus", Count: 8, Start: at("2020-01-01T00:00:00Z"), End: at("9999-01-01T00:00:00Z")},
			CodeForbidden, "owner"},
		{"open-ended", acme, model.Reservation{SKU: "NC64-T4x4", Region: "eastus", Count: 1}, CodeInvalidSpec, "end"},
		{"too long", acme, model.Reservation{SKU: "NC64-T4x4", Region: "eastus", Count: 1, Start: now, End: now.Add(31 * day)},
			CodeQuotaExceeded, "end"},
		{"started in the past counts from now", acme,
			model.Reservation{SKU: "NC64-T4x4", Region: "eastus", Count: 1, Start: now.Add(-100 * day), End: now.Add(29 * day)}, "", ""},
		{"over quota", acme, model.Reservation{SKU: "ND96-H100x8-IB", Region: "eastus", Count: 3, Start: now, End: now.Add(day)},
			CodeQuotaExceeded, "count"},
		{"within quota", acme, model.Reservation{SKU: "ND96-H100x8-IB", Region: "eastus", Count: 2, Start: now, End: now.Add(day)}, "", ""},
		{"over max_count with the 2027 file reservation", acme,
			model.Reservation{SKU: "ND96-A100x8-IB", Region: "westus", Count: 3, Start: at("2027-04-01T00:00:00Z"), End: at("2027-04-20T00:00:00Z")},
			CodeQuotaExceeded, "count"},
		{"beside it, within max_count", acme,
			model.Reservation{SKU: "ND96-A100x8-IB", Region: "westus", Count: 2, Start: at("2027-04-01T00:00:00Z"), End: at("2027-04-20T00:00:00Z")}, "", ""},
		{"max_count at once, counting every overlap", acme,
			model.Reservation{SKU: "NC64-T4x4", Region: "eastus", Count: 2, Start: now, End: now.Add(day)}, CodeQuotaExceeded, "count"},
		{"admin is not limited", admin,
			model.Reservation{Owner: "hobbyist", SKU: "ND96-H100x8-IB", Region: "eastus", Count: 8, Start: now, End: now.Add(3650 * day)}, "", ""},
		// eastus has 8 H100 nodes, all reserved from now on: a tenant cannot
		// buy one, though its own limits would let it.
		{"nodes already sold", acme,
			model.Reservation{SKU: "ND96-H100x8-IB", Region: "eastus", Count: 1, Start: now.Add(2 * day), End: now.Add(3 * day)},
			CodeConflict, "count"},
		{"another SKU has nodes left", acme,
			model.Reservation{SKU: "NC64-T4x4", Region: "westus", Count: 1, Start: now.Add(2 * day), End: now.Add(3 * day)}, "", ""},
		{"no start: from now", acme, model.Reservation{SKU: "NC64-T4x4", Region: "westeurope", Count: 1, End: now.Add(day)}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.r.Name = fmt.Sprintf("r-%x", sha256.Sum256([]byte(c.name)))[:16]
			got, _, err := h.srv.CreateReservation(ctx, c.by, c.r)
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				// A start left out or past is now: the window, and what it
				// bought, begin when it was made.
				want := now.UTC().Truncate(time.Second)
				if c.r.Start.After(want) {
					want = c.r.Start
				}
				if stored, err := h.srv.Reservation(admin, c.r.Name); err != nil || !got.Start.Equal(want) || !stored.Start.Equal(want) {
					t.Fatalf("start %v, stored %v (%v); want %v", got.Start, stored.Start, err, want)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Code != c.code || se.Field != c.field {
				t.Fatalf("got %v; want %s on field %s", err, c.code, c.field)
			}
		})
	}
}

// TestReservationLead: a tenant's reservation may start at most
// --max-reservation-lead ahead (field start); an administrator's may start
// later.
func TestReservationLead(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	now := h.clock.Now()
	far := model.Reservation{Name: "far", SKU: "NC64-T4x4", Region: "eastus", Count: 1,
		Start: now.Add(DefaultMaxReservationLead + time.Hour), End: now.Add(DefaultMaxReservationLead + 2*time.Hour)}
	if _, _, err := h.srv.CreateReservation(ctx, Principal{Tenant: "acme"}, far); !isCode(err, CodeInvalidSpec) || !strings.Contains(err.Error(), "start") {
		t.Fatalf("acme reserves %s ahead: %v, want InvalidSpec naming start", DefaultMaxReservationLead+time.Hour, err)
	}
	near := far
	near.Name, near.Start, near.End = "near", now.Add(DefaultMaxReservationLead-time.Hour), now.Add(DefaultMaxReservationLead)
	if _, _, err := h.srv.CreateReservation(ctx, Principal{Tenant: "acme"}, near); err != nil {
		t.Fatalf("acme reserves within the lead: %v", err)
	}
	far.Owner = "acme"
	if _, _, err := h.srv.CreateReservation(ctx, Principal{Admin: true}, far); err != nil {
		t.Fatalf("the admin reserves past the lead: %v", err)
	}
}

// What partitions keep from lending and what is reserved must fit the pool
// (model.Promise). examples/tenants.yaml guarantees internal-ai 57 of the
// 64 eastus H100 GPUs and lets it lend 32 of them, so it keeps 25 as
// written and all 57 under the static strategy; customer-critical (acme's
// partition) has 35 westus A100 GPUs of 50.
func TestReservationPromises(t *testing.T) {
	ctx := context.Background()
	day := 24 * time.Hour
	open := func(t *testing.T, strategy model.Strategy, extra ...model.Reservation) (*Server, *bytes.Buffer) {
		fleet, ten := servertest.Example(t)
		ten.Strategy = strategy
		ten.Reservations = append(ten.Reservations, extra...)
		var log bytes.Buffer
		srv, err := New(ctx, Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, Clock: NewManualClock(t0),
			Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return srv, &log
	}
	acme := Principal{Tenant: "acme"}
	h100 := func(name, owner string, count int) model.Reservation {
		return model.Reservation{Name: name, Owner: owner, SKU: "ND96-H100x8-IB", Region: "eastus", Count: count, Start: t0, End: t0.Add(day)}
	}

	t.Run("as written, a tenant buys what is lent", func(t *testing.T) {
		srv, log := open(t, "")
		if _, warnings, err := srv.CreateReservation(ctx, acme, h100("a", "acme", 2)); err != nil || len(warnings) != 0 {
			t.Fatalf("25 kept + 16 of 64: err %v, warnings %q", err, warnings)
		}
		if strings.Contains(log.String(), "promised more than once") {
			t.Fatalf("warned:\n%s", log)
		}
	})
	t.Run("under static, a tenant cannot buy what a partition keeps", func(t *testing.T) {
		srv, _ := open(t, model.StrategyStatic)
		_, _, err := srv.CreateReservation(ctx, acme, h100("a", "acme", 2))
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeConflict || se.Field != "count" ||
			!strings.Contains(se.Msg, "eastus H100 from 2026-06-01T12:00:00Z: partitions keep 57 GPUs from lending and reservations, this one's 16 included, hold 16; 73 promised at once, the pool has 64") {
			t.Fatalf("got %v; want Conflict on count saying what is promised", err)
		}
	})
	t.Run("the refusal names no other tenant's reservation", func(t *testing.T) {
		srv, _ := open(t, model.StrategyStatic, h100("globex-secret", "globex", 1))
		_, _, err := srv.CreateReservation(ctx, acme, h100("a", "acme", 1))
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeConflict || strings.Contains(se.Msg, "globex") ||
			!strings.Contains(se.Msg, "this one's 8 included, hold 16; 73 promised at once") {
			t.Fatalf("got %v; want Conflict with figures only", err)
		}
	})
	t.Run("under static, the owner's partition keeps room for its own", func(t *testing.T) {
		srv, _ := open(t, model.StrategyStatic)
		r := model.Reservation{Name: "w", Owner: "acme", SKU: "ND96-A100x8-IB", Region: "westus", Count: 2, Start: t0, End: t0.Add(day)}
		if _, warnings, err := srv.CreateReservation(ctx, acme, r); err != nil || len(warnings) != 0 {
			t.Fatalf("max(35, 16) of 50: err %v, warnings %q", err, warnings)
		}
	})
	t.Run("an administrator is warned, and the server logs it", func(t *testing.T) {
		srv, log := open(t, "")
		_, warnings, err := srv.CreateReservation(ctx, admin, h100("big", "hobbyist", 8))
		if err != nil {
			t.Fatal(err)
		}
		want := "eastus H100 from 2026-06-01T12:00:00Z: guarantees kept from lending (25 GPUs) and reservations big (64 GPUs) promise 89 at once; the pool has 64"
		if len(warnings) != 1 || !strings.Contains(warnings[0], want) {
			t.Fatalf("warnings %q, want one saying %q", warnings, want)
		}
		if !strings.Contains(log.String(), "reservation created beyond its pool") {
			t.Fatalf("not logged:\n%s", log)
		}
	})
	t.Run("a tenants file that promises too much is logged at start", func(t *testing.T) {
		_, log := open(t, model.StrategyStatic, h100("file", "hobbyist", 1))
		if !strings.Contains(log.String(), "promise 65 at once; the pool has 64") {
			t.Fatalf("not logged:\n%s", log)
		}
	})
}

// A reservation larger than any cluster of its SKU in its region holds
// nodes of several clusters, and a gang runs within one: creating it warns
// how large a gang it can hold; one that one cluster holds does not.
func TestReservationAcrossClustersWarns(t *testing.T) {
	ctx := context.Background()
	fleet, ten := servertest.Example(t)
	// eastus's second H100 rack becomes a cluster of its own: 4 and 4 nodes.
	for ri := range fleet.Regions {
		reg := &fleet.Regions[ri]
		if reg.Name != "eastus" {
			continue
		}
		for ci := range reg.Clusters {
			c := &reg.Clusters[ci]
			for k, rk := range c.Racks {
				if rk.Name == "eastus-ib1-r2" {
					c.Racks = append(c.Racks[:k:k], c.Racks[k+1:]...)
					reg.Clusters = append(reg.Clusters, model.Cluster{Name: "eastus-ib2", Fabric: c.Fabric, Racks: []model.Rack{rk}})
					break
				}
			}
		}
	}
	for i := range fleet.Nodes {
		if fleet.Nodes[i].Rack == "eastus-ib1-r2" {
			fleet.Nodes[i].Cluster = "eastus-ib2"
		}
	}
	var log bytes.Buffer
	srv, err := New(ctx, Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, Clock: NewManualClock(t0),
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h100 := func(name string, count int) model.Reservation {
		return model.Reservation{Name: name, Owner: "copilot", SKU: "ND96-H100x8-IB", Region: "eastus", Count: count, Start: t0, End: t0.Add(time.Hour)}
	}
	if _, warnings, err := srv.CreateReservation(ctx, admin, h100("fits", 4)); err != nil || len(warnings) != 0 {
		t.Fatalf("4 nodes, one cluster holds them: %q %v, want no warning", warnings, err)
	}
	_, warnings, err := srv.CreateReservation(ctx, admin, h100("three", 3))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("3 more: %q %v, want no warning", warnings, err)
	}
	want := "no cluster of ND96-H100x8-IB in eastus has 5 nodes (the largest of its 2 has 4): the reservation spans clusters, and a gang, which runs within one cluster, fits it only up to 4 nodes"
	_, warnings, err = srv.CreateReservation(ctx, admin, h100("five", 5))
	if err != nil || !slices.Contains(warnings, want) || !strings.Contains(log.String(), "reservation created across clusters") {
		t.Fatalf("5 nodes: %q %v, want the warning %q, logged", warnings, err, want)
	}
}
