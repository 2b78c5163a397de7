package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/bolt"
)

// TestStoredTenancy: another driver of the core reads the tenancy the
// server schedules with: the file's, with the stored reservations added
// and the stored quotas in place of the file's (those of unknown tenants
// left out), the file itself unchanged.
func TestStoredTenancy(t *testing.T) {
	ctx := context.Background()
	fleet, err := spec.ReadFleet("../../examples/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file, err := spec.ReadTenancy("../../examples/tenants.yaml", fleet)
	if err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "allot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := model.Reservation{Name: "acme-now", Owner: "acme", SKU: "ND96-H100x8-IB", Region: "eastus", Count: 1}
	if err := PutReservation(ctx, st, r); err != nil {
		t.Fatal(err)
	}
	for _, q := range []model.Quota{{Tenant: "acme", Region: "eastus", Series: "ND", GPUs: 40}, {Tenant: "nobody", Region: "eastus", Series: "ND", GPUs: 8}} {
		b, _ := json.Marshal(quotaRecord{Tenant: q.Tenant, Region: q.Region, Series: q.Series, GPUs: q.GPUs})
		if _, err := st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(quotaKey(q), b)}}); err != nil {
			t.Fatal(err)
		}
	}
	before := len(file.Reservations)
	got, err := StoredTenancy(ctx, st, fleet, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Reservations) != before {
		t.Fatal("StoredTenancy changed the file's tenancy")
	}
	found := false
	for _, x := range got.Reservations {
		found = found || x == r
	}
	if !found || len(got.Reservations) != before+1 {
		t.Errorf("reservations %+v: want the file's and acme-now", got.Reservations)
	}
	for _, q := range got.Quotas {
		switch {
		case q.Tenant == "acme" && q.Region == "eastus" && q.Series == "ND" && q.GPUs != 40:
			t.Errorf("acme's eastus ND quota is %d, want the stored 40", q.GPUs)
		case q.Tenant == "nobody":
			t.Errorf("a stored quota of a tenant the file lacks applies: %+v", q)
		}
	}
}
