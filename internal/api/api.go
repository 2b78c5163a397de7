package api

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/ui"
)

// Defaults of Config.
const (
	DefaultRate  = 100 // requests per second per tenant
	DefaultBurst = 200
)

// Config configures the API handler.
type Config struct {
	Server *server.Server
	// Rate is each tenant's sustained request rate per second (the admin
	// token counts as one tenant); 0 means DefaultRate, negative disables
	// rate limiting.
	Rate float64
	// Burst is how many requests a tenant may make at once; 0 means
	// DefaultBurst.
	Burst int
	// Limits bound bodies, time and unauthenticated requests; zero fields
	// take their defaults. NewServer applies the rest (timeouts of the
	// connection, --max-conns).
	Limits Limits
	// Now tells the time for rate limiting; nil means the server's clock.
	Now func() time.Time
	// Logger receives request failures; nil means slog.Default().
	Logger *slog.Logger
	// ForwardTransport carries the requests a server that does not lead
	// passes to the leader (forward.go); nil means http.DefaultTransport.
	// With TLS it must trust the leader's certificate.
	ForwardTransport http.RoundTripper
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3 document of the API.
func OpenAPI() []byte { return openAPI }

type handler struct {
	srv     *server.Server
	log     *slog.Logger
	limits  Limits
	limit   *limiter // per tenant
	unauth  *limiter // per source address, of requests with no valid token
	jobs    *limiter // per tenant, of the jobs of batches (--job-rate)
	dry     *gate    // per tenant, dry runs running (--max-dry-runs)
	audited *limiter // per tenant, of its requests that write audit records (--audit-rate)
	reqs    *prometheus.CounterVec
	fwd     *forwarder // to the leader, when this server does not lead
}

// New returns the HTTP handler of the API, /metrics and the health checks.
func New(cfg Config) http.Handler {
	h := newHandler(cfg)
	mux := http.NewServeMux()
	for _, rt := range h.routes() {
		mux.Handle(rt.pattern, h.guard(rt))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, codeNotFound, "", "no endpoint "+r.Method+" "+r.URL.Path+"; see /v1/openapi.json")
	})
	return h.count(h.forward(mux))
}

func newHandler(cfg Config) *handler {
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = cfg.Server.Clock().Now
	}
	l := cfg.Limits.withDefaults()
	return &handler{srv: cfg.Server, log: cfg.Logger, limits: l, fwd: &forwarder{transport: cfg.ForwardTransport},
		limit:   newLimiter(cfg.Rate, cfg.Burst, cfg.Now),
		unauth:  newLimiter(l.UnauthRate, l.UnauthBurst, cfg.Now),
		jobs:    newLimiter(l.JobRate, l.JobBurst, cfg.Now),
		dry:     newGate(l.MaxDryRuns),
		audited: newLimiter(l.AuditRate, l.AuditBurst, cfg.Now),
		reqs: register(cfg.Server.Registry(), prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allot_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}))}
}

// scope says who may call a route.
type scope int

const (
	// anyone: no token needed.
	anyone scope = iota
	// tenants: a tenant's token (the server keeps it to its own objects)
	// or the admin token; rate limited per tenant.
	tenants
	// admins: the admin token only.
	admins
	// agents: the admin token or a node token, which may act only for its
	// own node ({name}) and the jobs bound there (the server checks);
	// not rate limited.
	agents
	// reporters: as tenants, and also a node token for the jobs bound to
	// its node (the server checks): what an agent reports for its jobs.
	reporters
	// meters: as tenants (the server checks the endpoint is theirs), and
	// also the token of endpoint {name}: what its replicas report. An
	// endpoint's token may call nothing else.
	meters
	// readers: anyone; a token, when one is sent, must be valid, and says
	// how much the caller reads (/metrics: server.MetricsFor). A
	// metrics-reader token may call nothing else.
	readers
	// gateways: a gateway token (server.ScopeGateway) or the admin token;
	// not rate limited, as agents are not: a gateway's watch and reports
	// are what keeps every endpoint reachable.
	gateways
)

// route is one endpoint: its ServeMux pattern, who may call it, and its
// handler, called once the token is checked.
type route struct {
	pattern string
	scope   scope
	serve   func(http.ResponseWriter, *http.Request, server.Principal)
}

