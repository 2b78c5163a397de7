package server

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Inference endpoints are package endpoint's; the server stores their
// records, runs their replicas as its jobs and audits their changes
// (endpointHost, the package's Host), and offers their operations to the
// API with its principals' checks.

// prefixEndpoints holds inference endpoints by name.
const prefixEndpoints = "/endpoints/"

// endpointHost is the server as package endpoint sees it.
type endpointHost struct{ s *Server }

var _ endpoint.Host = endpointHost{}

// endpointActor is the server acting for endpoint name: it submits and
// cancels the endpoint's replicas with the administrator's rights, and is
// named endpoint:NAME in logs and in the detail of a canceled replica.
func endpointActor(name string) Principal { return Principal{Admin: true, Endpoint: name} }

func (h endpointHost) Now() time.Time { return h.s.clock.Now() }

func (h endpointHost) List(ctx context.Context) ([]store.KV, error) {
	kvs, _, err := h.s.st.List(ctx, prefixEndpoints)
	return kvs, err
}

func (h endpointHost) Get(ctx context.Context, name string) (store.KV, error) {
	return h.s.st.Get(ctx, prefixEndpoints+name)
}

func (h endpointHost) Create(ctx context.Context, name string, rec []byte, token string, now time.Time) error {
	key, tokKey := prefixEndpoints+name, prefixTokens+HashToken(token)
	tok, _ := json.Marshal(tokenRecord{Endpoint: name, CreatedAt: now})
	rev, err := h.s.st.Txn(ctx, store.Txn{If: []store.Cond{store.Absent(key)},
		Then: []store.Op{store.PutOp(key, rec), store.PutOp(tokKey, tok)}})
	if err != nil {
		return err
	}
	h.s.cache.putKV(tokKey, tok, rev)
	return nil
}

func (h endpointHost) Put(ctx context.Context, name string, rec []byte, modRev int64) error {
	key := prefixEndpoints + name
	_, err := h.s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, modRev)}, Then: []store.Op{store.PutOp(key, rec)}})
	return err
}

func (h endpointHost) Delete(ctx context.Context, name string, modRev int64, token string) error {
	key, tokKey := prefixEndpoints+name, prefixTokens+HashToken(token)
	rev, err := h.s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, modRev)},
		Then: []store.Op{store.DeleteOp(key), store.DeleteOp(tokKey)}})
	if err != nil {
		return err
	}
	h.s.cache.delKey(tokKey, rev)
	return nil
}

func (h endpointHost) NewToken() string { return newToken() }

// Replicas returns the jobs labelled as replicas, ended or not, by the
// endpoint they name, oldest first.
func (h endpointHost) Replicas() map[string][]*model.Job {
	out := map[string][]*model.Job{}
	// Ended replicas stay whole in the cache (ended.go).
	for _, j := range h.s.cache.wholeJobs(func(j *model.Job) bool { return endpoint.ReplicaOf(j.Spec.Labels) != "" }) {
		name := endpoint.ReplicaOf(j.Spec.Labels)
		out[name] = append(out[name], j)
	}
	for _, js := range out {
		slices.Reverse(js) // wholeJobs is newest first
	}
	return out
}

func (h endpointHost) Job(id string) (*model.Job, bool) {
	ref, _, ok := h.s.cache.job(id)
	return ref.job, ok && ref.job != nil
}

func (h endpointHost) JobsChanged() <-chan struct{} {
	_, ch := h.s.cache.jobsChanged()
	return ch
}

func (h endpointHost) Submit(ctx context.Context, name string, spec model.JobSpec) (*model.Job, error) {
	return h.s.Submit(ctx, endpointActor(name), spec)
}

func (h endpointHost) Cancel(ctx context.Context, name, job string) error {
	_, err := h.s.Cancel(ctx, endpointActor(name), job)
	return err
}

func (h endpointHost) Admissible(spec model.JobSpec, now time.Time) error {
	return h.s.admissible(h.s.world(), spec, now)
}

func (h endpointHost) CheckLimit(tenant string, n int, field string) error {
	return h.s.checkReplicaLimit(tenant, n, field)
}

func (h endpointHost) Tenant(name string) bool { return h.s.world().tenants[name] }

func (h endpointHost) GPUModel(node string) string {
	w := h.s.world()
	if n, ok := w.nodes[node]; ok {
		return w.fleet.Catalog[n.SKU].GPUModel
	}
	return ""
}

func (h endpointHost) Address(node string) string { return h.s.address(node) }

