package h1

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers every request with its method, path and body, and
// counts the connections it accepted.
func echoServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(body))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func testTransport() *Transport { return New(Config{}) }

func send(t *testing.T, rt http.RoundTripper, method, url, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" && method == "PUT" {
		req.ContentLength = -1 // chunked
		req.GetBody = nil
		req.Body = io.NopCloser(strings.NewReader(body))
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return resp.StatusCode, string(got)
}

// Requests one after another, with and without bodies (one chunked), go
// over one connection, each answer whole.
func TestReusesItsConnection(t *testing.T) {
	srv, conns := echoServer(t)
	rt := testTransport()
	defer rt.CloseIdleConnections()
	for i := range 20 {
		method, body := "GET", ""
		switch i % 3 {
		case 1:
			method, body = "POST", "hello"
		case 2:
			method, body = "PUT", "chunked body"
		}
		code, got := send(t, rt, method, srv.URL+"/p", body)
		if want := method + " /p " + body; code != http.StatusOK || got != want {
			t.Fatalf("request %d: %d %q, want %q", i, code, got, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 requests one after another opened %d connections, want 1", n)
	}
}

// A kept connection the server closed while it was idle is not used: the
// next request, a POST whose body could not be sent again, succeeds on a
// new connection.
func TestLeavesAConnectionTheReplicaClosed(t *testing.T) {
	srv, conns := echoServer(t)
	rt := testTransport()
	defer rt.CloseIdleConnections()
	if code, _ := send(t, rt, "GET", srv.URL+"/", ""); code != http.StatusOK {
		t.Fatal(code)
	}
	srv.CloseClientConnections()
	time.Sleep(20 * time.Millisecond) // the end of stream reaches our side
	req, _ := http.NewRequest("POST", srv.URL+"/x", io.NopCloser(strings.NewReader("once")))
	req.ContentLength = 4
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST after the server closed the idle connection: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "POST /x once" {
		t.Fatalf("answer %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the closed one, then a new one)", n)
	}
}

// A request on a kept connection that the server closes without
// answering, with no body to lose, is sent again on a new connection.
func TestSendsAgainWhatALostConnectionNeverAnswered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for req := 0; ; req++ {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if n == 1 && req == 1 {
						return // the second request on the first connection: closed unanswered
					}
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	rt := testTransport()
	defer rt.CloseIdleConnections()
	url := "http://" + ln.Addr().String() + "/"
	for i := range 3 {
		if code, got := send(t, rt, "GET", url, ""); code != http.StatusOK || got != "ok" {
			t.Fatalf("request %d: %d %q", i, code, got)
		}
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	// A POST, even without a body, is not sent again: the server may have
	// acted on it. Connection 2 drops nothing, so drop it by hand first.
	rt.CloseIdleConnections()
	accepted.Store(0)
	if code, _ := send(t, rt, "GET", url, ""); code != http.StatusOK {
		t.Fatal(code)
	}
	req, _ := http.NewRequest("POST", url, nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, ErrStale) {
		t.Errorf("a POST lost on a reused connection: %v, want ErrStale", err)
	}
}

// A caller that leaves in the middle of a stream ends the request at
// once; the connection is not kept, and the next request gets a new one.
func TestCallerLeavesMidStream(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/short" {
			_, _ = io.WriteString(w, "done")
			return
		}
		for r.Context().Err() == nil {
			_, _ = io.WriteString(w, "token ")
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	rt := testTransport()
	defer rt.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/stream", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "token " {
		t.Fatalf("first token %q, %v", buf, err)
	}
	cancel()
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the stream ended cleanly after the caller left")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading the stream did not end when the caller left")
	}
	resp.Body.Close()
	if code, got := send(t, rt, "GET", srv.URL+"/short", ""); code != http.StatusOK || got != "done" {
		t.Fatalf("next request: %d %q", code, got)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the one the caller left is not reused", n)
	}
}

// A failed dial is the dialer's *net.OpError of Op "dial", so that a
// caller can tell that nothing was sent.
func TestDialFailureIsTheDialersError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	_, err = testTransport().RoundTrip(req)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("dial to a closed port: %v (%T), want a *net.OpError of the dial", err, err)
	}
}
