package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	t      testing.TB
	clock  *server.ManualClock
	srv    *server.Server
	h      http.Handler
	admin  string
	tokens map[string]string // tenant -> token
}

func newEnv(t testing.TB, rate float64, burst int) *env {
	t.Helper()
	fleet, ten := servertest.Example(t)
	dir := t.TempDir()
	st := servertest.Store(t, dir)
	clock := server.NewManualClock(t0)
	srv, err := server.New(context.Background(), server.Config{Store: st, Fleet: fleet, Tenancy: ten, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: clock, srv: srv, tokens: map[string]string{}}
	e.admin, _, err = srv.EnsureAdminToken(context.Background(), filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{"copilot", "acme", "hobbyist"} {
		if e.tokens[tn], err = srv.CreateToken(context.Background(), tn); err != nil {
			t.Fatal(err)
		}
	}
	e.h = New(Config{Server: srv, Rate: rate, Burst: burst, Now: clock.Now})
	return e
}

func (e *env) do(method, path, token string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
	return v
}

const chatJSON = `{"name":"chat","resources":{"gpu_milli":250,"gpu_models":["T4"],"cpu":2,"memory":"8Gi"},"placement":{"regions":["eastus"]}}`

func TestAuthAndErrors(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop, acme := e.tokens["copilot"], e.tokens["acme"]
	rec := e.do("POST", "/v1/jobs", cop, []byte(chatJSON))
	if rec.Code != http.StatusCreated {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	job := decode[Job](t, rec)
	if job.Tenant != "copilot" || job.State != "Queued" || job.Spec.Tenant != "copilot" {
		t.Fatalf("job: %+v", job)
	}
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		code, field                     string
	}{
		{"no token", "GET", "/v1/jobs", "", "", 401, "Unauthorized", ""},
		{"wrong token", "GET", "/v1/jobs", "nope", "", 401, "Unauthorized", ""},
		{"tenant on admin endpoint", "GET", "/v1/nodes", cop, "", 403, "Forbidden", ""},
		{"tenant lists alerts", "GET", "/v1/alerts", cop, "", 403, "Forbidden", ""},
		{"tenant creates token", "POST", "/v1/tokens", cop, `{"tenant":"copilot"}`, 403, "Forbidden", ""},
		{"another tenant's job", "GET", "/v1/jobs/" + job.ID, acme, "", 403, "Forbidden", ""},
		{"another tenant's why", "GET", "/v1/jobs/" + job.ID + "/why", acme, "", 403, "Forbidden", ""},
		{"another tenant's cancel", "POST", "/v1/jobs/" + job.ID + "/cancel", acme, "", 403, "Forbidden", ""},
		{"list another tenant", "GET", "/v1/jobs?tenant=copilot", acme, "", 403, "Forbidden", "tenant"},
		{"submit for another tenant", "POST", "/v1/jobs", acme, `{"name":"x","tenant":"copilot"}`, 403, "Forbidden", "tenant"},
		{"bad field", "POST", "/v1/jobs", cop, `{"name":"x","resources":{"gpus_per_instance":99}}`, 400, "InvalidSpec", "resources.gpus_per_instance"},
		{"unknown field", "POST", "/v1/jobs", cop, `{"name":"x","resorces":{}}`, 400, "InvalidSpec", "resorces"},
		{"no sku", "POST", "/v1/jobs", cop, `{"name":"x","resources":{"gpu_models":["Z9"]}}`, 400, "SkuNotAvailable", "resources.gpu_models[0]"},
		{"quota", "POST", "/v1/jobs", acme, `{"name":"x","resources":{"instance_count":4,"gpus_per_instance":8,"gpu_models":["H100"]},"placement":{"regions":["eastus"]}}`, 400, "QuotaExceeded", ""},
		{"elastic backwards", "POST", "/v1/jobs", cop, `{"name":"x","elastic":{"min_instances":4,"max_instances":2}}`, 400, "InvalidSpec", "elastic.max_instances"},
		{"elastic step", "POST", "/v1/jobs", cop, `{"name":"x","elastic":{"min_instances":2,"max_instances":5,"step":2}}`, 400, "InvalidSpec", "elastic.step"},
		{"elastic fraction", "POST", "/v1/jobs", cop, `{"name":"x","resources":{"gpu_milli":500},"elastic":{"min_instances":1,"max_instances":2}}`, 400, "InvalidSpec", "elastic"},
		{"elastic count", "POST", "/v1/jobs", cop, `{"name":"x","resources":{"instance_count":3},"elastic":{"min_instances":1,"max_instances":2}}`, 400, "InvalidSpec", "resources.instance_count"},
		{"elastic over its reservation", "POST", "/v1/jobs", acme, `{"name":"x","resources":{"gpus_per_instance":8,"gpu_models":["A100"]},"placement":{"reservation":"acme-a100-2027"},"elastic":{"min_instances":3,"max_instances":4}}`, 400, "InvalidSpec", "elastic.min_instances"},
		{"two jobs", "POST", "/v1/jobs", cop, "name: a\n---\nname: b\n", 400, "InvalidSpec", ""},
		{"admin without tenant", "POST", "/v1/jobs", e.admin, `{"name":"x"}`, 400, "InvalidSpec", "tenant"},
		{"bad state", "GET", "/v1/jobs?state=Sleeping", cop, "", 400, "InvalidSpec", "state"},
		{"bad region", "GET", "/v1/skus?region=mars", cop, "", 400, "InvalidSpec", "region"},
		{"reservation bad count", "POST", "/v1/reservations", acme, `{"name":"r1","sku":"NC64-T4x4","region":"eastus","count":0}`, 400, "InvalidSpec", "count"},
		{"reservation bad time", "POST", "/v1/reservations", acme, `{"name":"r1","sku":"NC64-T4x4","region":"eastus","count":1,"start":"soon"}`, 400, "InvalidSpec", "start"},
		{"reservation for another", "POST", "/v1/reservations", acme, `{"name":"r1","owner":"globex","sku":"NC64-T4x4","region":"eastus","count":1}`, 403, "Forbidden", "owner"},
		{"reservation admin no owner", "POST", "/v1/reservations", e.admin, `{"name":"r1","sku":"NC64-T4x4","region":"eastus","count":1}`, 400, "InvalidSpec", "owner"},
		{"delete file reservation", "DELETE", "/v1/reservations/globex-h100", e.admin, "", 409, "Conflict", ""},
		{"no endpoint", "GET", "/v1/nothing", cop, "", 404, "NotFound", ""},
		{"token unknown tenant", "POST", "/v1/tokens", e.admin, `{"tenant":"nobody"}`, 400, "InvalidSpec", "tenant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.token, []byte(tc.body))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			got := decode[Error](t, rec)
			if got.Code != tc.code || got.Field != tc.field || got.Message == "" {
				t.Fatalf("error %+v, want code %s field %q", got, tc.code, tc.field)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	e := newEnv(t, 0, 0)
	body := append([]byte(`{"name":"`), bytes.Repeat([]byte("x"), 10<<20)...)
	rec := e.do("POST", "/v1/jobs", e.tokens["copilot"], body)
	if rec.Code != http.StatusRequestEntityTooLarge || decode[Error](t, rec).Code != "BodyTooLarge" {
		t.Fatalf("10 MiB body: %d %s", rec.Code, rec.Body)
	}
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, 1, 5) // the clock stands still: no refill
	cop := e.tokens["copilot"]
	for i := range 5 {
		if rec := e.do("GET", "/v1/jobs", cop, nil); rec.Code != 200 {
			t.Fatalf("request %d: %d", i, rec.Code)
		}
	}
	rec := e.do("GET", "/v1/jobs", cop, nil)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || decode[Error](t, rec).Code != "RateLimited" {
		t.Fatalf("burst: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := e.do("GET", "/v1/jobs", e.tokens["acme"], nil); rec.Code != 200 {
		t.Fatalf("another tenant is limited too: %d", rec.Code)
	}
}

func TestJobLifecycle(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	job := decode[Job](t, e.do("POST", "/v1/jobs", cop, []byte(chatJSON)))
	if err := e.srv.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := decode[Job](t, e.do("GET", "/v1/jobs/"+job.ID, cop, nil))
	if got.State != "Running" || len(got.Allocations) != 1 || got.StartedAt == nil || got.Attempts != 1 {
		t.Fatalf("after a cycle: %+v", got)
	}
	list := decode[map[string][]Job](t, e.do("GET", "/v1/jobs?state=running", cop, nil))
	if len(list["jobs"]) != 1 || list["jobs"][0].ID != job.ID {
		t.Fatalf("list: %+v", list)
	}
	if n := len(decode[map[string][]Job](t, e.do("GET", "/v1/jobs", e.tokens["acme"], nil))["jobs"]); n != 0 {
		t.Fatalf("acme sees %d jobs", n)
	}
	why := decode[Why](t, e.do("GET", "/v1/jobs/"+job.ID+"/why", cop, nil))
	if why.State != "Running" || why.EstimatedStart != nil {
		t.Fatalf("why: %+v", why)
	}
	rec := e.do("POST", "/v1/jobs/"+job.ID+"/cancel", cop, nil)
	if rec.Code != 200 || decode[Job](t, rec).State != "Canceled" {
		t.Fatalf("cancel: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("POST", "/v1/jobs/"+job.ID+"/cancel", cop, nil); rec.Code != 409 {
		t.Fatalf("second cancel: %d", rec.Code)
	}
	// The spec as shown reads back as the same job.
	specs, err := spec.ParseJobs("back", mustJSON(t, got.Spec), nil)
	if err != nil || len(specs) != 1 {
		t.Fatalf("spec does not read back: %v", err)
	}
	if !reflect.DeepEqual(NewJobDocument(specs[0]), got.Spec) {
		t.Fatalf("round trip: %+v != %+v", NewJobDocument(specs[0]), got.Spec)
	}
	for _, path := range []string{"/v1/nodes", "/v1/tenants", "/v1/partitions", "/v1/quotas", "/v1/usage", "/v1/skus?region=eastus&series=NC", "/v1/reservations", "/v1/alerts"} {
		if rec := e.do("GET", path, e.admin, nil); rec.Code != 200 || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec = e.do("POST", "/v1/reservations", e.tokens["acme"], []byte(`{"name":"r1","sku":"NC64-T4x4","region":"eastus","count":1,"start":"2026-01-01T00:00:00Z","end":"2026-06-10T00:00:00Z"}`))
	if rec.Code != 201 || decode[Reservation](t, rec).Owner != "acme" {
		t.Fatalf("reservation: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("DELETE", "/v1/reservations/r1", e.tokens["acme"], nil); rec.Code != 204 {
		t.Fatalf("delete reservation: %d %s", rec.Code, rec.Body)
	}
	tok := decode[Token](t, e.do("POST", "/v1/tokens", e.admin, []byte(`{"tenant":"globex"}`)))
	if rec := e.do("GET", "/v1/jobs", tok.Token, nil); rec.Code != 200 {
		t.Fatalf("new token: %d", rec.Code)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHealthMetricsOpenAPI(t *testing.T) {
	e := newEnv(t, 0, 0)
	if rec := e.do("GET", "/healthz", "", nil); rec.Code != 200 {
		t.Fatalf("healthz %d", rec.Code)
	}
	if rec := e.do("GET", "/readyz", "", nil); rec.Code != 503 {
		t.Fatalf("readyz before a cycle: %d", rec.Code)
	}
	_ = e.srv.Cycle(context.Background())
	if rec := e.do("GET", "/readyz", "", nil); rec.Code != 200 {
		t.Fatalf("readyz after a cycle: %d", rec.Code)
	}
	rec := e.do("GET", "/metrics", "", nil)
	for _, m := range []string{"allot_cycle_duration_seconds", "allot_jobs{state=\"Queued\"}", "allot_binds_total", "allot_preemptions_total", "allot_http_requests_total"} {
		if !strings.Contains(rec.Body.String(), m) {
			t.Errorf("metrics lack %s", m)
		}
	}
	rec = e.do("GET", "/v1/openapi.json", "", nil)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi: %v", err)
	}
	for _, route := range []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /v1/openapi.json", "POST /v1/jobs",
		"GET /v1/jobs", "GET /v1/jobs/{id}", "POST /v1/jobs/{id}/cancel", "GET /v1/jobs/{id}/why", "GET /v1/nodes",
		"GET /v1/tenants", "GET /v1/partitions", "GET /v1/quotas", "GET /v1/usage", "GET /v1/skus",
		"POST /v1/reservations", "GET /v1/reservations", "DELETE /v1/reservations/{name}", "POST /v1/tokens", "GET /v1/alerts"} {
		method, path, _ := strings.Cut(route, " ")
		if _, ok := doc.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("openapi.json lacks %s", route)
		}
	}
}

func FuzzSubmitJob(f *testing.F) {
	e := newEnv(f, -1, 0)
	for _, s := range []string{chatJSON, "", "{", "name: x\nresources: {gpus_per_instance: 2}", `{"name":"a","resources":{"cpu":"5m","gpus_per_instance":0}}`,
		"- {name: a}\n- {name: b}", `{"name":"x","priority":"reserved:9","retry":{"timeout":"1d"}}`, "\x00\xff", "name: &a [*a]",
		`{"name":"e","resources":{"gpus_per_instance":8},"elastic":{"min_instances":2,"max_instances":6,"step":2}}`,
		"name: e\nresources: {instance_count: 3}\nelastic: {min_instances: 2, max_instances: 7, step: 2}\n",
		`{"name":"e","resources":{"gpu_milli":250},"elastic":{"min_instances":-1,"max_instances":1e9}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := e.do("POST", "/v1/jobs", e.tokens["copilot"], body)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code != http.StatusCreated {
			var er Error
			if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Code == "" {
				t.Fatalf("error body %q", rec.Body)
			}
		}
	})
}

func FuzzQueryParams(f *testing.F) {
	e := newEnv(f, -1, 0)
	for _, s := range []string{"state=Queued", "tenant=copilot&state=running", "region=eastus", "series=ND&region=westus", "%zz", "state=%00", "tenant=" + strings.Repeat("a", 300)} {
		f.Add("/v1/jobs", s)
		f.Add("/v1/skus", s)
		f.Add("/v1/usage", s)
	}
	f.Fuzz(func(t *testing.T, path, query string) {
		switch path {
		case "/v1/jobs", "/v1/skus", "/v1/usage", "/v1/reservations":
		default:
			path = "/v1/jobs"
		}
		req, err := http.NewRequest("GET", "http://x"+path, nil)
		if err != nil {
			t.Skip()
		}
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+e.tokens["copilot"])
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %s?%s: %s", rec.Code, path, query, rec.Body)
		}
		_, _ = io.Copy(io.Discard, rec.Body)
	})
}

// FuzzJSONBodies posts random bodies and path values to every endpoint that
// reads a request body, as admin and as a tenant: never a 5xx or a panic,
// and every refusal is an error document.
func FuzzJSONBodies(f *testing.F) {
	e := newEnv(f, -1, 0)
	endpoints := []string{
		"/v1/reservations",
		"/v1/tokens",
		"/v1/jobs/%s/checkpoint",
		"/v1/nodes/%s/register",
		"/v1/nodes/%s/heartbeat",
		"/v1/nodes/%s/health",
		"/v1/jobs/%s/attempts/1/events",
		"/v1/jobs/%s/attempts/1/log",
	}
	for i := range endpoints {
		for _, s := range []string{"", "{", "null", "[]", `{"name":"r","sku":"NC4-T4x1","region":"eastus","count":1}`,
			`{"tenant":"acme"}`, `{"path":"/ckpt/1"}`, `{"gpus":[{"index":0,"uuid":"GPU-a","model":"T4","memory_mib":15360}]}`,
			`{"type":"exited","exit_code":1,"outcome":"Exited"}`, `{"count":-1,"start":"yesterday"}`,
			`{"healthy":false,"detail":"exit status 1"}`, `{"healthy":"no"}`, `{"images":["registry.example/team/train:1"]}`,
			`{"images":["Not An Image",""]}`, `{"images":"x"}`, `{"type":"pulling","pulled":-1}`,
			`{"type":"pulling","rank":0,"node":"eastus-t4x1-01","pulled":5,"pull_total":9}`} {
			f.Add(uint8(i), "eastus-t4x1-01", []byte(s), i%2 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, name string, body []byte, admin bool) {
		path := endpoints[int(which)%len(endpoints)]
		if strings.Contains(path, "%s") {
			path = fmt.Sprintf(path, url.PathEscape(name))
		}
		token := e.tokens["acme"]
		if admin {
			token = e.admin
		}
		rec := e.do("POST", path, token, body)
		if rec.Code >= 500 {
			t.Fatalf("%s: %d for %q: %s", path, rec.Code, body, rec.Body)
		}
		if rec.Code >= 400 {
			var er Error
			if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Code == "" {
				t.Fatalf("%s: error body %q", path, rec.Body)
			}
		}
	})
}

// An administrator's reservation that promises the pool's GPUs more than
// once is created, with a Warning header saying so (server.CreateReservation).
func TestReservationWarningHeader(t *testing.T) {
	e := newEnv(t, 0, 0)
	rec := e.do("POST", "/v1/reservations", e.admin,
		[]byte(`{"name":"big","owner":"hobbyist","sku":"ND96-H100x8-IB","region":"eastus","count":8,"start":"2026-06-02T00:00:00Z","end":"2026-06-03T00:00:00Z"}`))
	if rec.Code != 201 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	got := rec.Header().Values("Warning")
	if len(got) != 1 || !strings.HasPrefix(got[0], `299 - "the pool's GPUs are promised more than once: eastus H100`) || !strings.HasSuffix(got[0], `may wait"`) {
		t.Fatalf("Warning %q", got)
	}
	rec = e.do("POST", "/v1/reservations", e.admin,
		[]byte(`{"name":"small","owner":"hobbyist","sku":"NC64-T4x4","region":"eastus","count":1,"start":"2026-06-02T00:00:00Z","end":"2026-06-03T00:00:00Z"}`))
	if rec.Code != 201 || len(rec.Header().Values("Warning")) != 0 {
		t.Fatalf("%d, Warning %q: want 201 and none", rec.Code, rec.Header().Values("Warning"))
	}
}

// An administrator's cost, usage or job listing for a tenant the tenants
// file does not have answers, with a Warning naming the nearest tenant: an
// empty answer alone reads as a tenant that ran nothing.
func TestUnknownTenantWarning(t *testing.T) {
	e := newEnv(t, 0, 0)
	for _, path := range []string{"/v1/cost?tenant=acmee", "/v1/accounting?tenant=acmee", "/v1/jobs?tenant=acmee", "/v1/jobs?tenant=acmee&limit=5"} {
		rec := e.do("GET", path, e.admin, nil)
		got := rec.Header().Values("Warning")
		if rec.Code != 200 || len(got) != 1 || !strings.Contains(got[0], `no tenant \"acmee\" in the tenants file (did you mean acme?)`) {
			t.Errorf("%s: %d, Warning %q", path, rec.Code, got)
		}
		if rec = e.do("GET", strings.Replace(path, "acmee", "acme", 1), e.admin, nil); rec.Code != 200 || len(rec.Header().Values("Warning")) != 0 {
			t.Errorf("%s for acme: %d, Warning %q: want 200 and none", path, rec.Code, rec.Header().Values("Warning"))
		}
	}
}

func TestWarnQuotes(t *testing.T) {
	rec := httptest.NewRecorder()
	warn(rec, []string{"a \"b\" c\\d\né"})
	if got := rec.Header().Get("Warning"); got != `299 - "a \"b\" c\\d??"` {
		t.Fatalf("got %s", got)
	}
}

// A tenant whose job was preempted for another tenant's reads, in every
// answer about its job, neither that job's ID nor its tenant
// (server.Server.ForViewer); the administrator reads both.
func TestPreemptedTenantReadsNoOtherTenant(t *testing.T) {
	e := newEnv(t, 0, 0)
	submit := func(tenant, doc string) string {
		rec := e.do("POST", "/v1/jobs", e.tokens[tenant], []byte(doc))
		if rec.Code != 201 {
			t.Fatalf("submit: %d %s", rec.Code, rec.Body)
		}
		return decode[Job](t, rec).ID
	}
	spot := submit("hobbyist", `{"name":"sweep","priority":"spot","resources":{"instance_count":2,"gpus_per_instance":4,"gpu_models":["T4"]},"placement":{"regions":["eastus"]}}`)
	if err := e.srv.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	big := submit("copilot", `{"name":"secret-project","resources":{"instance_count":2,"gpus_per_instance":4,"gpu_models":["T4"]},"placement":{"regions":["eastus"]}}`)
	if err := e.srv.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rec := e.do("GET", "/v1/jobs/"+spot, e.admin, nil); !strings.Contains(rec.Body.String(), big) {
		t.Fatalf("admin: no preemption for %s:\n%s", big, rec.Body)
	}
	for _, path := range []string{"/v1/jobs/" + spot, "/v1/jobs/" + spot + "/why", "/v1/jobs", "/v1/jobs?limit=10"} {
		rec := e.do("GET", path, e.tokens["hobbyist"], nil)
		if body := rec.Body.String(); rec.Code != 200 || strings.Contains(body, "secret-project") || strings.Contains(body, "copilot") {
			t.Fatalf("%s as hobbyist: %d\n%s", path, rec.Code, body)
		}
	}
}
