package gateway

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
)

// source is a Source that serves one table at a time and keeps the
// reports it is sent.
type source struct {
	mu      sync.Mutex
	t       wire.RouteTable
	changed chan struct{}
	reports []wire.GatewayReport
	down    bool // ReportGateway fails
}

func newSource() *source { return &source{changed: make(chan struct{})} }

func (s *source) set(t wire.RouteTable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t = t
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *source) Routes(ctx context.Context, after string, wait time.Duration) (wire.RouteTable, error) {
	for {
		s.mu.Lock()
		t, ch := s.t, s.changed
		s.mu.Unlock()
		if t.Version != after {
			return t, nil
		}
		select {
		case <-ch:
		case <-time.After(wait):
			return t, nil
		case <-ctx.Done():
			return wire.RouteTable{}, ctx.Err()
		}
	}
}

func (s *source) ReportGateway(_ context.Context, r wire.GatewayReport) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("server unavailable")
	}
	s.reports = append(s.reports, r)
	return nil
}

// reported is the requests the reports that arrived counted.
func (s *source) reported() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, r := range s.reports {
		for _, e := range r.Endpoints {
			for _, rep := range e.Replicas {
				n += rep.Requests
			}
		}
	}
	return n
}

// A report that did not reach the server is not lost: the next one
// carries its requests, or the server would read a rate too low.
func TestReportLostIsCarried(t *testing.T) {
	ok := newReplica(t, func(http.ResponseWriter, *http.Request) {})
	src := newSource()
	src.down = true
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public", addr(ok.Server))}})
	g, url := start(t, src, Config{ReportEvery: 20 * time.Millisecond})
	waitReady(t, g, "chat", 1)
	for range 5 {
		if code, _, _ := get(t, url+"/chat/"); code != http.StatusOK {
			t.Fatalf("chat: %d", code)
		}
	}
	time.Sleep(100 * time.Millisecond) // reports fail meanwhile
	src.mu.Lock()
	src.down = false
	src.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for src.reported() < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := src.reported(); n != 5 {
		t.Fatalf("the reports that arrived counted %d requests, want the 5 sent while the server was down", n)
	}
}

// counted is a replica that counts the requests it was sent.
type counted struct {
	*httptest.Server
	hits atomic.Int64
}

