package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuotaRequests plays issue 14's quota requests through the CLI
// against a server of its own: bad requests are refused with a 4xx naming
// the field and change nothing; a tenant cannot approve (or deny) its own
// request (403); the admin's approval changes the quota that 'allot quota
// usage' shows, survives a restart, and is in the audit log with the
// request; a denial leaves the quota; an admin edit is audited too.
func TestQuotaRequests(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	log := &syncBuffer{}
	url, admin, stop, err := startServer(data, log)
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, log.String())
	}
	defer func() {
		stop()
		if t.Failed() {
			t.Logf("server log (last 8 KiB):\n%s", tail(log.String(), 8<<10))
		}
	}()
	acme := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "acme", "--name", "acme-ci"))

	quota := func(token string) float64 {
		t.Helper()
		var v struct {
			Usage []struct {
				Tenant, Series string
				QuotaGPUs      *float64 `json:"quota_gpus"`
			}
		}
		mustJSON(t, allotMust(t, url, token, "quota", "usage", "--region", "eastus", "-o", "json"), &v)
		for _, u := range v.Usage {
			if u.Tenant == "acme" && u.Series == "ND" && u.QuotaGPUs != nil {
				return *u.QuotaGPUs
			}
		}
		t.Fatalf("no ND quota of acme in eastus: %+v", v.Usage)
		return 0
	}
	type request struct {
		ID, State, Tenant, Series, Note string
		GPUs                            int
	}
	requests := func() []request {
		t.Helper()
		var v struct {
			QuotaRequests []request `json:"quota_requests"`
		}
		mustJSON(t, allotMust(t, url, admin, "quota", "requests", "-o", "json"), &v)
		return v.QuotaRequests
	}
	type record struct{ Actor, Token, Action, Object, Detail string }
	audit := func(args ...string) []record {
		t.Helper()
		var v struct{ Records []record }
		mustJSON(t, allotMust(t, url, admin, append([]string{"audit", "list", "-o", "json"}, args...)...), &v)
		return v.Records
	}
	if q := quota(acme); q != 16 {
		t.Fatalf("acme's ND quota in eastus is %v before any request, want the file's 16", q)
	}
	start := audit()

	// Bad input: a 4xx naming the field, and nothing changes.
	for _, c := range []struct {
		name, field string
		args        []string
	}{
		{"negative count", "gpus", []string{"--region", "eastus", "--series", "ND", "--gpus", "-8"}},
		{"unknown series", "series", []string{"--region", "eastus", "--series", "HX", "--gpus", "32"}},
		{"unknown region", "region", []string{"--region", "mars", "--series", "ND", "--gpus", "32"}},
		{"empty reason", "reason", []string{"--region", "eastus", "--series", "ND", "--gpus", "32", "--reason", " "}},
	} {
		args := append([]string{"quota", "request"}, c.args...)
		if !strings.Contains(strings.Join(c.args, " "), "--reason") {
			args = append(args, "--reason", "training")
		}
		r := allotAt(t, url, acme, args...)
		if r.code != 2 || !strings.Contains(r.err, "InvalidSpec") || !strings.Contains(r.err, "(field "+c.field+")") {
			t.Errorf("%s: exit %d, %q; want exit 2, InvalidSpec naming field %s", c.name, r.code, r.err, c.field)
		}
	}
	body := map[string]any{"region": "eastus", "series": "ND", "gpus": -8, "reason": "x"}
	if code, b := send(t, url, "POST", "/v1/quota-requests", acme, body); code != http.StatusBadRequest || !strings.Contains(string(b), `"field":"gpus"`) {
		t.Errorf("POST a negative count: %d %s, want 400 naming gpus", code, b)
	}
	if rs := requests(); len(rs) != 0 {
		t.Fatalf("refused requests were stored: %+v", rs)
	}
	if got := audit(); len(got) != len(start) {
		t.Fatalf("refused requests were audited: %+v", got[len(start):])
	}
	if q := quota(acme); q != 16 {
		t.Fatalf("refused requests changed the quota to %v", q)
	}

	// A request; the tenant cannot decide it.
	var made request
	mustJSON(t, allotMust(t, url, acme, "quota", "request", "--region", "eastus", "--series", "ND", "--gpus", "32",
		"--reason", "pretraining in January", "-o", "json"), &made)
	if made.State != "pending" || made.GPUs != 32 || made.Tenant != "acme" {
		t.Fatalf("request %+v", made)
	}
	for _, args := range [][]string{{"quota", "approve", made.ID}, {"quota", "deny", made.ID, "--reason", "mine"}, {"audit", "list"}} {
		if r := allotAt(t, url, acme, args...); r.code == 0 || !strings.Contains(r.err, "Forbidden") {
			t.Errorf("a tenant ran %v: exit %d, %q; want Forbidden", args, r.code, r.err)
		}
	}
	if code, b := send(t, url, "POST", "/v1/quota-requests/"+made.ID+"/approve", acme, map[string]any{}); code != http.StatusForbidden {
		t.Errorf("a tenant approving its own request: %d %s, want 403", code, b)
	}
	if q := quota(acme); q != 16 {
		t.Fatalf("a pending request changed the quota to %v", q)
	}

	// The admin approves: the quota is the request's, and both are audited.
	allotMust(t, url, admin, "quota", "approve", made.ID, "--reason", "for the January run")
	if q := quota(acme); q != 32 {
		t.Fatalf("after approval acme's quota is %v, want 32", q)
	}
	wantApproval := func() {
		t.Helper()
		var req, appr *record
		for _, r := range audit() {
			switch {
			case r.Action == "quota.request" && r.Object == "quota-request/"+made.ID:
				req = &r
			case r.Action == "quota.approve" && r.Object == "quota-request/"+made.ID:
				appr = &r
			}
		}
		if req == nil || req.Actor != "acme" || req.Token != "acme-ci" {
			t.Errorf("the request's audit record: %+v", req)
		}
		if appr == nil || appr.Actor != "admin" || !strings.Contains(appr.Detail, "quota 16 → 32 GPUs") {
			t.Errorf("the approval's audit record: %+v", appr)
		}
	}
	wantApproval()
	if got := audit("--actor", "acme-ci"); len(got) != 1 || got[0].Action != "quota.request" {
		t.Errorf("audit list --actor acme-ci: %+v", got)
	}
	if got := audit("--since", "2000-01-01T00:00:00Z"); len(got) != len(audit()) {
		t.Errorf("audit list --since 2000: %d records, want all", len(got))
	}
	if table := allotMust(t, url, admin, "audit", "list", "--since", "1h"); !strings.Contains(table, "quota.approve") || !strings.Contains(table, "ACTION") {
		t.Errorf("audit list table:\n%s", table)
	}
	if r := allotAt(t, url, admin, "audit", "list", "--since", "yesterday"); r.code != 2 || !strings.Contains(r.err, "(field since)") {
		t.Errorf("audit list --since yesterday: exit %d, %q", r.code, r.err)
	}

	// A restart keeps the quota and the log.
	stop()
	url, admin, stop, err = startServer(data, log)
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, log.String())
	}
	if q := quota(acme); q != 32 {
		t.Fatalf("after a restart acme's quota is %v, want 32", q)
	}
	wantApproval()

	// A denial leaves the quota; an admin edit changes and is audited.
	var second request
	mustJSON(t, allotMust(t, url, acme, "quota", "request", "--region", "eastus", "--series", "ND", "--gpus", "64",
		"--reason", "more", "-o", "json"), &second)
	if r := allotAt(t, url, admin, "quota", "deny", second.ID); r.code != 2 {
		t.Errorf("deny without --reason: exit %d, %q", r.code, r.err)
	}
	allotMust(t, url, admin, "quota", "deny", second.ID, "--reason", "sold out until March")
	if q := quota(acme); q != 32 {
		t.Fatalf("after a denial acme's quota is %v, want 32", q)
	}
	var denied []request
	for _, r := range requests() {
		if r.State == "denied" {
			denied = append(denied, r)
		}
	}
	if len(denied) != 1 || denied[0].ID != second.ID || denied[0].Note != "sold out until March" {
		t.Errorf("denied requests: %+v", denied)
	}
	allotMust(t, url, admin, "quota", "set", "--tenant", "acme", "--region", "eastus", "--series", "ND", "--gpus", "24", "--reason", "contract 7")
	if q := quota(acme); q != 24 {
		t.Fatalf("after quota set acme's quota is %v, want 24", q)
	}
	last := audit()
	if n := len(last); n < 2 || last[n-2].Action != "quota.deny" || last[n-1].Action != "quota.set" || last[n-1].Object != "quota/acme/eastus/ND" {
		t.Errorf("audit log ends with %+v", last[max(0, len(last)-2):])
	}
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
}
