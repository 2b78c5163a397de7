package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/server"
)

// serveLimited serves e's server through NewServer on a loopback port.
func serveLimited(t *testing.T, e *env, l Limits) string {
	addr, _ := serveTable(t, e, l)
	return addr
}

// serveTable is serveLimited that returns the server's connection table
// too.
func serveTable(t *testing.T, e *env, l Limits) (string, *connTable) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, cl := NewServer(Config{Server: e.srv, Rate: -1, Limits: l, Logger: slog.New(slog.DiscardHandler)}, ln)
	go func() { _ = hs.Serve(cl) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String(), cl.(*connTable)
}

// waitWaiting waits until n of ct's connections wait for their clients.
// net/http marks a connection idle just after it wrote the response, which
// the client may read first; an eviction test must not race that mark.
func waitWaiting(t *testing.T, ct *connTable, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ct.mu.Lock()
		k := 0
		for c := range ct.conns {
			if c.waiting {
				k++
			}
		}
		ct.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections wait for their clients after 5 s, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// rawRequest writes head (request line and headers, without the blank line
// that ends them) and then body, and returns the connection and a reader of
// its responses.
func rawRequest(t *testing.T, addr, head, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, r *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// A refused request's connection is closed at once, whatever is left of its
// body: the server never waits for a trickled body it will not use.
func TestRefusalClosesTrickledBody(t *testing.T) {
	e := newEnv(t, -1, 0)
	addr := serveLimited(t, e, Limits{BodyTimeout: time.Minute, UnauthRate: -1})
	for _, tc := range []struct {
		name, head string
		status     int
	}{
		{"no token", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100000", 401},
		{"unknown token", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 100000", 401},
		{"tenant on admin endpoint", "POST /v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + e.tokens["acme"] + "\r\nContent-Length: 100000", 403},
		{"no such endpoint", "POST /v1/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100000", 404},
		{"chunked, no token", "POST /v1/reservations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := rawRequest(t, addr, tc.head, "1\r\n{")
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || !resp.Close {
				t.Errorf("status %d, Connection: %q; want %d and close", resp.StatusCode, resp.Header.Get("Connection"), tc.status)
			}
			if !closedWithin(c, r, 2*time.Second) {
				t.Error("the connection is still open 2s after the refusal")
			}
		})
	}
}

// A body that does not arrive within --body-timeout is answered 408 naming
// the limit; a long-poll GET without a body waits longer than that.
func TestBodyTimeout(t *testing.T) {
	e := newEnv(t, -1, 0)
	addr := serveLimited(t, e, Limits{BodyTimeout: 300 * time.Millisecond})
	start := time.Now()
	c, r := rawRequest(t, addr, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+e.tokens["copilot"]+
		"\r\nContent-Length: 1000", `{"name":`)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "--body-timeout") ||
		took > 3*time.Second {
		t.Errorf("trickled body: %d %s after %v; want 408 naming --body-timeout after about 300ms", resp.StatusCode, body, took)
	}
	if !closedWithin(c, r, 2*time.Second) {
		t.Error("the connection is still open after the 408")
	}

	// A long poll outlives the body timeout: GET carries no body.
	agents := newAgentsEnv(t)
	addr = serveLimited(t, agents.env, Limits{BodyTimeout: 200 * time.Millisecond})
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/nodes/"+agents.node+"/assignments?after=999999&wait=1s", nil)
	req.Header.Set("Authorization", "Bearer "+agents.env.admin)
	start = time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if took := time.Since(start); res.StatusCode != 200 || took < 900*time.Millisecond {
		t.Errorf("long poll: %d after %v; want 200 after the 1s wait", res.StatusCode, took)
	}
}

// agentsEnv is an env whose server runs external agents, with one node
// registered.
type agentsEnv struct {
	env  *env
	node string
}

func newAgentsEnv(t *testing.T) agentsEnv {
	lab := newScopeLab(t)
	return agentsEnv{env: &env{t: t, srv: lab.srv, h: lab.h, admin: lab.tokens["admin"], tokens: lab.tokens}, node: lab.nodes[0]}
}

// Connections over --max-conns are closed as soon as they are accepted
// and counted when every open one is serving a request; the ones under it
// are served.
func TestMaxConns(t *testing.T) {
	e := newEnv(t, -1, 0)
	addr := serveLimited(t, e, Limits{MaxConns: 3, MaxConnsPerAddr: 3, HeaderTimeout: 5 * time.Second})
	var held []net.Conn
	for range 3 {
		// Busy: the server waits for a body that does not come.
		c, _ := rawRequest(t, addr, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+e.admin+
			"\r\nContent-Type: application/json\r\nContent-Length: 100", "{")
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	c, r := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x", "")
	if !closedWithin(c, r, 2*time.Second) {
		t.Fatal("a connection over the cap is still open")
	}
	if m := e.do("GET", "/metrics", "", nil).Body.String(); !strings.Contains(m, "allot_http_connections_rejected_total 1") {
		t.Errorf("metrics do not count the rejected connection:\n%s", m)
	}
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz not served after the held connections closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keepAlive opens a connection, makes one request on it as token (none
// when empty) and leaves it open and idle.
func keepAlive(t *testing.T, addr, token string) (net.Conn, *bufio.Reader) {
	t.Helper()
	head := "GET /healthz HTTP/1.1\r\nHost: x"
	if token != "" {
		head = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token
	}
	c, r := rawRequest(t, addr, head, "")
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("keep-alive request: %d", resp.StatusCode)
	}
	return c, r
}

// Idle connections never lock a new client out: past --max-conns-per-addr
// anonymous ones of its address, or --max-conns in all, a new connection
// takes the place of the one idle longest, anonymous before authenticated;
// authenticated connections do not count against the address's cap.
func TestIdleConnsEvicted(t *testing.T) {
	e := newEnv(t, -1, 0)
	addr, ct := serveTable(t, e, Limits{MaxConns: 5, MaxConnsPerAddr: 3})
	// Each connection waits (net/http marks it idle) before the next is
	// opened, so that the server's order of waiting is the test's.
	authed, ar := keepAlive(t, addr, e.tokens["acme"]) // idle longest of all
	waitWaiting(t, ct, 1)
	var anon []net.Conn
	var readers []*bufio.Reader
	open := func(waiting int) {
		c, r := keepAlive(t, addr, "")
		anon, readers = append(anon, c), append(readers, r)
		waitWaiting(t, ct, waiting)
	}
	for i := range 3 {
		open(2 + i)
	}
	// A fourth anonymous one takes the place of the first.
	open(4)
	if !closedWithin(anon[0], readers[0], 2*time.Second) {
		t.Fatal("the anonymous connection idle longest is still open past --max-conns-per-addr")
	}
	for i := 1; i < len(anon); i++ {
		if closedWithin(anon[i], readers[i], 50*time.Millisecond) {
			t.Fatalf("anonymous connection %d closed; want only the one idle longest", i)
		}
	}
	// Authenticated ones no longer count against the address: the
	// first comes in as an anonymous one in place of anon[1], the second
	// fills the server.
	keepAlive(t, addr, e.tokens["copilot"])
	waitWaiting(t, ct, 4)
	keepAlive(t, addr, e.tokens["copilot"])
	waitWaiting(t, ct, 5)
	// The server is full: a new one takes the place of the anonymous
	// connection idle longest, not of the authenticated one idle longer.
	open(5)
	if !closedWithin(anon[2], readers[2], 2*time.Second) {
		t.Fatal("the server is full and the anonymous connection idle longest is still open")
	}
	if closedWithin(authed, ar, 50*time.Millisecond) {
		t.Fatal("an authenticated connection was evicted while anonymous ones were idle")
	}
	m := e.do("GET", "/metrics", "", nil).Body.String()
	if !strings.Contains(m, "allot_http_connections_evicted_total 3") || !strings.Contains(m, "allot_http_connections_rejected_total 0") {
		t.Errorf("metrics do not count three evictions and no rejection:\n%s", m)
	}
}

// A connection past --conn-max-age is closed after its next response,
// however often it is used.
func TestConnMaxAge(t *testing.T) {
	e := newEnv(t, -1, 0)
	addr := serveLimited(t, e, Limits{MaxConnAge: 300 * time.Millisecond})
	c, r := keepAlive(t, addr, "")
	for i := 0; ; i++ {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			break
		}
		if i > 20 {
			t.Fatal("a connection used every 50 ms is still kept alive after 1 s; want closed after --conn-max-age")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !closedWithin(c, r, 2*time.Second) {
		t.Fatal("the connection past --conn-max-age is still open after its response said close")
	}
}

// Requests with a missing or unknown token are limited per source
// address: 429 with Retry-After naming --unauth-rate; valid tokens are not
// affected.
func TestUnauthenticatedRateLimit(t *testing.T) {
	e := newEnv(t, -1, 0)
	e.h = New(Config{Server: e.srv, Rate: -1, Now: e.srv.Clock().Now, Limits: Limits{UnauthRate: 1, UnauthBurst: 3}})
	for i := range 3 {
		if rec := e.do("GET", "/v1/jobs", "bad", nil); rec.Code != 401 {
			t.Fatalf("request %d: %d, want 401", i, rec.Code)
		}
	}
	rec := e.do("GET", "/v1/jobs", "", nil)
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "--unauth-rate") ||
		rec.Header().Get("Connection") != "close" {
		t.Fatalf("over the burst: %d %q %s", rec.Code, rec.Header(), rec.Body)
	}
	if rec := e.do("GET", "/v1/jobs", e.tokens["acme"], nil); rec.Code != 200 {
		t.Fatalf("a valid token from the same address: %d", rec.Code)
	}
}

func TestSource(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.7:1234":                "192.0.2.7",
		"[::ffff:192.0.2.7]:1":          "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1%eth0]:1": "2001:db8:1:2::/64",
		"garbage":                       "garbage",
	} {
		if got := source(&http.Request{RemoteAddr: addr}); got != want {
			t.Errorf("source(%q) = %q, want %q", addr, got, want)
		}
	}
}

func TestLimiterForgetsFullBuckets(t *testing.T) {
	now := t0
	l := newLimiter(1, 2, func() time.Time { return now })
	l.maxKeys = 10
	for i := range 10 {
		l.allow(fmt.Sprint(i))
	}
	// Full: a new address shares the overflow bucket until the others
	// refill.
	for range 2 {
		if ok, _ := l.allow("new-1"); !ok {
			t.Fatal("the overflow bucket starts full")
		}
	}
	if ok, _ := l.allow("new-2"); ok {
		t.Fatal("new addresses share one bucket while the limiter is full")
	}
	now = now.Add(10 * time.Second)
	if ok, _ := l.allow("new-3"); !ok || len(l.buckets) > 2 {
		t.Fatalf("after a refill: allowed %v with %d buckets, want the full ones forgotten", ok, len(l.buckets))
	}
}

// The API's refusals name the limit that was hit.
func TestLimitRefusals(t *testing.T) {
	e := newEnv(t, -1, 0)
	cop := e.tokens["copilot"]
	// 300 KiB of '<' is 1.8 MiB once stored as JSON (each is \u003c).
	big := `{"name":"big","resources":{"gpu_milli":250,"gpu_models":["T4"]},"command":["x"],"env":{"A":"` +
		strings.Repeat("<", 300<<10) + `"}}`
	rec := e.do("POST", "/v1/jobs", cop, []byte(big))
	if er := decode[Error](t, rec); rec.Code != 413 || er.Code != "BodyTooLarge" || !strings.Contains(er.Message, "limit:") {
		t.Errorf("a job too large to store: %d %+v, want 413 naming the limit", rec.Code, er)
	}
	rec = e.do("POST", "/v1/jobs", cop, []byte(strings.Repeat(" ", 2<<20)))
	if er := decode[Error](t, rec); rec.Code != 413 || !strings.Contains(er.Message, "1 MiB (limit: --max-body)") {
		t.Errorf("2 MiB body: %d %+v", rec.Code, er)
	}
	bomb := "name: bomb\nresources: {gpu_milli: 250, gpu_models: [T4]}\nenv:\n  A0: &v " + strings.Repeat("x", 200<<10) + "\n"
	for i := 1; i < 3000; i++ {
		bomb += fmt.Sprintf("  A%d: *v\n", i)
	}
	start := time.Now()
	rec = e.do("POST", "/v1/jobs", cop, []byte(bomb))
	if er := decode[Error](t, rec); rec.Code != 413 || !strings.Contains(er.Message, "limit:") || time.Since(start) > 2*time.Second {
		t.Errorf("alias bomb: %d %+v after %v; want a quick 413 naming the limit", rec.Code, er, time.Since(start))
	}
	for _, tc := range []struct{ name, body, field string }{
		{"empty command", `{"name":"x","command":[],"resources":{"gpu_milli":250,"gpu_models":["T4"]}}`, "command"},
		{"empty program", `{"name":"x","command":[" "],"resources":{"gpu_milli":250,"gpu_models":["T4"]}}`, "command[0]"},
		{"control character in name", `{"name":"x\u001b[2J","command":["x"],"resources":{"gpu_milli":250,"gpu_models":["T4"]}}`, "name"},
	} {
		rec := e.do("POST", "/v1/jobs", cop, []byte(tc.body))
		if er := decode[Error](t, rec); rec.Code != 400 || er.Field != tc.field {
			t.Errorf("%s: %d %+v, want 400 with field %s", tc.name, rec.Code, er, tc.field)
		}
	}
}

// Node tokens call the agent endpoints and the checkpoint only; every JSON
// body refuses unknown fields; another tenant's reservation is 403.
func TestScopesAndBodies(t *testing.T) {
	lab := newScopeLab(t)
	node := lab.tokens["node:"+lab.nodes[0]]
	do := func(method, path, token, body string) (int, Error) {
		req, _ := http.NewRequestWithContext(context.Background(), method, "http://allot"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		lab.h.ServeHTTP(rec, req)
		var er Error
		if rec.Code >= 400 {
			er = decode[Error](t, rec)
		}
		return rec.Code, er
	}
	for _, path := range []string{"/v1/jobs", "/v1/usage", "/v1/skus", "/v1/reservations", "/v1/nodes"} {
		if code, _ := do("GET", path, node, ""); code != 403 {
			t.Errorf("node token GET %s: %d, want 403", path, code)
		}
	}
	var bound string
	for _, j := range mustJobs(t, lab.srv, server.Principal{Admin: true}, server.JobFilter{}) {
		if n := lastNodes(j); len(n) == 1 && n[0] == lab.nodes[0] {
			bound = j.ID
		}
	}
	if code, er := do("POST", "/v1/jobs/"+bound+"/checkpoint", node, `{"path":"/ckpt/1"}`); code != 200 {
		t.Errorf("node token checkpoints its job: %d %+v", code, er)
	}
	if code, er := do("POST", "/v1/jobs/"+bound+"/checkpoint", node, `{"path":"/ckpt/2","extra":1}`); code != 400 || er.Field != "extra" {
		t.Errorf("checkpoint with an unknown field: %d %+v, want 400 naming extra", code, er)
	}
	if code, er := do("POST", "/v1/jobs/"+bound+"/checkpoint", node, `{"path":"/ckpt/\u001b[2J"}`); code != 400 || er.Field != "path" {
		t.Errorf("checkpoint path with a control character: %d %+v, want 400 naming path", code, er)
	}
	if code, er := do("POST", "/v1/jobs/"+bound+"/attempts/1/events", node, `{"type":"started","rank":0,"typo":1}`); code != 400 || er.Field != "typo" {
		t.Errorf("event with an unknown field: %d %+v, want 400 naming typo", code, er)
	}
	for _, field := range []string{"pulled", "pull_total"} {
		body := `{"type":"pulling","rank":0,"node":"` + lab.nodes[0] + `","` + field + `":-1}`
		if code, er := do("POST", "/v1/jobs/"+bound+"/attempts/1/events", node, body); code != 400 || er.Field != field {
			t.Errorf("pulling event with a negative %s: %d %+v, want 400 naming it", field, code, er)
		}
	}
	if code, er := do("POST", "/v1/nodes/"+lab.nodes[0]+"/heartbeat", node, `{"images":["registry.example/a:1","Not An Image"]}`); code != 400 || er.Field != "images[1]" {
		t.Errorf("heartbeat with a bad image: %d %+v, want 400 naming images[1]", code, er)
	}
	if code, er := do("POST", "/v1/nodes/"+lab.nodes[0]+"/register", node, `{"gpus":[],"adress":"x"}`); code != 400 || er.Field != "adress" {
		t.Errorf("register with an unknown field: %d %+v, want 400 naming adress", code, er)
	}
	acme := lab.tokens["acme"]
	for _, name := range []string{"copilot-rsv", "globex-h100"} { // created through the API; from the tenants file
		for _, m := range []string{"GET", "DELETE"} {
			if code, er := do(m, "/v1/reservations/"+name, acme, ""); code != 403 || er.Code != "Forbidden" {
				t.Errorf("acme %s %s: %d %+v, want 403", m, name, code, er)
			}
		}
	}
	if code, _ := do("GET", "/v1/reservations/acme-rsv", acme, ""); code != 200 {
		t.Errorf("acme GET its reservation: %d", code)
	}
	if code, _ := do("GET", "/v1/reservations/nope", acme, ""); code != 404 {
		t.Errorf("GET an unknown reservation: %d", code)
	}
}
