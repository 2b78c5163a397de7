package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/store/bolt"
)

// quotaEnv is an API over the example fleet and tenants whose store a
// test can read: acme has a pending request for 32 ND GPUs in eastus.
type quotaEnv struct {
	*env
	st      *bolt.Store
	pending string // ID of acme's pending request
}

func newQuotaEnv(t testing.TB) *quotaEnv {
	t.Helper()
	fleet, ten := servertest.Example(t)
	dir := t.TempDir()
	st := servertest.Store(t, dir)
	clock := server.NewManualClock(t0)
	srv, err := server.New(context.Background(), server.Config{Store: st, Fleet: fleet, Tenancy: ten, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, tokens: map[string]string{}}
	if e.admin, _, err = srv.EnsureAdminToken(context.Background(), filepath.Join(dir, "admin-token")); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{"acme", "globex"} {
		if e.tokens[tn], err = srv.CreateToken(context.Background(), tn); err != nil {
			t.Fatal(err)
		}
	}
	e.h = New(Config{Server: srv, Rate: -1, Now: clock.Now})
	q := &quotaEnv{env: e, st: st}
	rec := e.do("POST", "/v1/quota-requests", e.tokens["acme"], []byte(`{"region":"eastus","series":"ND","gpus":32,"reason":"run"}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("request: %d %s", rec.Code, rec.Body)
	}
	q.pending = decode[QuotaRequest](t, rec).ID
	return q
}

// keys returns every key of the store with its ModRev.
func (q *quotaEnv) keys(t testing.TB) map[string]int64 {
	kvs, _, err := q.st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, kv := range kvs {
		out[kv.Key] = kv.ModRev
	}
	return out
}

// refused checks a refusal: a 4xx with a code, and a field when the
// request was bad (400).
func refused(t *testing.T, rec *httptest.ResponseRecorder, sent string) {
	t.Helper()
	if rec.Code >= 500 || rec.Code < 400 {
		t.Fatalf("%s: %d %s", sent, rec.Code, rec.Body)
	}
	var e Error
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("%s: error body %q", sent, rec.Body)
	}
	if rec.Code == http.StatusBadRequest && e.Field == "" && !strings.HasPrefix(e.Message, "invalid JSON") {
		t.Fatalf("%s: 400 names no field: %s", sent, rec.Body)
	}
}

// Any body of POST /v1/quota-requests is a 201 with a sound pending
// request, or a 4xx naming the field that changes nothing.
func FuzzQuotaRequest(f *testing.F) {
	q := newQuotaEnv(f)
	for _, s := range []string{
		`{"region":"eastus","series":"NC","gpus":8,"reason":"inference"}`,
		`{"region":"eastus","series":"ND","gpus":-8,"reason":"x"}`,
		`{"region":"eastus","series":"NC","gpus":0,"reason":"x"}`,
		`{"region":"eastus","series":"HX","gpus":8,"reason":"x"}`,
		`{"region":"mars","series":"ND","gpus":8,"reason":"x"}`,
		`{"region":"eastus","series":"ND","gpus":8}`,
		`{"tenant":"globex","region":"eastus","series":"ND","gpus":8,"reason":"x"}`,
		`{"region":"eastus","series":"ND","gpus":1e30,"reason":"x"}`,
		`{"region":"eastus","series":"ND","gpus":"8","reason":"x"}`,
		`{"region":"eastus","series":"nd","gpus":8,"reason":"x","extra":1}`,
		`[]`, ``, `{`, "\x00",
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, who uint8) {
		tok := []string{q.tokens["acme"], q.tokens["globex"], q.admin}[int(who)%3]
		before := q.keys(t)
		rec := q.do("POST", "/v1/quota-requests", tok, body)
		sent := "POST /v1/quota-requests " + string(body)
		if rec.Code != http.StatusCreated {
			refused(t, rec, sent)
			if after := q.keys(t); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s: refused (%d) but changed the store", sent, rec.Code)
			}
			return
		}
		r := decode[QuotaRequest](t, rec)
		if r.State != "pending" || r.GPUs < 1 || r.GPUs > server.MaxQuotaGPUs || r.Reason == "" || len(r.Reason) > server.MaxQuotaReason ||
			(r.Series != "ND" && r.Series != "NC") || (r.Region != "eastus" && r.Region != "westus" && r.Region != "westeurope") {
			t.Fatalf("%s: accepted %+v", sent, r)
		}
	})
}

// Any decision on any ID, by anyone, answers without a 5xx; only the
// admin's changes anything, and a refusal changes nothing.
func FuzzQuotaDecision(f *testing.F) {
	q := newQuotaEnv(f)
	f.Add("", true, []byte(`{"reason":"ok"}`), uint8(2))
	f.Add("", false, []byte(`{}`), uint8(2))
	f.Add("", false, []byte(`{"reason":"too late: already approved"}`), uint8(2))
	f.Add("", true, []byte(nil), uint8(0))
	f.Add("qr-0000000000", false, []byte(`{"reason":"no"}`), uint8(2))
	f.Add("..%2F..%2Fquotas", true, []byte(`{"reason":1}`), uint8(2))
	f.Fuzz(func(t *testing.T, id string, approve bool, body []byte, who uint8) {
		if id == "" {
			id = q.pending
		}
		tok := []string{q.tokens["acme"], q.tokens["globex"], q.admin}[int(who)%3]
		verb := "deny"
		if approve {
			verb = "approve"
		}
		target := "/v1/quota-requests/" + url.PathEscape(id) + "/" + verb
		if _, err := url.ParseRequestURI(target); err != nil {
			return
		}
		before := q.keys(t)
		was := map[string]string{}
		for _, r := range decode[struct {
			QuotaRequests []QuotaRequest `json:"quota_requests"`
		}](t, q.do("GET", "/v1/quota-requests", q.admin, nil)).QuotaRequests {
			was[r.ID] = r.State
		}
		rec := q.do("POST", target, tok, body)
		sent := "POST " + target + " " + string(body)
		if rec.Code == http.StatusOK {
			if tok != q.admin || was[id] != "pending" {
				t.Fatalf("%s: decided a request that was %q (admin %v)", sent, was[id], tok == q.admin)
			}
			return
		}
		refused(t, rec, sent)
		if after := q.keys(t); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s: refused (%d) but changed the store", sent, rec.Code)
		}
	})
}

// Any PUT /v1/quotas body is a 200 or a 4xx that changes nothing.
func FuzzSetQuota(f *testing.F) {
	q := newQuotaEnv(f)
	for _, s := range []string{
		`{"tenant":"acme","region":"eastus","series":"ND","gpus":24,"reason":"contract"}`,
		`{"tenant":"acme","region":"eastus","series":"ND","gpus":-1}`,
		`{"tenant":"nobody","region":"eastus","series":"ND","gpus":1}`,
		`{"tenant":"acme","region":"eastus","series":"ZZ","gpus":1}`,
		`{"tenant":"acme","region":"","series":"ND","gpus":1}`,
		`{"tenant":"acme","region":"eastus","series":"ND","gpus":99999999999}`,
		`{}`, `null`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, admin bool) {
		tok := q.tokens["acme"]
		if admin {
			tok = q.admin
		}
		before := q.keys(t)
		rec := q.do("PUT", "/v1/quotas", tok, body)
		sent := "PUT /v1/quotas " + string(body)
		if rec.Code == http.StatusOK {
			got := decode[QuotaSetBody](t, rec)
			if !admin || got.GPUs < 0 || got.GPUs > server.MaxQuotaGPUs || (got.Series != "ND" && got.Series != "NC") ||
				!slices.Contains([]string{"acme", "globex", "copilot", "hobbyist", "research"}, got.Tenant) {
				t.Fatalf("%s: set %+v (admin %v)", sent, got, admin)
			}
			return
		}
		refused(t, rec, sent)
		if after := q.keys(t); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s: refused (%d) but changed the store", sent, rec.Code)
		}
	})
}

// Any query of GET /v1/audit is a 200 or a 4xx naming the parameter.
func FuzzAuditQuery(f *testing.F) {
	q := newQuotaEnv(f)
	for _, s := range []string{"", "since=24h", "since=2026-06-01T00:00:00Z", "since=9999999d", "since=-5h", "since=1800-01-01",
		"actor=acme", "limit=0", "limit=10001", "limit=x", "foo=1", "since=3000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		vals, err := url.ParseQuery(query)
		if err != nil {
			return // the server reads the query with url.Values too
		}
		query = vals.Encode()
		rec := q.do("GET", "/v1/audit?"+query, q.admin, nil)
		if rec.Code == http.StatusOK {
			var log AuditLogBody
			if err := json.Unmarshal(rec.Body.Bytes(), &log); err != nil {
				t.Fatalf("?%s: %v", query, err)
			}
			return
		}
		refused(t, rec, "GET /v1/audit?"+query)
	})
}

// QuotaSetBody is what PUT /v1/quotas answers.
type QuotaSetBody struct {
	Tenant, Region, Series string
	GPUs                   int
}

// AuditLogBody is what GET /v1/audit answers.
type AuditLogBody struct {
	Records []struct {
		ID, Actor, Action, Object string
	} `json:"records"`
	More bool `json:"more"`
}

// The routes as a tenant and as the admin: a tenant may not approve its
// own request (403) nor read the audit log; the approval is in it.
func TestQuotaRoutes(t *testing.T) {
	q := newQuotaEnv(t)
	acme := q.tokens["acme"]
	for _, path := range []string{"/v1/quota-requests/" + q.pending + "/approve", "/v1/quota-requests/" + q.pending + "/deny"} {
		if rec := q.do("POST", path, acme, []byte(`{"reason":"mine"}`)); rec.Code != http.StatusForbidden {
			t.Fatalf("a tenant POST %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := q.do("GET", "/v1/audit", acme, nil); rec.Code != http.StatusForbidden {
		t.Fatalf("a tenant read the audit log: %d", rec.Code)
	}
	if rec := q.do("GET", "/v1/quota-requests", q.tokens["globex"], nil); rec.Code != 200 || strings.Contains(rec.Body.String(), q.pending) {
		t.Fatalf("globex lists %d %s", rec.Code, rec.Body)
	}
	rec := q.do("POST", "/v1/quota-requests/"+q.pending+"/approve", q.admin, nil)
	if rec.Code != 200 || decode[QuotaRequest](t, rec).State != "approved" {
		t.Fatalf("approve: %d %s", rec.Code, rec.Body)
	}
	rec = q.do("GET", "/v1/audit?actor=admin", q.admin, nil)
	log := decode[AuditLogBody](t, rec)
	if len(log.Records) != 1 || log.Records[0].Action != "quota.approve" || log.Records[0].Object != "quota-request/"+q.pending {
		t.Fatalf("audit: %s", rec.Body)
	}
	rec = q.do("GET", "/v1/quota-requests?state=approved", acme, nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), q.pending) {
		t.Fatalf("acme's approved requests: %d %s", rec.Code, rec.Body)
	}
	var body struct {
		Quotas []Quota `json:"quotas"`
	}
	if err := json.Unmarshal(q.do("GET", "/v1/quotas", q.admin, nil).Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range body.Quotas {
		found = found || (x.Tenant == "acme" && x.Region == "eastus" && x.Series == "ND" && x.GPUs == 32)
	}
	if !found {
		t.Fatalf("GET /v1/quotas after approval: %+v", body.Quotas)
	}
}
