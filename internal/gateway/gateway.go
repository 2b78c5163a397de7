package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/h1"
)

// Source is where a gateway learns its routes and sends its measurements:
// allot's API (*client.Client), or a test's stand-in.
type Source interface {
	// Routes returns the route table once its version differs from after,
	// or after wait.
	Routes(ctx context.Context, after string, wait time.Duration) (wire.RouteTable, error)
	// ReportGateway posts what the gateway measured.
	ReportGateway(ctx context.Context, r wire.GatewayReport) error
}

// Config is a gateway's.
type Config struct {
	Source Source
	// Name tells this gateway's reports from other gateways'.
	Name string
	// Domain, when set, also routes a request for host NAME.DOMAIN to
	// endpoint NAME, path unchanged.
	Domain string
	// MaxBody bounds a request's body (413 over it); 0 is DefaultMaxBody.
	MaxBody int64
	// ReplicaConcurrency bounds the requests in flight on one replica; 0
	// is no bound.
	ReplicaConcurrency int
	// Retries is how many other replicas a request whose connection failed
	// before it was sent is tried on; 0 is DefaultRetries, negative none.
	Retries int
	// ReportEvery is the interval of reports; 0 is DefaultReportEvery.
	ReportEvery time.Duration
	// Wait is the long poll of the route watch; 0 is DefaultWait.
	Wait time.Duration
	// Transport reaches the replicas; nil is HTTP/1.1 straight to them,
	// without compression, keeping idle connections for a replica's
	// concurrency (replicaTransport).
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// Defaults of Config.
const (
	DefaultMaxBody     = 10 << 20
	DefaultRetries     = 2
	DefaultReportEvery = time.Second
	DefaultWait        = 30 * time.Second
)

// downFor is how long a replica whose connection failed gets no request,
// at least: after it, its readiness check must pass again.
const downFor = time.Second

// Gateway routes requests to the replicas of endpoints. It is an
// http.Handler; Run keeps its routes current and reports its
// measurements.
type Gateway struct {
	cfg     Config
	log     *slog.Logger
	proxy   *httputil.ReverseProxy
	base    http.RoundTripper
	metrics *metrics

	table atomic.Pointer[table] // nil until the first route table

	mu  sync.Mutex          // guards all
	all map[string]*replica // by job: routed ones and those with requests still in flight
}

// table is one version of the routes, never changed once published.
type table struct {
	version   string
	endpoints map[string]*endpoint
}

// endpoint is one route.
type endpoint struct {
	name      string
	public    bool
	callers   map[string]bool // SHA-256 hex of the tokens that may call it
	readiness wire.Readiness
	replicas  []*replica
}

// replica is one replica as the gateway sees it; the same value lives on
// across route tables while its job and address stay.
type replica struct {
	endpoint, job, addr string

	inFlight atomic.Int64
	ready    atomic.Bool  // its readiness check passed since it was last down
	routed   atomic.Bool  // the route lists it
	downTill atomic.Int64 // Unix ns until which it gets no request
	probing  atomic.Bool  // a readiness check runs

	mu    sync.Mutex // guards stats
	stats interval

	m replicaMetrics
}

// New returns a gateway for cfg.
func New(cfg Config) (*Gateway, error) {
	if cfg.Source == nil {
		return nil, errors.New("gateway: no source of routes")
	}
	if cfg.Name == "" {
		return nil, errors.New("gateway: no name")
	}
	if cfg.MaxBody < 0 || cfg.ReplicaConcurrency < 0 || cfg.ReportEvery < 0 || cfg.Wait < 0 {
		return nil, fmt.Errorf("gateway: max body %d, replica concurrency %d, report interval %s and wait %s must not be negative",
			cfg.MaxBody, cfg.ReplicaConcurrency, cfg.ReportEvery, cfg.Wait)
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.ReportEvery == 0 {
		cfg.ReportEvery = DefaultReportEvery
	}
	if cfg.Wait == 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	base := cfg.Transport
	if base == nil {
		base = replicaTransport(cfg.ReplicaConcurrency)
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger, base: base, all: map[string]*replica{}, metrics: newMetrics()}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      roundTripper{g},
		ModifyResponse: handOver,
		// A response without a length (token streaming, server-sent
		// events) is flushed at every write by the proxy itself; one with
		// a length goes out in as few writes as it can.
		FlushInterval: 0,
		BufferPool:    &bufferPool{},
		ErrorHandler:  g.proxyError,
		ErrorLog:      slogLogger(cfg.Logger),
	}
	return g, nil
}

// replicaTransport is the default Config.Transport: HTTP/1.1 in clear to
// the replicas' addresses, straight (never through $HTTP_PROXY), keeping
// at least as many idle connections per replica as it may have requests
// in flight, so that a burst does not close connections the next one
// opens again. It asks for no compression: what the caller accepts goes
// to the replica, and the answer comes back as the replica sent it.
func replicaTransport(concurrency int) http.RoundTripper {
	perReplica := max(512, concurrency)
	dial := (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return h1.New(h1.Config{
		Dial:           dial,
		MaxIdlePerHost: perReplica,
		IdleTimeout:    90 * time.Second,
		Fallback: &http.Transport{
			DialContext:           dial,
			MaxIdleConns:          max(4096, perReplica),
			MaxIdleConnsPerHost:   perReplica,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			DisableCompression:    true,
		},
	})
}

// bufferPool lends the proxy its copy buffers, so that a request does not
// allocate (and the collector clear) 32 KiB. It keeps them as array
// pointers: a slice put back as one costs no allocation.
type bufferPool struct{ p sync.Pool }

const copyBuffer = 32 << 10

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[copyBuffer]byte); ok {
		return v[:]
	}
	return make([]byte, copyBuffer)
}

