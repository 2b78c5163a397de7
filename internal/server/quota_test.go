package server

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// quotaIn returns the quota the core sees for tenant, region and series
// (-1: none).
func quotaIn(s *Server, tenant, region, series string) int {
	for _, q := range s.Tenancy().Quotas {
		if q.Tenant == tenant && q.Region == region && q.Series == series {
			return q.GPUs
		}
	}
	return -1
}

// storeKeys returns every key and ModRev of the store.
func storeKeys(t *testing.T, st store.Store) map[string]int64 {
	t.Helper()
	kvs, _, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, kv := range kvs {
		out[kv.Key] = kv.ModRev
	}
	return out
}

func wantRefusal(t *testing.T, err error, code Code, field string) {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) || se.Code != code || se.Field != field {
		t.Fatalf("got %v, want %s on field %q", err, code, field)
	}
}

// A tenant asks for a quota, cannot decide its own request, and the
// administrator's approval sets the quota the core sees, in one
// transaction with its audit record; the quota survives a restart. A
// denial changes no quota.
func TestQuotaRequestApprove(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	acme := Principal{Tenant: "acme", Token: "acme-ci"}
	if got := quotaIn(h.srv, "acme", "eastus", "ND"); got != 16 {
		t.Fatalf("the file's quota is %d, want 16", got)
	}
	r, err := h.srv.RequestQuota(ctx, acme, model.Quota{Region: "eastus", Series: "nd", GPUs: 32}, " pretraining in January ")
	if err != nil {
		t.Fatal(err)
	}
	if r.Tenant != "acme" || r.Series != "ND" || r.State != QuotaPending || r.Current == nil || *r.Current != 16 ||
		r.Reason != "pretraining in January" {
		t.Fatalf("request %+v", r)
	}
	if got := quotaIn(h.srv, "acme", "eastus", "ND"); got != 16 {
		t.Fatalf("a pending request changed the quota to %d", got)
	}

	// The tenant cannot decide it; nothing changes.
	before := storeKeys(t, h.st)
	_, err = h.srv.DecideQuotaRequest(ctx, acme, r.ID, true, "")
	wantRefusal(t, err, CodeForbidden, "")
	if after := storeKeys(t, h.st); !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused approval changed the store")
	}

	got, err := h.srv.DecideQuotaRequest(ctx, admin, r.ID, true, "for the January run")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != QuotaApproved || got.DecidedBy != "admin" || got.Note != "for the January run" {
		t.Fatalf("approved %+v", got)
	}
	if q := quotaIn(h.srv, "acme", "eastus", "ND"); q != 32 {
		t.Fatalf("quota after approval %d, want 32", q)
	}
	for _, u := range h.srv.Usage(acme, "eastus") {
		if u.Series == "ND" && (u.QuotaGPUs == nil || *u.QuotaGPUs != 32) {
			t.Fatalf("usage shows quota %v, want 32", u.QuotaGPUs)
		}
	}
	_, err = h.srv.DecideQuotaRequest(ctx, admin, r.ID, false, "changed my mind")
	wantRefusal(t, err, CodeConflict, "id")

	recs, _, err := h.srv.Audit(ctx, admin, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, x := range recs {
		actions = append(actions, x.Action+" "+x.Actor+" "+x.Token+" "+x.Object)
	}
	want := []string{"quota.request acme acme-ci quota-request/" + r.ID, "quota.approve admin  quota-request/" + r.ID}
	if !reflect.DeepEqual(actions, want) {
		t.Fatalf("audit %q, want %q", actions, want)
	}
	if !strings.Contains(recs[1].Detail, "quota 16 → 32 GPUs") {
		t.Errorf("approval detail %q", recs[1].Detail)
	}

	// A denial leaves the quota.
	d, err := h.srv.RequestQuota(ctx, acme, model.Quota{Region: "eastus", Series: "ND", GPUs: 64}, "more")
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.srv.DecideQuotaRequest(ctx, admin, d.ID, false, "")
	wantRefusal(t, err, CodeInvalidSpec, "reason")
	if _, err = h.srv.DecideQuotaRequest(ctx, admin, d.ID, false, "sold out"); err != nil {
		t.Fatal(err)
	}
	if q := quotaIn(h.srv, "acme", "eastus", "ND"); q != 32 {
		t.Fatalf("quota after a denial %d, want 32", q)
	}
	list, err := h.srv.QuotaRequests(ctx, acme, QuotaDenied)
	if err != nil || len(list) != 1 || list[0].ID != d.ID || list[0].Note != "sold out" {
		t.Fatalf("denied requests %+v, %v", list, err)
	}
	if others, _ := h.srv.QuotaRequests(ctx, Principal{Tenant: "globex"}, ""); len(others) != 0 {
		t.Fatalf("globex sees acme's requests: %+v", others)
	}

	// The approved quota survives a restart; the core plans with it.
	h.restart()
	if q := quotaIn(h.srv, "acme", "eastus", "ND"); q != 32 {
		t.Fatalf("quota after restart %d, want 32", q)
	}
	h.cycle()
}

