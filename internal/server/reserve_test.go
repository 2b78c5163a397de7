package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
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
	} {
		t.Run(c.name, func(t *testing.T) {
			c.r.Name = fmt.Sprintf("r-%x", sha256.Sum256([]byte(c.name)))[:16]
			_, err := h.srv.CreateReservation(ctx, c.by, c.r)
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
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