// routes is the API's route table (docs/api.md).
func (h *handler) routes() []route {
	text := func(body string) func(http.ResponseWriter, *http.Request, server.Principal) {
		return func(w http.ResponseWriter, _ *http.Request, _ server.Principal) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, body)
		}
	}
	return []route{
		{"GET /healthz", anyone, text("ok\n")},
		{"GET /readyz", anyone, h.ready},
		{"GET /metrics", readers, h.metrics},
		{"GET /v1/openapi.json", anyone, func(w http.ResponseWriter, _ *http.Request, _ server.Principal) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(openAPI)
		}},
		{"GET /ui", anyone, func(w http.ResponseWriter, r *http.Request, _ server.Principal) {
			http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
		}},
		{"GET /ui/{file...}", anyone, func(w http.ResponseWriter, r *http.Request, _ server.Principal) { ui.Serve(w, r.PathValue("file")) }},
		{"POST /v1/jobs", tenants, h.submit},
		{"POST /v1/jobs/batch", tenants, h.submitBatch},
		{"GET /v1/jobs", tenants, h.listJobs},
		{"GET /v1/jobs/{id}", tenants, h.getJob},
		{"POST /v1/jobs/{id}/cancel", tenants, h.cancel},
		{"POST /v1/jobs/{id}/hold", tenants, h.hold},
		{"POST /v1/jobs/{id}/release", tenants, h.release},
		{"POST /v1/jobs/{id}/requeue", tenants, h.requeue},
		{"PATCH /v1/jobs/{id}", tenants, h.patchJob},
		{"GET /v1/jobs/{id}/why", tenants, h.why},
		{"GET /v1/jobs/{id}/logs", tenants, h.logs},
		{"POST /v1/jobs/{id}/checkpoint", reporters, h.checkpoint},
		{"GET /v1/nodes", admins, h.nodes},
		{"GET /v1/nodes/{name}", admins, h.node},
		{"POST /v1/nodes/{name}/drain", admins, h.drainNode},
		{"POST /v1/nodes/{name}/resume", admins, h.resumeNode},
		{"GET /v1/tenants", admins, h.tenants},
		{"GET /v1/partitions", admins, h.partitions},
		{"GET /v1/quotas", admins, h.quotas},
		{"PUT /v1/quotas", admins, h.setQuota},
		{"PUT /v1/registry-credentials/{registry}", tenants, h.setRegistryCredential},
		{"GET /v1/registry-credentials", tenants, h.listRegistryCredentials},
		{"DELETE /v1/registry-credentials/{registry}", tenants, h.deleteRegistryCredential},
		{"POST /v1/quota-requests", tenants, h.createQuotaRequest},
		{"GET /v1/quota-requests", tenants, h.listQuotaRequests},
		{"POST /v1/quota-requests/{id}/approve", admins, h.approveQuotaRequest},
		{"POST /v1/quota-requests/{id}/deny", admins, h.denyQuotaRequest},
		{"GET /v1/audit", admins, h.audit},
		{"GET /v1/alerts", admins, h.alerts},
		{"GET /v1/usage", tenants, h.usage},
		{"GET /v1/accounting", tenants, h.accounting},
		{"GET /v1/cost", tenants, h.cost},
		{"GET /v1/skus", tenants, h.skus},
		{"POST /v1/reservations", tenants, h.createReservation},
		{"GET /v1/reservations", tenants, h.listReservations},
		{"GET /v1/reservations/{name}", tenants, h.getReservation},
		{"DELETE /v1/reservations/{name}", tenants, h.deleteReservation},
		{"POST /v1/instances", tenants, h.createInstance},
		{"GET /v1/instances", tenants, h.listInstances},
		{"GET /v1/instances/{id}", tenants, h.getInstance},
		{"DELETE /v1/instances/{id}", tenants, h.deleteInstance},
		{"POST /v1/tokens", admins, h.createToken},
		{"GET /v1/tokens", admins, h.listTokens},
		{"DELETE /v1/tokens/{id}", admins, h.revokeToken},
		{"PUT /v1/policies", admins, h.applyPolicies},
		{"GET /v1/policies", admins, h.listPolicies},
		{"DELETE /v1/policies", admins, h.deletePolicies},
		{"DELETE /v1/policies/{name}", admins, h.deletePolicy},
		{"POST /v1/endpoints", tenants, h.createEndpoint},
		{"GET /v1/endpoints", tenants, h.listEndpoints},
		{"GET /v1/endpoints/{name}", tenants, h.getEndpoint},
		{"POST /v1/endpoints/{name}/scale", tenants, h.scaleEndpoint},
		{"POST /v1/endpoints/{name}/restart", tenants, h.endpointAction(h.srv.RestartEndpoint)},
		{"POST /v1/endpoints/{name}/undo", tenants, h.endpointAction(h.srv.UndoEndpoint)},
		{"PUT /v1/endpoints/{name}", tenants, h.updateEndpoint},
		{"DELETE /v1/endpoints/{name}", tenants, h.deleteEndpoint},
		{"POST /v1/endpoints/{name}/metrics", meters, h.endpointMetrics},
		{"GET /v1/routes", gateways, h.routeTable},
		{"POST /v1/gateway/reports", gateways, h.gatewayReport},
		{"POST /v1/nodes/{name}/register", agents, h.register},
		{"POST /v1/nodes/{name}/heartbeat", agents, h.heartbeat},
		{"POST /v1/nodes/{name}/health", agents, h.health},
		{"GET /v1/nodes/{name}/assignments", agents, h.assignments},
		{"POST /v1/nodes/{name}/job-files", agents, h.jobFiles},
		{"POST /v1/jobs/{id}/attempts/{n}/events", agents, h.event},
		{"POST /v1/jobs/{id}/attempts/{n}/log", agents, h.appendLog},
	}
}