// Callers returns, per tenant, the hashes of its tokens that have not
// expired, sorted.
func (h endpointHost) Callers() map[string][]string {
	now := h.s.clock.Now()
	out := map[string][]string{}
	c := h.s.cache
	c.mu.RLock()
	for hash, e := range c.tokens {
		if e.p.Tenant != "" && !e.p.Admin && e.p.Node == "" && e.p.Endpoint == "" && !e.expired(now) {
			out[e.p.Tenant] = append(out[e.p.Tenant], hash)
		}
	}
	c.mu.RUnlock()
	for _, hs := range out {
		slices.Sort(hs)
	}
	return out
}

// Audit records c, a Principal (the server passes no other Caller), doing
// action on an endpoint of tenant owner.
func (h endpointHost) Audit(ctx context.Context, c endpoint.Caller, owner, action, object, detail string) {
	h.s.auditOther(ctx, c.(Principal), owner, action, object, detail)
}

// CreateEndpoint stores a new endpoint for p and submits its min_replicas
// replicas (endpoint.Book.Create).
func (s *Server) CreateEndpoint(ctx context.Context, p Principal, spec model.EndpointSpec) (*endpoint.Endpoint, error) {
	return s.ep.Create(ctx, p, spec)
}

// Endpoint returns the endpoint called name as p may see it.
func (s *Server) Endpoint(ctx context.Context, p Principal, name string) (endpoint.Status, error) {
	return s.ep.Get(ctx, p, name)
}

// Endpoints returns the endpoints p may see, by name.
func (s *Server) Endpoints(ctx context.Context, p Principal) ([]endpoint.Status, error) {
	return s.ep.List(ctx, p)
}

// ScaleEndpoint sets the endpoint's min_replicas and max_replicas
// (endpoint.Book.Scale).
func (s *Server) ScaleEndpoint(ctx context.Context, p Principal, name string, minReplicas, maxReplicas int) (*endpoint.Endpoint, error) {
	return s.ep.Scale(ctx, p, name, minReplicas, maxReplicas)
}

// UpdateEndpoint gives the endpoint spec.Name the spec spec, rolling out a
// new template (endpoint.Book.Update).
func (s *Server) UpdateEndpoint(ctx context.Context, p Principal, spec model.EndpointSpec) (*endpoint.Endpoint, error) {
	return s.ep.Update(ctx, p, spec)
}

// RestartEndpoint replaces every replica of endpoint name
// (endpoint.Book.Restart).
func (s *Server) RestartEndpoint(ctx context.Context, p Principal, name string) (*endpoint.Endpoint, error) {
	return s.ep.Restart(ctx, p, name)
}

// UndoEndpoint rolls endpoint name back to its template before the last
// change (endpoint.Book.Undo).
func (s *Server) UndoEndpoint(ctx context.Context, p Principal, name string) (*endpoint.Endpoint, error) {
	return s.ep.Undo(ctx, p, name)
}

// DeleteEndpoint stops every replica of the endpoint, then deletes it and
// its token.
func (s *Server) DeleteEndpoint(ctx context.Context, p Principal, name string) error {
	return s.ep.Delete(ctx, p, name)
}

// ReconcileEndpoints brings every endpoint's replicas in line with its
// metrics at the Clock's now (endpoint.Book.Reconcile).
func (s *Server) ReconcileEndpoints(ctx context.Context) error { return s.ep.Reconcile(ctx) }

// ReportEndpointMetrics records a report for endpoint name from p: the
// endpoint's own token, its tenant or the administrator.
func (s *Server) ReportEndpointMetrics(ctx context.Context, p Principal, name string, r endpoint.Report) error {
	if p.Endpoint != "" && (p.Admin || p.Endpoint != name) {
		return refuse(CodeForbidden, "", "an endpoint token may report only its own endpoint's metrics")
	}
	return s.ep.Report(ctx, p, p.Endpoint != "", name, r)
}

// ReportGateway records what a gateway measured; only a gateway token or
// the administrator may report.
func (s *Server) ReportGateway(ctx context.Context, p Principal, r endpoint.GatewayReport) error {
	if !p.Admin && !p.Gateway {
		return refuse(CodeForbidden, "", "only a gateway token (scope %q) or the admin token may report gateway measurements", ScopeGateway)
	}
	return s.ep.ReportGateway(ctx, r)
}

// Routes returns the route table to p, a gateway token or the
// administrator, once its version differs from after, or when wait has
// passed (at once when wait ≤ 0).
func (s *Server) Routes(ctx context.Context, p Principal, after string, wait time.Duration) (endpoint.RouteTable, error) {
	if !p.Admin && !p.Gateway {
		return endpoint.RouteTable{}, refuse(CodeForbidden, "", "only a gateway token (scope %q) or the admin token may read the routes", ScopeGateway)
	}
	return s.ep.Routes(ctx, after, wait)
}
