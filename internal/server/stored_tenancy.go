package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// StoredTenancy returns file (a tenants file read against fleet) with what
// the store adds to it, as a server's world lays it over the file: the
// reservations created through the API, and the quotas set by approved
// requests and edits in place of the file's (only those of tenants and
// regions the files still have). Another driver of the core (package kube)
// reads the tenancy the server would schedule with through it; file is not
// changed.
func StoredTenancy(ctx context.Context, st store.Store, fleet *model.Fleet, file *model.Tenancy) (*model.Tenancy, error) {
	kvs, _, err := st.List(ctx, prefixReservations)
	if err != nil {
		return nil, fmt.Errorf("list reservations: %w", err)
	}
	res := make([]model.Reservation, 0, len(kvs))
	for _, kv := range kvs {
		r, err := decodeReservation(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("read reservation %s: %w", kv.Key, err)
		}
		res = append(res, r)
	}
	kvs, _, err = st.List(ctx, prefixQuotas)
	if err != nil {
		return nil, fmt.Errorf("list quotas: %w", err)
	}
	quotas := make([]model.Quota, 0, len(kvs))
	for _, kv := range kvs {
		var r quotaRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return nil, fmt.Errorf("read quota %s: %w", kv.Key, err)
		}
		quotas = append(quotas, model.Quota{Tenant: r.Tenant, Region: r.Region, Series: r.Series, GPUs: r.GPUs})
	}
	sort.Slice(quotas, func(a, b int) bool { return quotaKey(quotas[a]) < quotaKey(quotas[b]) })
	w := buildWorld(fleet, file, nil, res, 0)
	w.tenancy.Quotas = withQuotas(w.tenancy.Quotas, w.applicable(quotas))
	return w.tenancy, nil
}

// PutReservation stores r as a reservation created through the API would
// be (tests of other drivers of the core; an administrator uses the API).
func PutReservation(ctx context.Context, st store.Store, r model.Reservation) error {
	_, err := st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(prefixReservations+r.Name, encodeReservation(r))}})
	return err
}