// metrics serves the series p may read (server.MetricsFor): every one for
// the admin and a metrics-reader token, a tenant's own and the fleet's for
// a tenant's token, the fleet's alone without a token.
func (h *handler) metrics(w http.ResponseWriter, r *http.Request, p server.Principal) {
	promhttp.HandlerFor(h.srv.MetricsFor(r.Context(), p), promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

func (h *handler) ready(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !h.srv.Ready() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "not ready: the first scheduling cycle has not run\n")
		return
	}
	if err := h.srv.StoreReachable(r.Context()); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "not ready: the store does not answer: "+err.Error()+"\n")
		return
	}
	_, _ = io.WriteString(w, "ready\n")
}

// auditedWrites are the routes a tenant may call whose every call writes
// an audit record; --audit-rate bounds them per tenant, so that a loop of
// them cannot grow the audit log (and the store) without end.
var auditedWrites = map[string]bool{
	"POST /v1/reservations":                      true,
	"DELETE /v1/reservations/{name}":             true,
	"POST /v1/quota-requests":                    true,
	"PUT /v1/registry-credentials/{registry}":    true,
	"DELETE /v1/registry-credentials/{registry}": true,
}

type principalKey struct{}

// guard authenticates the bearer token of a route's request before anything
// reads its body, applies the rate limits, and refuses a principal outside
// the route's scope.
func (h *handler) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.scope == anyone || (rt.scope == readers && r.Header.Get("Authorization") == "") {
			rt.serve(w, r, server.Principal{})
			return
		}
		p, ok := h.authenticate(w, r)
		if !ok {
			return
		}
		if c := connOf(r); c != nil {
			c.authenticated()
		}
		if p.Node == "" && rt.scope != agents && rt.scope != gateways {
			if ok, wait := h.limit.allow(p.Name()); !ok {
				w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
				writeError(w, codeRateLimited, "", "too many requests from "+p.Name()+
					"; retry after the Retry-After seconds (limit: --rate-limit, --rate-burst)")
				return
			}
		}
		if msg := refusal(rt.scope, p, r); msg != "" {
			writeError(w, codeForbidden, "", msg)
			return
		}
		if auditedWrites[rt.pattern] && !p.Admin {
			if ok, wait := h.audited.allow(p.Name()); !ok {
				w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
				writeError(w, codeRateLimited, "", "too many changes that the audit log records from "+p.Name()+
					"; retry after the Retry-After seconds (limit: --audit-rate, --audit-burst)")
				return
			}
		}
		rt.serve(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)), p)
	})
}