// Bad requests are refused naming the field and change nothing.
func TestQuotaRequestRefusals(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	acme := Principal{Tenant: "acme"}
	for _, c := range []struct {
		name   string
		by     Principal
		q      model.Quota
		reason string
		code   Code
		field  string
	}{
		{"negative", acme, model.Quota{Region: "eastus", Series: "ND", GPUs: -8}, "r", CodeInvalidSpec, "gpus"},
		{"zero", acme, model.Quota{Region: "eastus", Series: "ND", GPUs: 0}, "r", CodeInvalidSpec, "gpus"},
		{"huge", acme, model.Quota{Region: "eastus", Series: "ND", GPUs: MaxQuotaGPUs + 1}, "r", CodeInvalidSpec, "gpus"},
		{"same as now", acme, model.Quota{Region: "eastus", Series: "ND", GPUs: 16}, "r", CodeInvalidSpec, "gpus"},
		{"unknown series", acme, model.Quota{Region: "eastus", Series: "HX", GPUs: 8}, "r", CodeInvalidSpec, "series"},
		{"empty series", acme, model.Quota{Region: "eastus", GPUs: 8}, "r", CodeInvalidSpec, "series"},
		{"unknown region", acme, model.Quota{Region: "eastuss", Series: "ND", GPUs: 8}, "r", CodeInvalidSpec, "region"},
		{"no reason", acme, model.Quota{Region: "eastus", Series: "ND", GPUs: 8}, "  ", CodeInvalidSpec, "reason"},
		{"reason with a newline", acme, model.Quota{Region: "eastus", Series: "ND", GPUs: 8}, "a\nb", CodeInvalidSpec, "reason"},
		{"long reason", acme, model.Quota{Region: "eastus", Series: "ND", GPUs: 8}, strings.Repeat("x", MaxQuotaReason+1), CodeInvalidSpec, "reason"},
		{"for another tenant", acme, model.Quota{Tenant: "globex", Region: "eastus", Series: "ND", GPUs: 8}, "r", CodeForbidden, "tenant"},
		{"admin names no tenant", admin, model.Quota{Region: "eastus", Series: "ND", GPUs: 8}, "r", CodeInvalidSpec, "tenant"},
		{"admin names an unknown tenant", admin, model.Quota{Tenant: "nobody", Region: "eastus", Series: "ND", GPUs: 8}, "r", CodeInvalidSpec, "tenant"},
		{"node token", Principal{Node: "eastus-h100-01"}, model.Quota{Region: "eastus", Series: "ND", GPUs: 8}, "r", CodeForbidden, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := storeKeys(t, h.st)
			_, err := h.srv.RequestQuota(ctx, c.by, c.q, c.reason)
			wantRefusal(t, err, c.code, c.field)
			if after := storeKeys(t, h.st); !reflect.DeepEqual(before, after) {
				t.Fatalf("a refused request changed the store")
			}
		})
	}
	for _, c := range []struct {
		name  string
		id    string
		code  Code
		field string
	}{
		{"unknown", "qr-0000000000", CodeNotFound, "id"},
		{"not an ID", "../quotas/acme", CodeNotFound, "id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.srv.DecideQuotaRequest(ctx, admin, c.id, true, "")
			wantRefusal(t, err, c.code, c.field)
		})
	}
	if _, err := h.srv.QuotaRequests(ctx, acme, "open"); err == nil {
		t.Fatal("listing state open was accepted")
	} else {
		wantRefusal(t, err, CodeInvalidSpec, "state")
	}
}

// The administrator's edit replaces the file's quota or adds one, is
// audited, and survives a restart; a tenant may not edit.
func TestSetQuota(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	_, err := h.srv.SetQuota(ctx, Principal{Tenant: "acme"}, model.Quota{Tenant: "acme", Region: "eastus", Series: "ND", GPUs: 99}, "")
	wantRefusal(t, err, CodeForbidden, "")
	_, err = h.srv.SetQuota(ctx, admin, model.Quota{Tenant: "acme", Region: "eastus", Series: "ND", GPUs: -1}, "")
	wantRefusal(t, err, CodeInvalidSpec, "gpus")
	if _, err := h.srv.SetQuota(ctx, admin, model.Quota{Tenant: "acme", Region: "eastus", Series: "ND", GPUs: 8}, "contract 7"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.SetQuota(ctx, admin, model.Quota{Tenant: "globex", Region: "westus", Series: "NC", GPUs: 2}, ""); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		if q := quotaIn(h.srv, "acme", "eastus", "ND"); q != 8 {
			t.Errorf("acme eastus ND %d, want 8", q)
		}
		if q := quotaIn(h.srv, "globex", "westus", "NC"); q != 2 {
			t.Errorf("globex westus NC %d, want 2", q)
		}
		if q := quotaIn(h.srv, "acme", "westus", "ND"); q != 32 {
			t.Errorf("acme westus ND %d, want the file's 32", q)
		}
	}
	check()
	h.restart()
	check()
	recs, _, err := h.srv.Audit(ctx, admin, AuditQuery{})
	if err != nil || len(recs) != 2 || recs[0].Action != ActionQuotaSet || recs[0].Object != "quota/acme/eastus/ND" ||
		!strings.Contains(recs[0].Detail, "quota 16 → 8 GPUs; note: contract 7") {
		t.Fatalf("audit %+v, %v", recs, err)
	}
}

func TestWithQuotas(t *testing.T) {
	q := func(tenant, region, series string, gpus int) model.Quota {
		return model.Quota{Tenant: tenant, Region: region, Series: series, GPUs: gpus}
	}
	file := []model.Quota{q("a", "r1", "ND", 1), q("b", "r1", "NC", 2)}
	got := withQuotas(file, []model.Quota{q("b", "r1", "NC", 5), q("c", "r2", "ND", 7)})
	want := []model.Quota{q("a", "r1", "ND", 1), q("b", "r1", "NC", 5), q("c", "r2", "ND", 7)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if file[1].GPUs != 2 {
		t.Fatal("withQuotas changed the file's quotas")
	}
	h := newHarness(t)
	w := h.srv.world()
	kept := w.applicable([]model.Quota{q("acme", "eastus", "ND", 1), q("gone", "eastus", "ND", 2), q("acme", "mars", "ND", 3)})
	if !reflect.DeepEqual(kept, []model.Quota{q("acme", "eastus", "ND", 1)}) {
		t.Fatalf("applicable kept %v", kept)
	}
}