func (b *bufferPool) Put(buf []byte) {
	if len(buf) == copyBuffer {
		b.p.Put((*[copyBuffer]byte)(buf))
	}
}

// state is one request's, from ServeHTTP to the transport, the response
// hook and the error handler. It is the context the proxy hands on: it
// embeds the caller's request's and answers Value(stateKey{}) with
// itself, which spares a context per request; the bodies the gateway wraps
// live in it, which spares their allocations too.
type state struct {
	context.Context
	ep       *endpoint
	path     string
	w        http.ResponseWriter // the caller's, for the replica's response headers
	tooLarge atomic.Bool
	replica  *replica // that failed it, for the error handler; nil when none did
	noneFree bool     // no replica was below its concurrency limit
	in       limitedBody
	out      measuredBody
}

type stateKey struct{}

func (s *state) Value(key any) any {
	if key == (stateKey{}) {
		return s
	}
	return s.Context.Value(key)
}

// stateOf returns the state a request of the proxy carries; nil for
// another request.
func stateOf(r *http.Request) *state {
	st, _ := r.Context().Value(stateKey{}).(*state)
	return st
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/-/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
		return
	case "/-/metrics":
		g.metrics.serve(w, r)
		return
	}
	name, path := g.target(r)
	t := g.table.Load()
	if t == nil {
		g.refuse(w, name, http.StatusServiceUnavailable, "NotReady", "the gateway has no routes yet")
		return
	}
	ep := t.endpoints[name]
	if ep == nil {
		g.refuse(w, "", http.StatusNotFound, "NotFound", fmt.Sprintf("no endpoint %q", clip(name)))
		return
	}
	if !ep.public {
		tok, ok := bearer(r.Header.Get("Authorization"))
		sum := sha256.Sum256([]byte(tok))
		if !ok || !ep.callers[hex.EncodeToString(sum[:])] {
			w.Header().Set("WWW-Authenticate", `Bearer realm="allot"`)
			g.refuse(w, name, http.StatusUnauthorized, "Unauthorized", "endpoint "+name+" needs a bearer token of its tenant")
			return
		}
	}
	if r.ContentLength > g.cfg.MaxBody {
		g.refuse(w, name, http.StatusRequestEntityTooLarge, "BodyTooLarge", fmt.Sprintf("the body is over %d bytes (limit: --max-body)", g.cfg.MaxBody))
		return
	}
	if !anyReady(ep, time.Now().UnixNano()) {
		w.Header().Set("Retry-After", "1")
		g.refuse(w, name, http.StatusServiceUnavailable, "NotReady", "endpoint "+name+" has no ready replica")
		return
	}
	st := &state{Context: r.Context(), ep: ep, path: path, w: w}
	if r.Body != nil && r.Body != http.NoBody {
		st.in = limitedBody{rc: r.Body, left: g.cfg.MaxBody, st: st}
		r.Body = &st.in
	}
	g.proxy.ServeHTTP(w, r.WithContext(st))
}

// target returns the endpoint a request is for and the path to forward.
func (g *Gateway) target(r *http.Request) (name, path string) {
	if d := g.cfg.Domain; d != "" {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if n, ok := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(d)); ok && n != "" && !strings.Contains(n, ".") {
			return n, "/" + strings.TrimPrefix(r.URL.Path, "/")
		}
	}
	rest := strings.TrimPrefix(r.URL.Path, "/")
	name, path, _ = strings.Cut(rest, "/")
	return name, "/" + path
}