// authenticate returns whom the request's token speaks for. A request with
// a missing or unknown token is answered 401, or 429 once its source
// address is over --unauth-rate.
func (h *handler) authenticate(w http.ResponseWriter, r *http.Request) (server.Principal, bool) {
	tok, found := bearer(r.Header.Get("Authorization"))
	if found {
		if p, ok := h.srv.Authenticate(tok); ok {
			return p, true
		}
	}
	if ok, wait := h.unauth.allow(source(r)); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		writeError(w, codeRateLimited, "", "too many requests without a valid token from "+source(r)+
			"; retry after the Retry-After seconds (limit: --unauth-rate, --unauth-burst)")
		return server.Principal{}, false
	}
	if !found {
		w.Header().Set("WWW-Authenticate", `Bearer realm="allot"`)
		writeError(w, codeUnauthorized, "", "missing bearer token: send Authorization: Bearer <token>")
		return server.Principal{}, false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="allot", error="invalid_token"`)
	if at, ok := h.srv.TokenExpired(tok); ok {
		writeError(w, codeUnauthorized, "", "token expired at "+at.UTC().Format(time.RFC3339)+"; ask an admin for a new one")
		return server.Principal{}, false
	}
	writeError(w, codeUnauthorized, "", "unknown token")
	return server.Principal{}, false
}

// tokenValid reports whether the token r was authenticated with is still
// accepted: a stream (followed logs) ends once its token is revoked or
// expires, not only when it ends on its own.
func (h *handler) tokenValid(r *http.Request) bool {
	tok, _ := bearer(r.Header.Get("Authorization"))
	_, ok := h.srv.Authenticate(tok)
	return ok
}

// refusal says why p may not call a route of scope s, or "" when it may.
func refusal(s scope, p server.Principal, r *http.Request) string {
	if p.Endpoint != "" && (s != meters || p.Admin || r.PathValue("name") != p.Endpoint) {
		return "an endpoint token may only POST /v1/endpoints/{name}/metrics of its own endpoint"
	}
	if p.Metrics && s != readers {
		return "a metrics-reader token may only GET /metrics"
	}
	if p.Gateway != (s == gateways) && !(s == gateways && p.Admin) {
		if p.Gateway {
			return "a gateway token may only GET /v1/routes and POST /v1/gateway/reports"
		}
		return "this endpoint needs a gateway token (scope gateway) or the admin token"
	}
	switch s {
	case tenants, meters:
		if p.Node != "" {
			return "a node token may call only the agent endpoints and POST /v1/jobs/{id}/checkpoint"
		}
	case admins:
		if !p.Admin {
			return "this endpoint needs the admin token"
		}
	case agents:
		if !p.Admin && p.Node == "" {
			return "agent endpoints need the admin token or a node token"
		}
		if name := r.PathValue("name"); name != "" && !p.Runs(name) {
			return "a token of node " + p.Node + " may not act for node " + name
		}
	}
	return ""
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// statusWriter remembers the status code written. A refusal closes the
// connection: 401, 403, 408 and 429 always, any other error while part of
// the request's body is unread, and the rest of the body is read for at
// most refusalLinger (a client that trickles a body holds nothing once
// refused). A 413 is left to net/http, which closes the connection after
// a half-close and a pause, so that a client still writing a body over
// --max-body reads the 413 instead of a reset; such a client has passed
// authentication, and its body is bounded by --body-timeout.
type statusWriter struct {
	http.ResponseWriter
	code int
	body *bodyReader  // nil when the request has no body
	conn *trackedConn // nil when not known (httptest)
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		w.refuse(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

// refusalLinger is how long a refused request's connection still reads
// (and discards) its body before it closes.
const refusalLinger = 500 * time.Millisecond

func (w *statusWriter) refuse(code int) {
	unread := w.body != nil && !w.body.eof.Load()
	switch code {
	case http.StatusRequestEntityTooLarge:
		return
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests:
	default:
		if code < 400 || !unread {
			return
		}
	}
	w.Header().Set("Connection", "close")
	if w.conn != nil {
		w.conn.setWaiting(true) // it serves no one any more: the first to evict
	}
	if unread {
		// Read what is in flight for a moment more, so that an honest
		// client still writing its body sees the answer rather than a
		// reset, but no longer: a trickler holds nothing.
		_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(refusalLinger))
	}
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bodyReader is a request body that must arrive within --body-timeout: the
// connection's read deadline is set when the headers are in and cleared
// when the body has been read to its end, so the connection's own timeouts
// (and a long-poll's wait for the client to hang up) take over again.
type bodyReader struct {
	io.ReadCloser
	rc  *http.ResponseController
	eof atomic.Bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && b.eof.CompareAndSwap(false, true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// count counts requests by route pattern and status, bounds the time the
// request's body may take, and closes a connection older than
// --conn-max-age after its response; a panic in a handler is answered
// with 500 and logged, never passed on.
func (h *handler) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, conn: connOf(r)}
		if sw.conn != nil && time.Since(sw.conn.opened) >= h.limits.MaxConnAge {
			w.Header().Set("Connection", "close")
		}
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(h.limits.BodyTimeout)) // not supported by httptest: no limit there
			sw.body = &bodyReader{ReadCloser: r.Body, rc: rc}
			r.Body = sw.body
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				h.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
				if sw.code == 0 {
					writeError(sw, codeInternal, "", "internal error; see the server log")
				}
			}
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			route := r.Pattern
			if route == "" || route == "/" {
				route = "other"
			}
			h.reqs.WithLabelValues(route, strconv.Itoa(code)).Inc()
		}()
		next.ServeHTTP(sw, r)
	})
}

// readBody reads a request body of at most --max-body bytes, sent within
// --body-timeout; otherwise it answers 413 or 408 and returns false.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.limits.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeError(w, codeBodyTooLarge, "", "request body is over "+spec.SizeText(h.limits.MaxBody)+" (limit: --max-body)")
		case errors.Is(err, os.ErrDeadlineExceeded):
			writeError(w, codeRequestTimeout, "", "request body not received within "+h.limits.BodyTimeout.String()+
				" (limit: --body-timeout)")
		default:
			writeError(w, codeInvalidSpec, "", "read request body: "+err.Error())
		}
		return nil, false
	}
	return body, true
}