func newReplica(t *testing.T, h http.HandlerFunc) *counted {
	t.Helper()
	c := &counted{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		c.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

func addr(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

func route(name, access string, addrs ...string) wire.Route {
	r := wire.Route{Endpoint: name, Tenant: "t", Access: access, Readiness: wire.Readiness{Path: "/healthz", TimeoutMs: 500}}
	for i, a := range addrs {
		r.Replicas = append(r.Replicas, wire.RouteReplica{Job: name + "-" + string(rune('a'+i)), Address: a})
	}
	return r
}

// start runs a gateway on src and serves it; it waits until every listed
// replica that answers its readiness check is ready.
func start(t *testing.T, src *source, cfg Config) (*Gateway, string) {
	t.Helper()
	cfg.Source, cfg.Name = src, "test"
	if cfg.ReportEvery == 0 {
		cfg.ReportEvery = time.Hour // the tests call Report themselves
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = g.Run(ctx); close(done) }()
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return g, srv.URL
}

// waitReady waits until n replicas of endpoint name are ready.
func waitReady(t *testing.T, g *Gateway, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ready := 0
		if tb := g.table.Load(); tb != nil && tb.endpoints[name] != nil {
			for _, r := range tb.endpoints[name].replicas {
				if r.ready.Load() {
					ready++
				}
			}
		}
		if ready >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d replicas of %s ready after 5s", ready, n, name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func get(t *testing.T, url string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// Bad input: an unknown endpoint is 404 with no replica contacted; a body
// over the limit is 413, announced or not; an endpoint with no ready
// replica is 503 with Retry-After; a replica answering garbage is a 502
// counted against that replica.
func TestBadInput(t *testing.T) {
	ok := newReplica(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	garbage, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	go func() {
		for {
			c, err := garbage.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				if req.URL.Path == "/healthz" {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
					return
				}
				_, _ = io.WriteString(c, "this is not HTTP\r\n\r\n")
			}()
		}
	}()
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{
		route("chat", "public", addr(ok.Server)),
		route("bad", "public", garbage.Addr().String()),
		route("empty", "public"),
	}})
	g, url := start(t, src, Config{MaxBody: 1024})
	waitReady(t, g, "chat", 1)
	waitReady(t, g, "bad", 1)

	if code, _, body := get(t, url+"/nosuch/x"); code != http.StatusNotFound || !strings.Contains(body, "NotFound") {
		t.Errorf("unknown endpoint: %d %s, want 404", code, body)
	}
	if ok.hits.Load() != 0 {
		t.Errorf("a replica was contacted for an unknown endpoint")
	}
	if code, _, _ := get(t, url+"/chat/"); code != http.StatusOK {
		t.Errorf("chat: %d, want 200", code)
	}
	big := strings.Repeat("x", 2048)
	resp, err := http.Post(url+"/chat/", "text/plain", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("announced body over the limit: %d, want 413", resp.StatusCode)
	}
	// A chunked body (no length) over the limit.
	resp, err = http.Post(url+"/chat/", "text/plain", io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d, want 413", resp.StatusCode)
	}
	if code, h, _ := get(t, url+"/empty/"); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Errorf("endpoint without a ready replica: %d, Retry-After %q; want 503 with one", code, h.Get("Retry-After"))
	}
	if code, _, body := get(t, url+"/bad/"); code != http.StatusBadGateway {
		t.Errorf("garbage from the replica: %d %s, want 502", code, body)
	}
	rep := g.Report()
	errs := map[string]uint64{}
	for _, e := range rep.Endpoints {
		for _, r := range e.Replicas {
			errs[r.Job] += r.Errors
		}
	}
	if errs["bad-a"] != 1 || errs["chat-a"] != 0 {
		t.Errorf("errors by replica %v, want 1 against bad-a and none against chat-a", errs)
	}
}

// An endpoint of access tenant takes only its tenant's tokens, and the
// token never reaches the replica; the path is the rest after the name.
func TestAccessAndHeaders(t *testing.T) {
	var seen atomic.Value
	rep := newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization") + "|" + r.URL.Path)
	})
	sum := sha256.Sum256([]byte("s3cret"))
	rt := route("chat", "tenant", addr(rep.Server))
	rt.Callers = []string{hex.EncodeToString(sum[:])}
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{rt}})
	g, url := start(t, src, Config{})
	waitReady(t, g, "chat", 1)
	if code, _, _ := get(t, url+"/chat/v1/complete"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _, _ := get(t, url+"/chat/v1/complete", "Authorization", "Bearer other"); code != http.StatusUnauthorized {
		t.Errorf("another token: %d, want 401", code)
	}
	if code, _, _ := get(t, url+"/chat/v1/complete", "Authorization", "Bearer s3cret"); code != http.StatusOK {
		t.Fatalf("the tenant's token: %d, want 200", code)
	}
	if s, _ := seen.Load().(string); s != "|/v1/complete" {
		t.Errorf("the replica saw Authorization|path %q, want no token and /v1/complete", s)
	}
	if rep.hits.Load() != 1 {
		t.Errorf("the replica got %d requests, want 1 (refused ones never reach it)", rep.hits.Load())
	}
}

// The replica learns who called and how (X-Forwarded-*, whatever the
// caller claimed of them), gets the caller's Accept-Encoding as it was
// (none asked for by the gateway), and its answer's headers reach the
// caller, repeated ones included, hop-by-hop ones not.
func TestForwardedHeaders(t *testing.T) {
	var seen atomic.Value
	rep := newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		seen.Store(strings.Join([]string{r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Host"),
			r.Header.Get("X-Forwarded-Proto"), r.Header.Get("Accept-Encoding")}, "|"))
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("X-Replica", "r1")
		w.Header().Set("Keep-Alive", "timeout=5")
		_, _ = io.WriteString(w, "ok\n")
	})
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public", addr(rep.Server))}})
	g, url := start(t, src, Config{})
	waitReady(t, g, "chat", 1)
	req, err := http.NewRequest(http.MethodGet, url+"/chat/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "api.example.com"
	req.Header.Set("X-Forwarded-For", "10.9.9.9")
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}} // sends no Accept-Encoding
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if s, _ := seen.Load().(string); s != "127.0.0.1|api.example.com|http|" {
		t.Errorf("the replica saw X-Forwarded-For|Host|Proto|Accept-Encoding %q, want 127.0.0.1|api.example.com|http|", s)
	}
	if c := resp.Header.Values("Set-Cookie"); len(c) != 2 || c[0] != "a=1" || c[1] != "b=2" {
		t.Errorf("Set-Cookie %q, want a=1 and b=2", c)
	}
	if resp.Header.Get("X-Replica") != "r1" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("X-Replica %q (want r1), Keep-Alive %q (want none)", resp.Header.Get("X-Replica"), resp.Header.Get("Keep-Alive"))
	}
}

