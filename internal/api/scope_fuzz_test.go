package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
)

// scopeLab is the fixture of FuzzScope: two tenants with a job bound to a
// node each, a queued job each, a reservation each and an inference
// endpoint each (with a queued replica); two registered nodes with their
// tokens; the endpoints' tokens; the admin; and a principal with no token.
type scopeLab struct {
	t        testing.TB
	st       store.Store
	srv      *server.Server
	h        http.Handler
	routes   []route
	tenants  []string          // copilot, acme
	nodes    []string          // the registered nodes
	tokens   map[string]string // principal name (tenant, "node:N", "endpoint:E", "admin") -> token
	eps      []string          // the endpoints, copilot's and acme's
	names    []string          // principal names, in a fixed order for the fuzzer
	fileRsvs []model.Reservation
}

var scopeNodes = []string{"eastus-t4x1-01", "eastus-t4x1-02"}

func newScopeLab(t testing.TB) *scopeLab {
	t.Helper()
	fleet, ten := servertest.Example(t)
	dir := t.TempDir()
	st := servertest.Store(t, dir)
	clock := server.NewManualClock(t0)
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{Store: st, Fleet: fleet, Tenancy: ten, Clock: clock, Nodes: server.Agents{}})
	if err != nil {
		t.Fatal(err)
	}
	lab := &scopeLab{t: t, st: st, srv: srv, tenants: []string{"copilot", "acme"}, nodes: scopeNodes,
		tokens: map[string]string{}, fileRsvs: ten.Reservations}
	if lab.tokens["admin"], _, err = srv.EnsureAdminToken(ctx, filepath.Join(dir, "admin-token")); err != nil {
		t.Fatal(err)
	}
	admin := server.Principal{Admin: true}
	for i, tn := range lab.tenants {
		if lab.tokens[tn], err = srv.CreateToken(ctx, tn); err != nil {
			t.Fatal(err)
		}
		// A bound job (one whole T4: one per node) and a queued one (no
		// H100 node is registered), with a secret in their env.
		for k, res := range []string{`gpus_per_instance: 1, gpu_models: [T4]`, `gpus_per_instance: 8, gpu_models: [H100]`} {
			doc := fmt.Sprintf("name: %s-job-%d\ntenant: %s\ncommand: [python, run.py]\nenv: {SECRET: %s}\n"+
				"resources: {%s}\nplacement: {regions: [eastus]}\n", tn, k, tn, secret(tn, k), res)
			specs, err := spec.ParseJobs("job", []byte(doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Submit(ctx, admin, specs[0]); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := srv.CreateReservation(ctx, admin, model.Reservation{Name: tn + "-rsv", Owner: tn, SKU: "NC64-T4x4",
			Region: "eastus", Count: 1, Start: t0.AddDate(4, 0, i+1), End: t0.AddDate(4, 1, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range lab.nodes {
		if lab.tokens["node:"+n], err = srv.CreateNodeToken(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := srv.RegisterNode(ctx, n, []server.GPU{{Index: 0, UUID: "GPU-" + n, Model: "T4"}}, "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	bound := map[string]bool{}
	for _, j := range mustJobs(t, srv, admin, server.JobFilter{}) {
		if n := lastNodes(j); len(n) == 1 {
			bound[n[0]] = true
			if _, err := srv.AppendLog(t.Context(), admin, j.ID, 1, []byte("log of "+j.ID+"\n"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(bound) != 2 {
		t.Fatalf("want a job bound on each node, got %v", bound)
	}
	// An endpoint per tenant, created once both nodes are full: its
	// replica stays queued. Its token is in the replica's env.
	for _, tn := range lab.tenants {
		name := tn + "-ep"
		specs, err := spec.ParseEndpoints("ep", []byte("{name: "+name+", tenant: "+tn+", model: m, command: [serve], "+
			"resources: {gpu_milli: 250, gpu_models: [T4]}, placement: {regions: [eastus]}, slo: {p95_ms: 100}, throughput: {T4: 10}}"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.CreateEndpoint(ctx, server.Principal{Tenant: tn}, specs[0]); err != nil {
			t.Fatal(err)
		}
		lab.eps = append(lab.eps, name)
		for _, j := range mustJobs(t, srv, admin, server.JobFilter{Tenant: tn}) {
			if j.Spec.Labels[endpoint.LabelEndpoint] == name {
				lab.tokens["endpoint:"+name] = j.Spec.Env[endpoint.EnvEndpointToken]
			}
		}
		if lab.tokens["endpoint:"+name] == "" {
			t.Fatalf("no replica of endpoint %s", name)
		}
		// A pending quota request per tenant: its ID is a marker of it.
		if _, err := srv.RequestQuota(ctx, server.Principal{Tenant: tn}, model.Quota{Region: "eastus", Series: "NC", GPUs: 40}, "lab"); err != nil {
			t.Fatal(err)
		}
	}
	lab.names = []string{"copilot", "acme", "admin", "node:" + lab.nodes[0], "node:" + lab.nodes[1], "none", "forged",
		"endpoint:" + lab.eps[0], "endpoint:" + lab.eps[1], "metrics"}
	lab.tokens["forged"] = "not-a-token"
	if lab.tokens["metrics"], _, err = srv.CreateTokenFor(ctx, server.TokenOptions{Scope: server.ScopeMetrics}); err != nil {
		t.Fatal(err)
	}
	h := newHandler(Config{Server: srv, Rate: -1, Now: clock.Now})
	lab.routes = h.routes()
	lab.h = New(Config{Server: srv, Rate: -1, Now: clock.Now})
	return lab
}

func secret(tenant string, k int) string { return fmt.Sprintf("s3cr3t-%s-%d", tenant, k) }

func lastNodes(j *model.Job) []string {
	if len(j.Status.Attempts) == 0 {
		return nil
	}
	return j.Status.Attempts[len(j.Status.Attempts)-1].Nodes
}

// world is what the lab holds at one moment, as the admin sees it.
type world struct {
	kvs  map[string]store.KV
	jobs map[string]*model.Job
	rsvs map[string]model.Reservation
	logs map[string]string // job -> its latest attempt's log
	eps  map[string]string // endpoint -> its tenant
}

func (lab *scopeLab) world() world {
	ctx := context.Background()
	kvs, _, err := lab.st.List(ctx, "")
	if err != nil {
		lab.t.Fatal(err)
	}
	admin := server.Principal{Admin: true}
	w := world{kvs: map[string]store.KV{}, jobs: map[string]*model.Job{}, rsvs: map[string]model.Reservation{}, logs: map[string]string{},
		eps: map[string]string{}}
	for _, kv := range kvs {
		w.kvs[kv.Key] = kv
	}
	jobs, err := lab.srv.Jobs(ctx, admin, server.JobFilter{})
	if err != nil {
		lab.t.Fatal(err)
	}
	for _, j := range jobs {
		w.jobs[j.ID] = j
		if c, err := lab.srv.Log(ctx, admin, j.ID, 0, 0); err == nil {
			w.logs[j.ID] = string(c.Data)
		}
	}
	for _, r := range lab.srv.Reservations(admin) {
		w.rsvs[r.Name] = r
	}
	eps, err := lab.srv.Endpoints(ctx, admin)
	if err != nil {
		lab.t.Fatal(err)
	}
	for _, e := range eps {
		w.eps[e.Spec.Name] = e.Spec.Tenant
	}
	return w
}

// owner says who may change or read the object under key: a tenant, or
// "node:N" for a node's record; "admin" for everything else. A job also
// answers the nodes of its latest attempt.
func (w world) owner(key string) (string, []string) {
	switch {
	case strings.HasPrefix(key, "/jobs/"):
		if j, ok := w.jobs[strings.TrimPrefix(key, "/jobs/")]; ok {
			return j.Spec.Tenant, lastNodes(j)
		}
	case strings.HasPrefix(key, "/reservations/"):
		if r, ok := w.rsvs[strings.TrimPrefix(key, "/reservations/")]; ok {
			return r.Owner, nil
		}
	case strings.HasPrefix(key, "/nodes/"):
		return "node:" + strings.TrimPrefix(key, "/nodes/"), nil
	case strings.HasPrefix(key, "/endpoints/"):
		if tn, ok := w.eps[strings.TrimPrefix(key, "/endpoints/")]; ok {
			return tn, nil
		}
	case strings.HasPrefix(key, "/quota-requests/"), strings.HasPrefix(key, "/audit/"):
		// A tenant's own quota requests, and the audit records of what
		// it did itself.
		var rec struct {
			Tenant string `json:"tenant"`
			Actor  string `json:"actor"`
		}
		if json.Unmarshal(w.kvs[key].Value, &rec) == nil && rec.Tenant+rec.Actor != "" {
			return rec.Tenant + rec.Actor, nil
		}
	case strings.HasPrefix(key, "/tokens/"):
		// An endpoint's token is its tenant's, made and deleted with it.
		var rec struct {
			Endpoint string `json:"endpoint"`
		}
		if json.Unmarshal(w.kvs[key].Value, &rec) == nil && rec.Endpoint != "" {
			if tn, ok := w.eps[rec.Endpoint]; ok {
				return tn, nil
			}
		}
	}
	return "admin", nil
}

// mayTouch reports whether principal may change or read an object owned by
// owner and bound to nodes.
func mayTouch(principal, owner string, nodes []string) bool {
	switch {
	case principal == "admin" || principal == owner:
		return true
	case strings.HasPrefix(principal, "node:"):
		return slices.Contains(nodes, strings.TrimPrefix(principal, "node:"))
	}
	return false
}

// markers are strings that only someone who may read an object can see:
// the secrets in jobs' env, jobs' IDs, reservations' names and start
// times, and log text.
func (w world) markers() map[string]struct {
	owner string
	nodes []string
} {
	out := map[string]struct {
		owner string
		nodes []string
	}{}
	for id, j := range w.jobs {
		for _, v := range j.Spec.Env {
			out[v] = struct {
				owner string
				nodes []string
			}{j.Spec.Tenant, lastNodes(j)}
		}
		out[id] = struct {
			owner string
			nodes []string
		}{j.Spec.Tenant, lastNodes(j)}
	}
	for key, kv := range w.kvs {
		var q struct{ ID, Tenant string }
		if strings.HasPrefix(key, "/quota-requests/") && json.Unmarshal(kv.Value, &q) == nil {
			out[q.ID] = struct {
				owner string
				nodes []string
			}{q.Tenant, nil}
		}
	}
	for name, r := range w.rsvs {
		out[name] = struct {
			owner string
			nodes []string
		}{r.Owner, nil}
		if !r.Start.IsZero() {
			out[r.Start.UTC().Format("2006-01-02T15:04:05Z")] = struct {
				owner string
				nodes []string
			}{r.Owner, nil}
		}
	}
	return out
}

// FuzzScope sends any principal's request to any route, with path values
// drawn from every object (others' included), and holds the API to its
// scopes: a tenant never reads (in the response) or changes (in the store,
// or a log) another tenant's object; a node token never acts outside its
// node and the jobs bound there; only the admin reaches admin endpoints;
// a node token reaches only the agent endpoints and the checkpoint.
func FuzzScope(f *testing.F) {
	lab := newScopeLab(f)
	bodies := map[string]string{
		"POST /v1/jobs":                          `{"name":"fz","resources":{"gpu_milli":250,"gpu_models":["T4"]},"command":["x"]}`,
		"POST /v1/jobs/{id}/checkpoint":          `{"path":"/ckpt/9"}`,
		"POST /v1/nodes/{name}/job-files":        `{"jobs":["copilot-job-0"]}`,
		"POST /v1/nodes/{name}/health":           `{"healthy":false,"detail":"exit status 1: XID 79"}`,
		"POST /v1/reservations":                  `{"name":"fz-rsv","owner":"acme","sku":"NC64-T4x4","region":"eastus","count":1,"start":"2031-01-01T00:00:00Z","end":"2031-01-02T00:00:00Z"}`,
		"POST /v1/tokens":                        `{"tenant":"acme","name":"fz","ttl":"1h"}`,
		"PATCH /v1/jobs/{id}":                    `{"priority":"spot:3"}`,
		"POST /v1/nodes/{name}/register":         `{"gpus":[{"index":0,"uuid":"GPU-z","model":"T4","memory_mib":15360}],"address":"10.0.0.9"}`,
		"POST /v1/jobs/{id}/attempts/{n}/events": `{"type":"started","rank":0}`,
		"POST /v1/jobs/{id}/attempts/{n}/log":    "appended\n",
		"POST /v1/endpoints":                     `{"name":"fz-ep","model":"m","command":["x"],"resources":{"gpu_milli":250,"gpu_models":["T4"]},"slo":{"p95_ms":100},"throughput":{"T4":10}}`,
		"POST /v1/endpoints/{name}/scale":        `{"min_replicas":1,"max_replicas":2}`,
		"POST /v1/endpoints/{name}/metrics":      `{"requests_per_sec":5,"p95_ms":10,"utilisation":0.5,"replica":"r"}`,
		"POST /v1/quota-requests":                `{"region":"eastus","series":"NC","gpus":64,"reason":"fz"}`,
		"POST /v1/quota-requests/{id}/deny":      `{"reason":"fz"}`,
		"PUT /v1/quotas":                         `{"tenant":"acme","region":"eastus","series":"NC","gpus":3}`,
		"POST /v1/instances":                     `{"sku":"NC64-T4x4","region":"eastus","tenant":"acme","priority":"spot"}`,
		"PUT /v1/policies":                       "scheduling_policies:\n  - {name: p, conditions: [{resource_type: gpu_cluster, utilization_threshold: 1%}], actions: [{type: migrate, target: batch_jobs, destination: low_priority_pool}]}\n",
	}
	for ri, rt := range lab.routes {
		for pi := range lab.names {
			// Each principal on each route, with the path naming its own
			// objects and others'.
			objs := []uint8{0, 1, 2, 3, 4, 7}
			if strings.Contains(rt.pattern, "/v1/endpoints/") {
				// The endpoints' names come after the nodes' and the
				// reservations' (see the names below).
				first := 2 + 1 + 2 + len(lab.fileRsvs)
				objs = []uint8{0, uint8(first), uint8(first + 1)}
			}
			for _, obj := range objs {
				f.Add(uint8(pi), uint8(0), uint8(ri), obj, uint8(0), []byte(bodies[rt.pattern]), "")
			}
		}
	}
	f.Add(uint8(0), uint8(0), uint8(5), uint8(0), uint8(0), []byte(nil), "tenant=acme")
	f.Add(uint8(1), uint8(4), uint8(5), uint8(0), uint8(0), []byte(nil), "state=Running")
	f.Fuzz(func(t *testing.T, who, method, which, obj, attempt uint8, body []byte, query string) {
		principal := lab.names[int(who)%len(lab.names)]
		rt := lab.routes[int(which)%len(lab.routes)]
		m, pattern, _ := strings.Cut(rt.pattern, " ")
		if method%8 >= 4 {
			m = []string{"GET", "POST", "DELETE", "PUT"}[method%4]
		}
		before := lab.world()
		// Path values from every object there is, others' included.
		var ids []string
		for id := range before.jobs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if strings.Contains(pattern, "/v1/quota-requests/") {
			// Quota requests' IDs, others' included.
			ids = ids[:0]
			for key, kv := range before.kvs {
				var q struct{ ID string }
				if strings.HasPrefix(key, "/quota-requests/") && json.Unmarshal(kv.Value, &q) == nil {
					ids = append(ids, q.ID)
				}
			}
			slices.Sort(ids)
		}
		rsvs := []string{"copilot-rsv", "acme-rsv"}
		for _, r := range lab.fileRsvs {
			rsvs = append(rsvs, r.Name)
		}
		names := append(append([]string{}, lab.nodes...), "westus-t4x1-01")
		names = append(names, rsvs...)
		names = append(names, lab.eps...)
		path := strings.NewReplacer(
			"{id}", url.PathEscape(ids[int(obj)%len(ids)]),
			"{name}", url.PathEscape(names[int(obj)%len(names)]),
			"{n}", fmt.Sprint(1+int(attempt)%3),
		).Replace(pattern)
		target := path
		if query != "" {
			target += "?" + url.PathEscape(query)
		}
		// Long polls and followed logs (GETs) end with the request's
		// context. A write keeps the deadline a server's caller would give
		// it: bbolt's fsync alone took over 50 ms on a loaded 2-core VM,
		// and the store's "context deadline exceeded" was then a 500.
		timeout := 50 * time.Millisecond
		if m != http.MethodGet {
			timeout = 10 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, m, "http://allot"+path, bytes.NewReader(body))
		req.URL.RawQuery = strings.TrimPrefix(target[len(path):], "?")
		if tok := lab.tokens[principal]; tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		lab.h.ServeHTTP(rec, req)
		after := lab.world()
		sent := m + " " + path + "?" + req.URL.RawQuery + " " + string(body)

		if rec.Code >= 500 {
			t.Fatalf("%s as %s: %d %s", sent, principal, rec.Code, rec.Body)
		}
		// Scopes: nothing but the admin reaches admin endpoints, and a
		// node token nothing but the agents' and the checkpoint.
		if m == strings.Fields(rt.pattern)[0] && rec.Code < 400 {
			switch {
			case rt.scope == admins && principal != "admin":
				t.Fatalf("%s as %s reached an admin endpoint: %d", sent, principal, rec.Code)
			case rt.scope == tenants && strings.HasPrefix(principal, "node:"):
				t.Fatalf("%s as %s: a node token reached a tenant endpoint: %d", sent, principal, rec.Code)
			case rt.scope == agents && !strings.HasPrefix(principal, "node:") && principal != "admin":
				t.Fatalf("%s as %s reached an agent endpoint: %d", sent, principal, rec.Code)
			case principal == "forged" && rt.scope != anyone,
				principal == "none" && rt.scope != anyone && rt.scope != readers:
				t.Fatalf("%s without a valid token: %d", sent, rec.Code)
			case principal == "metrics" && rt.scope != anyone && rt.scope != readers:
				t.Fatalf("%s as %s: a metrics-reader token reached more than /metrics: %d", sent, principal, rec.Code)
			case strings.HasPrefix(principal, "endpoint:") && rt.scope != anyone &&
				(rt.scope != meters || path != "/v1/endpoints/"+strings.TrimPrefix(principal, "endpoint:")+"/metrics"):
				t.Fatalf("%s as %s: an endpoint token reached more than its own metrics: %d", sent, principal, rec.Code)
			}
		}
		// Changes: every key written or deleted, and every log appended to,
		// belongs to the principal, except what a Plan commit the request
		// ran wrote (POST /v1/instances places at once): the core's
		// decisions, committed with the scheduling fence.
		planRev := int64(-1)
		if fb, fa := before.kvs["/sched/fence"], after.kvs["/sched/fence"]; fa.ModRev != fb.ModRev {
			planRev = fa.ModRev
		}
		for key := range union(before.kvs, after.kvs) {
			b, inB := before.kvs[key]
			a, inA := after.kvs[key]
			if inB == inA && (!inB || b.ModRev == a.ModRev) {
				continue
			}
			if inA && a.ModRev == planRev && strings.HasPrefix(path, "/v1/instances") {
				continue
			}
			if strings.HasPrefix(key, "/audit/") && inB {
				t.Fatalf("%s as %s rewrote or deleted audit record %s: %d %s", sent, principal, key, rec.Code, rec.Body)
			}
			owner, nodes := before.owner(key)
			if !inB {
				owner, nodes = after.owner(key)
			}
			if !mayTouch(principal, owner, nodes) {
				t.Fatalf("%s as %s changed %s of %s (nodes %v): %d %s", sent, principal, key, owner, nodes, rec.Code, rec.Body)
			}
		}
		for id, l := range after.logs {
			if l != before.logs[id] {
				j := before.jobs[id]
				if principal != "admin" && !mayTouch(principal, "", lastNodes(j)) {
					t.Fatalf("%s as %s appended to the log of %s (nodes %v)", sent, principal, id, lastNodes(j))
				}
			}
		}
		// Reads: the response holds no marker of an object the principal
		// may not see, unless the request held it already.
		if principal == "admin" || rt.scope == anyone {
			return
		}
		resp := rec.Body.String()
		for mk, o := range before.markers() {
			if strings.Contains(resp, mk) && !strings.Contains(sent, mk) && !mayTouch(principal, o.owner, o.nodes) {
				t.Fatalf("%s as %s: the response shows %q of %s (nodes %v):\n%s", sent, principal, mk, o.owner, o.nodes, resp)
			}
		}
	})
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// mustJobs lists jobs as p sees them, failing the test on a store error.
func mustJobs(t testing.TB, srv *server.Server, p server.Principal, f server.JobFilter) []*model.Job {
	t.Helper()
	jobs, err := srv.Jobs(t.Context(), p, f)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}
