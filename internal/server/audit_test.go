package server

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Each audited change leaves one record with the Clock's time, the actor
// and the object; a tenant canceling its own job leaves none, the admin
// canceling it does. Records are listed oldest first, from --since, by
// actor or token name, and at most limit.
func TestAuditHooks(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	acme := Principal{Tenant: "acme", Token: "acme-ci"}
	step := func() { h.clock.Advance(time.Second) }

	_, info, err := h.srv.CreateTokenFor(ctx, TokenOptions{Tenant: "acme", Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := h.srv.RevokeToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	step()
	now := h.clock.Now()
	r := model.Reservation{Name: "acme-t4", SKU: "NC64-T4x4", Region: "eastus", Count: 1, Start: now, End: now.Add(time.Hour)}
	if _, _, err := h.srv.CreateReservation(ctx, acme, r); err != nil {
		t.Fatal(err)
	}
	step()
	if err := h.srv.DeleteReservation(ctx, admin, "acme-t4"); err != nil {
		t.Fatal(err)
	}
	step()
	pol := "scheduling_policies:\n  - {name: p, conditions: [{resource_type: gpu_cluster, utilization_threshold: 1%}], " +
		"actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool}]}\n"
	if _, err := h.srv.ApplyPolicies(ctx, admin, []byte(pol)); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := h.srv.DeletePolicy(ctx, admin, "p"); err != nil {
		t.Fatal(err)
	}
	step()
	doc := "name: a\ntenant: acme\ncommand: [x]\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"
	own := h.submit(acme, doc)
	other := h.submit(acme, doc)
	if _, err := h.srv.Cancel(ctx, acme, own.ID); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := h.srv.Cancel(ctx, admin, other.ID); err != nil {
		t.Fatal(err)
	}

	recs, more, err := h.srv.Audit(ctx, admin, AuditQuery{})
	if err != nil || more {
		t.Fatal(err, more)
	}
	var got []string
	for _, x := range recs {
		got = append(got, fmt.Sprintf("%s %s %s %s", x.Time.Sub(t0), x.Actor, x.Action, x.Object))
	}
	want := []string{
		"0s admin token.create token/" + info.ID,
		"1s admin token.revoke token/" + info.ID,
		"2s acme reservation.create reservation/acme-t4",
		"3s admin reservation.delete reservation/acme-t4",
		"4s admin policy.apply policies",
		"5s admin policy.delete policies",
		"7s admin job.cancel job/" + other.ID,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("audit log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if recs[2].Token != "acme-ci" || !strings.Contains(recs[2].Detail, "1 × NC64-T4x4 in eastus for acme") {
		t.Errorf("reservation record %+v", recs[2])
	}

	for _, c := range []struct {
		name string
		q    AuditQuery
		want []string // actions
	}{
		{"since", AuditQuery{Since: t0.Add(4 * time.Second)}, []string{ActionPolicyApply, ActionPolicyDelete, ActionJobCancel}},
		{"since between records", AuditQuery{Since: t0.Add(5*time.Second + 1)}, []string{ActionJobCancel}},
		{"actor", AuditQuery{Actor: "acme"}, []string{ActionReservationNew}},
		{"token name", AuditQuery{Actor: "ACME-CI"}, []string{ActionReservationNew}},
		{"limit", AuditQuery{Limit: 2}, []string{ActionTokenCreate, ActionTokenRevoke}},
		{"nobody", AuditQuery{Actor: "globex"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, more, err := h.srv.Audit(ctx, admin, c.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range recs {
				got = append(got, x.Action)
			}
			if !reflect.DeepEqual(got, c.want) || more != (c.q.Limit == 2) {
				t.Fatalf("got %v (more %v), want %v", got, more, c.want)
			}
		})
	}
	if _, _, err := h.srv.Audit(ctx, acme, AuditQuery{}); !isCode(err, CodeForbidden) {
		t.Fatalf("a tenant read the audit log: %v", err)
	}
	if _, _, err := h.srv.Audit(ctx, admin, AuditQuery{Limit: MaxAuditLimit + 1}); !isCode(err, CodeInvalidSpec) {
		t.Fatalf("limit over the maximum: %v", err)
	}
}

// Two records of the same instant get distinct keys that sort in the
// order they were made.
func TestAuditKeysSameInstant(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for i := range 3 {
		h.srv.audit(ctx, admin, ActionQuotaSet, fmt.Sprint("quota/", i), "")
	}
	recs, _, err := h.srv.Audit(ctx, admin, AuditQuery{})
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for i, r := range recs {
		if r.Object != fmt.Sprint("quota/", i) {
			t.Fatalf("record %d is %s", i, r.Object)
		}
	}
}

// The administrator's changes of a tenant's queued job (hold, release,
// update) are recorded, the tenant's own are not; records older than
// Config.AuditRetention are purged, the rest kept.
func TestAuditOthersChangesAndRetention(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	acme := Principal{Tenant: "acme"}
	doc := "name: a\ntenant: acme\ncommand: [x]\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"
	j := h.submit(acme, doc)
	prio := model.Priority{Class: model.ClassStandard, Value: 7}
	for _, p := range []Principal{acme, admin} {
		if _, err := h.srv.Hold(ctx, p, j.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := h.srv.Release(ctx, p, j.ID); err != nil {
			t.Fatal(err)
		}
		prio.Value++
		if _, err := h.srv.SetPriority(ctx, p, j.ID, prio); err != nil {
			t.Fatal(err)
		}
	}
	recs, _, err := h.srv.Audit(ctx, admin, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Actor+" "+r.Action+" "+r.Object)
		if !strings.Contains(r.Detail, "of tenant acme") {
			t.Errorf("record %+v does not name the owner", r)
		}
	}
	want := []string{"admin job.hold job/" + j.ID, "admin job.release job/" + j.ID, "admin job.update job/" + j.ID}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("audit log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	h.srv.cfg.AuditRetention = MinAuditRetention
	h.clock.Advance(MinAuditRetention + time.Second)
	if _, err := h.srv.Hold(ctx, admin, j.ID); err != nil {
		t.Fatal(err)
	}
	n, err := h.srv.purgeAudit(ctx, h.clock.Now())
	if err != nil || n != 3 {
		t.Fatalf("purge: %d deleted, %v; want the 3 records past the retention", n, err)
	}
	recs, _, err = h.srv.Audit(ctx, admin, AuditQuery{})
	if err != nil || len(recs) != 1 || recs[0].Action != ActionJobHold {
		t.Fatalf("after the purge: %+v, %v; want the hold within the retention", recs, err)
	}
}