// A replica whose port refuses connections (its process was killed) costs
// no request: each goes to the other replica, and the dead one leaves the
// rotation until its readiness check passes again.
func TestRetryWhenConnectionFails(t *testing.T) {
	live := newReplica(t, func(http.ResponseWriter, *http.Request) {})
	dead := newReplica(t, func(http.ResponseWriter, *http.Request) {})
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public", addr(live.Server), addr(dead.Server))}})
	g, url := start(t, src, Config{})
	waitReady(t, g, "chat", 2)
	dead.Close()
	for i := range 50 {
		if code, _, body := get(t, url+"/chat/"); code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if live.hits.Load() != 50 {
		t.Errorf("the live replica got %d of 50", live.hits.Load())
	}
}

// A response streams: the caller reads the first token before the
// replica has written the last.
func TestStreaming(t *testing.T) {
	release := make(chan struct{})
	rep := newReplica(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "last\n")
	})
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public", addr(rep.Server))}})
	g, url := start(t, src, Config{})
	waitReady(t, g, "chat", 1)
	resp, err := http.Get(url + "/chat/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	close(release)
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
}

// A replica the route no longer lists gets no new request, and is
// reported (not routed, with its requests in flight) until the last one
// ends; then it is forgotten.
func TestRemovedReplicaDrains(t *testing.T) {
	release := make(chan struct{})
	slow := newReplica(t, func(http.ResponseWriter, *http.Request) { <-release })
	other := newReplica(t, func(http.ResponseWriter, *http.Request) {})
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public", addr(slow.Server))}})
	g, url := start(t, src, Config{})
	waitReady(t, g, "chat", 1)
	done := make(chan int, 1)
	go func() { code, _, _ := get(t, url+"/chat/"); done <- code }()
	for slow.hits.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	two := route("chat", "public", addr(other.Server))
	two.Replicas[0].Job = "chat-b"
	src.set(wire.RouteTable{Version: "2", Routes: []wire.Route{two}})
	for g.table.Load().version != "2" {
		time.Sleep(5 * time.Millisecond)
	}
	waitReady(t, g, "chat", 1)
	if code, _, _ := get(t, url+"/chat/"); code != http.StatusOK || other.hits.Load() != 1 || slow.hits.Load() != 1 {
		t.Errorf("after the route change: %d, the new replica got %d, the old %d", code, other.hits.Load(), slow.hits.Load())
	}
	find := func(rep wire.GatewayReport) *wire.GatewayReplicaReport {
		for _, e := range rep.Endpoints {
			for i, r := range e.Replicas {
				if r.Job == "chat-a" {
					return &e.Replicas[i]
				}
			}
		}
		return nil
	}
	if r := find(g.Report()); r == nil || r.Routed || r.InFlight != 1 {
		t.Fatalf("report of the removed replica with a request in flight: %+v", r)
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Errorf("the request in flight on the removed replica: %d", code)
	}
	g.mu.Lock()
	old := g.all["chat-a"]
	g.mu.Unlock()
	for old.inFlight.Load() != 0 { // the proxy closes the body after the caller has it
		time.Sleep(time.Millisecond)
	}
	if r := find(g.Report()); r == nil || r.InFlight != 0 || r.Requests != 1 {
		t.Fatalf("report once drained: %+v", r)
	}
	if r := find(g.Report()); r != nil {
		t.Errorf("the drained replica is still reported: %+v", r)
	}
}

// With a concurrency limit, a replica at it takes no more; with every
// replica at it the answer is 503 with Retry-After.
func TestConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	rep := newReplica(t, func(http.ResponseWriter, *http.Request) { <-release })
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public", addr(rep.Server))}})
	g, url := start(t, src, Config{ReplicaConcurrency: 1})
	waitReady(t, g, "chat", 1)
	done := make(chan int, 1)
	go func() { code, _, _ := get(t, url+"/chat/"); done <- code }()
	for rep.hits.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	code, h, body := get(t, url+"/chat/")
	close(release)
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "Overloaded") {
		t.Errorf("second request at the limit: %d %s, want 503 Overloaded with Retry-After", code, body)
	}
	if c := <-done; c != http.StatusOK {
		t.Errorf("first request: %d", c)
	}
}

// Whatever path or host a caller sends, the gateway answers without
// panicking, and an unknown endpoint never reaches a replica.
func FuzzTarget(f *testing.F) {
	for _, s := range []string{"/chat/x", "/", "//", "/chat", "/-/metrics", "/%2e%2e/x", "/nosuch/../chat/"} {
		f.Add(s, "chat.example.com")
	}
	g, err := New(Config{Source: newSource(), Name: "fuzz", Domain: "example.com"})
	if err != nil {
		f.Fatal(err)
	}
	g.Apply(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public")}})
	f.Fuzz(func(t *testing.T, path, host string) {
		req := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		req.URL.Path, req.Host = path, host
		name, rest := g.target(req)
		if !strings.HasPrefix(rest, "/") {
			t.Fatalf("target(%q, %q) = %q, %q: the path does not start with /", path, host, name, rest)
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if name != "chat" && w.Code != http.StatusNotFound && !strings.HasPrefix(path, "/-/") {
			t.Fatalf("%q on host %q (endpoint %q): %d, want 404", path, host, name, w.Code)
		}
	})
}
