package api

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/allot-dev/allot/internal/server"
)

// Defaults of Config.
const (
	DefaultRate  = 100 // requests per second per tenant
	DefaultBurst = 200
	// MaxBody is the largest request body accepted.
	MaxBody = 1 << 20
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
	// Now tells the time for rate limiting; nil means the server's clock.
	Now func() time.Time
	// Logger receives request failures; nil means slog.Default().
	Logger *slog.Logger
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3 document of the API.
func OpenAPI() []byte { return openAPI }

type handler struct {
	srv   *server.Server
	log   *slog.Logger
	limit *limiter
	reqs  *prometheus.CounterVec
}

// New returns the HTTP handler of the API, /metrics and the health checks.
func New(cfg Config) http.Handler {
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
	h := &handler{srv: cfg.Server, log: cfg.Logger, limit: newLimiter(cfg.Rate, cfg.Burst, cfg.Now),
		reqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allot_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"})}
	reg := cfg.Server.Registry()
	if err := reg.Register(h.reqs); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			h.reqs = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !h.srv.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready: the first scheduling cycle has not run\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})

	v1 := func(pattern string, admin bool, f func(http.ResponseWriter, *http.Request, server.Principal)) {
		mux.Handle(pattern, h.auth(admin, f))
	}
	v1("POST /v1/jobs", false, h.submit)
	v1("GET /v1/jobs", false, h.listJobs)
	v1("GET /v1/jobs/{id}", false, h.getJob)
	v1("POST /v1/jobs/{id}/cancel", false, h.cancel)
	v1("GET /v1/jobs/{id}/why", false, h.why)
	v1("GET /v1/nodes", true, h.nodes)
	v1("GET /v1/tenants", true, h.tenants)
	v1("GET /v1/partitions", true, h.partitions)
	v1("GET /v1/quotas", true, h.quotas)
	v1("GET /v1/usage", false, h.usage)
	v1("GET /v1/skus", false, h.skus)
	v1("POST /v1/reservations", false, h.createReservation)
	v1("GET /v1/reservations", false, h.listReservations)
	v1("DELETE /v1/reservations/{name}", false, h.deleteReservation)
	v1("POST /v1/tokens", true, h.createToken)
	v1("POST /v1/jobs/{id}/checkpoint", false, h.checkpoint)
	v1("GET /v1/jobs/{id}/logs", false, h.logs)
	// Agents' endpoints: the admin token or a node token, and no rate
	// limit (a fleet's agents heartbeat and poll all the time).
	agent := func(pattern string, f func(http.ResponseWriter, *http.Request, server.Principal)) {
		mux.Handle(pattern, h.authAgent(f))
	}
	agent("POST /v1/nodes/{name}/register", h.register)
	agent("POST /v1/nodes/{name}/heartbeat", h.heartbeat)
	agent("GET /v1/nodes/{name}/assignments", h.assignments)
	agent("POST /v1/jobs/{id}/attempts/{n}/events", h.event)
	agent("POST /v1/jobs/{id}/attempts/{n}/log", h.appendLog)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, codeNotFound, "", "no endpoint "+r.Method+" "+r.URL.Path+"; see /v1/openapi.json")
	})
	return h.count(mux)
}

type principalKey struct{}

// auth authenticates the bearer token, applies the tenant's rate limit and,
// for admin endpoints, requires the admin token.
func (h *handler) auth(admin bool, f func(http.ResponseWriter, *http.Request, server.Principal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="allot"`)
			writeError(w, codeUnauthorized, "", "missing bearer token: send Authorization: Bearer <token>")
			return
		}
		p, ok := h.srv.Authenticate(tok)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="allot", error="invalid_token"`)
			writeError(w, codeUnauthorized, "", "unknown token")
			return
		}
		if ok, wait := h.limit.allow(p.Name()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
			writeError(w, codeRateLimited, "", "too many requests from "+p.Name()+"; retry after the Retry-After seconds")
			return
		}
		if admin && !p.Admin {
			writeError(w, codeForbidden, "", "this endpoint needs the admin token")
			return
		}
		f(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)), p)
	})
}

// authAgent authenticates an agent, without a rate limit: the admin token,
// or a node token, which may act only for its node ({name} in the path;
// the server checks the jobs).
func (h *handler) authAgent(f func(http.ResponseWriter, *http.Request, server.Principal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="allot"`)
			writeError(w, codeUnauthorized, "", "missing bearer token: send Authorization: Bearer <token>")
			return
		}
		p, ok := h.srv.Authenticate(tok)
		if !ok {
			writeError(w, codeUnauthorized, "", "unknown token")
			return
		}
		if !p.Admin && p.Node == "" {
			writeError(w, codeForbidden, "", "agent endpoints need the admin token or a node token")
			return
		}
		if name := r.PathValue("name"); name != "" && !p.Runs(name) {
			writeError(w, codeForbidden, "", "a token of node "+p.Node+" may not act for node "+name)
			return
		}
		f(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)), p)
	})
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// count counts requests by route pattern and status; a panic in a handler
// is answered with 500 and logged, never passed on.
func (h *handler) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
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

// readBody reads a request body of at most MaxBody bytes; over that it
// answers 413 and returns false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, codeBodyTooLarge, "", "request body is over 1 MiB")
			return nil, false
		}
		writeError(w, codeInvalidSpec, "", "read request body: "+err.Error())
		return nil, false
	}
	return body, true
}