// rewrite points the outgoing request at the endpoint's path; the
// transport picks the replica.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	st := stateOf(pr.In)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = st.ep.name // replaced by the transport
	pr.Out.URL.Path, pr.Out.URL.RawPath = st.path, ""
	pr.Out.Host = ""
	pr.Out.Header.Del("Authorization")
	setForwarded(pr)
}

// setForwarded tells the replica who called and how, as
// ProxyRequest.SetXForwarded does (the proxy has removed what the caller
// sent of these), in one allocation instead of three: X-Forwarded-For
// the caller's address, X-Forwarded-Host the host it asked for,
// X-Forwarded-Proto http or https.
func setForwarded(pr *httputil.ProxyRequest) {
	proto := "http"
	if pr.In.TLS != nil {
		proto = "https"
	}
	v := [...]string{"", pr.In.Host, proto}
	vs := v[:]
	h := pr.Out.Header
	if ip, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
		vs[0] = ip
		h["X-Forwarded-For"] = vs[0:1:1]
	}
	h["X-Forwarded-Host"], h["X-Forwarded-Proto"] = vs[1:2:2], vs[2:3:3]
}

// handOver moves the replica's response headers (the proxy has removed
// the hop-by-hop ones) to the caller's response, where the proxy would
// copy them value by value; it leaves the response without headers, so
// the proxy copies none. A protocol switch keeps its own: the proxy reads
// them.
func handOver(res *http.Response) error {
	st := stateOf(res.Request)
	if st == nil || res.StatusCode == http.StatusSwitchingProtocols {
		return nil
	}
	dst := st.w.Header()
	for k, vv := range res.Header {
		if prior, ok := dst[k]; ok {
			dst[k] = append(prior, vv...)
		} else {
			dst[k] = vv
		}
	}
	clear(res.Header)
	return nil
}

// proxyError answers a request the transport could not complete.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r)
	name := ""
	if st != nil {
		name = st.ep.name
	}
	switch {
	case st != nil && st.tooLarge.Load():
		g.refuse(w, name, http.StatusRequestEntityTooLarge, "BodyTooLarge", fmt.Sprintf("the body is over %d bytes (limit: --max-body)", g.cfg.MaxBody))
	case errors.Is(err, errNoReplica) && st != nil && st.noneFree:
		w.Header().Set("Retry-After", "1")
		g.refuse(w, name, http.StatusServiceUnavailable, "Overloaded", "every ready replica of endpoint "+name+" is at its concurrency limit")
	case errors.Is(err, errNoReplica):
		w.Header().Set("Retry-After", "1")
		g.refuse(w, name, http.StatusServiceUnavailable, "NotReady", "endpoint "+name+" has no ready replica")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The caller left; nobody reads the answer.
	default:
		job := ""
		if st != nil && st.replica != nil {
			job = st.replica.job
		}
		g.log.Warn("gateway: replica failed a request", "endpoint", name, "replica", job, "err", err)
		g.refuse(w, name, http.StatusBadGateway, "BadGateway", "the replica "+job+" of endpoint "+name+" failed the request")
	}
}

// refuse answers an error as the API does.
func (g *Gateway) refuse(w http.ResponseWriter, endpoint string, status int, code, msg string) {
	g.metrics.refused(endpoint, status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

var errNoReplica = errors.New("no ready replica")

// anyReady reports whether ep has a replica that may take a request at
// now (Unix ns).
func anyReady(ep *endpoint, now int64) bool {
	for _, r := range ep.replicas {
		if r.ready.Load() && r.downTill.Load() < now {
			return true
		}
	}
	return false
}

// pick returns the ready replica of ep with the fewest requests in flight,
// not in tried, ties broken from a random start; nil when none may take
// one (noneFree: some were ready but at the concurrency limit); now is in
// Unix ns.
func (g *Gateway) pick(ep *endpoint, tried []*replica, now int64) (best *replica, noneFree bool) {
	n := len(ep.replicas)
	if n == 0 {
		return nil, false
	}
	limit := int64(g.cfg.ReplicaConcurrency)
	start := rand.IntN(n)
	var bestLoad int64
	for i := range n {
		r := ep.replicas[(start+i)%n]
		if !r.ready.Load() || r.downTill.Load() >= now || contains(tried, r) {
			continue
		}
		load := r.inFlight.Load()
		if limit > 0 && load >= limit {
			noneFree = true
			continue
		}
		if best == nil || load < bestLoad {
			best, bestLoad = r, load
		}
	}
	return best, best == nil && noneFree
}

func contains(rs []*replica, r *replica) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
