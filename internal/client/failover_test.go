package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// closedURL is an http URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// A request that cannot connect to one server goes to the next, and the
// client keeps using the one that answered.
func TestFailoverToReachableServer(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"nodes":[]}`))
	}))
	defer srv.Close()
	dead := closedURL(t)
	c, err := New(dead+","+srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Nodes(t.Context()); err != nil {
			t.Fatalf("with one server down: %v", err)
		}
	}
	if hits.Load() != 3 || c.Server() != srv.URL {
		t.Errorf("hits %d, server %s; want 3 on %s", hits.Load(), c.Server(), srv.URL)
	}
	all, _ := New(dead+","+closedURL(t), "tok")
	if _, err := all.Nodes(t.Context()); err == nil || !unreachable(err) && !strings.Contains(err.Error(), "refused") {
		t.Errorf("with every server down: %v", err)
	}
}

// 503 NoLeader (an election under way) is retried; any other error answer
// is returned at once.
func TestRetryWhileNoLeader(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/nodes":
			if n.Add(1) <= 2 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"code":"NoLeader","message":"election"}`))
				return
			}
			_, _ = w.Write([]byte(`{"nodes":[]}`))
		default:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"Internal","message":"down"}`))
		}
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	if _, err := c.Nodes(t.Context()); err != nil || n.Load() != 3 {
		t.Fatalf("after two NoLeader answers: %v (%d requests)", err, n.Load())
	}
	if _, err := c.Alerts(t.Context()); err == nil {
		t.Fatal("a 503 that is not NoLeader was not returned")
	}
	n.Store(-1000)
	c.NoLeaderWait = 300 * time.Millisecond
	start := time.Now()
	_, err := c.Nodes(t.Context())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || time.Since(start) > 5*time.Second {
		t.Fatalf("NoLeader past NoLeaderWait: %v after %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Nodes(ctx); err == nil {
		t.Fatal("a canceled context was not returned")
	}
}

// FuzzNew: any --server value is a client or an error naming the value;
// never a panic, and a client's Server is one of the URLs given.
func FuzzNew(f *testing.F) {
	for _, s := range []string{"http://a:1", "http://a:1,https://b:2/", "a:1", ",", "http://a:1,,", "ftp://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := New(s, "")
		if err != nil {
			if !strings.Contains(err.Error(), "want a URL") {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if len(c.bases) == 0 || !strings.Contains(s, c.bases[0].Host) {
			t.Fatalf("%q: bases %v", s, c.bases)
		}
	})
}

// A request that got no answer is not sent again, but the next request
// starts with another server.
func TestNextServerAfterTimeout(t *testing.T) {
	block := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer hung.Close()
	defer close(block)
	var hits atomic.Int32
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"nodes":[]}`))
	}))
	defer ok.Close()
	c, _ := New(hung.URL+","+ok.URL, "")
	c.HTTP.Timeout = 200 * time.Millisecond
	if _, err := c.Nodes(t.Context()); err == nil || hits.Load() != 0 {
		t.Fatalf("first request: %v, %d hits on the other server; want a timeout and no resend", err, hits.Load())
	}
	if _, err := c.Nodes(t.Context()); err != nil || hits.Load() != 1 {
		t.Fatalf("next request: %v, %d hits; want the other server", err, hits.Load())
	}
	// The caller's deadline counts as no answer too (an agent bounds its
	// heartbeats so).
	c, _ = New(hung.URL+","+ok.URL, "")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Nodes(ctx); err == nil {
		t.Fatal("a request past its deadline succeeded")
	}
	if _, err := c.Nodes(t.Context()); err != nil || hits.Load() != 2 {
		t.Fatalf("after a deadline: %v, %d hits; want the other server", err, hits.Load())
	}
}

// A submit carries an idempotency key, so one that got no answer (the
// server hung up, or a follower's leader failed) is sent again, with the
// same key, to the next server; a request without a key is not.
func TestSubmitResentWithItsKey(t *testing.T) {
	var keys []string
	var mu sync.Mutex
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack() // carried out, perhaps; the answer is lost
		if err == nil {
			conn.Close()
		}
	}))
	defer drop.Close()
	var failed atomic.Bool
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if !failed.Swap(true) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"code":"LeaderFailed","message":"the leader failed while answering"}`))
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		_, _ = w.Write([]byte(`{"id":"chat-1"}`))
	}))
	defer ok.Close()
	c, _ := New(drop.URL+","+ok.URL, "")
	j, err := c.SubmitKeyed(t.Context(), "k-1", []byte(`{}`), "application/json")
	if err != nil || j.ID != "chat-1" {
		t.Fatalf("submit: %+v, %v", j, err)
	}
	// Each failure moves on to the other server: dropped, LeaderFailed,
	// dropped, answered.
	if want := []string{"k-1", "k-1", "k-1", "k-1"}; !slices.Equal(keys, want) {
		t.Fatalf("sent with keys %q, want %q", keys, want)
	}
	if _, err := c.Submit(t.Context(), []byte(`{}`), "application/json"); err != nil || len(keys[4]) != 32 {
		t.Fatalf("Submit: %v, key %q; want a fresh 32-digit key", err, keys[4:])
	}
	if _, err := c.CreateInstance(t.Context(), InstanceRequest{SKU: "NC24-A100x1", Region: "eastus"}); err != nil ||
		len(keys) != 6 || len(keys[5]) != 32 || keys[5] == keys[4] {
		t.Fatalf("CreateInstance: %v, keys %q; want one send with a fresh 32-digit key", err, keys[4:])
	}

	keys = nil
	c, _ = New(drop.URL+","+ok.URL, "")
	if _, err := c.Cancel(t.Context(), "chat-1"); err == nil || len(keys) != 1 || keys[0] != "" {
		t.Fatalf("cancel: %v, sent %d times with keys %q; want one send without a key", err, len(keys), keys)
	}
}

// An agent's report is answered alike when repeated, so one answered 502
// LeaderFailed (a follower's leader stalled, and another was elected) is
// sent again, where an agent would otherwise drop the exit of an instance
// and its GPUs stay held; a registration, which is not, is sent once.
func TestAgentReportsResent(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if hits.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"code":"LeaderFailed","message":"leadership moved while it was answering"}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	if err := c.Event(t.Context(), "j", 1, AttemptEvent{Type: "exited"}); err != nil || hits.Load() != 2 {
		t.Fatalf("event: %v after %d sends; want it sent again after LeaderFailed", err, hits.Load())
	}
	if err := c.Heartbeat(t.Context(), "n", nil); err != nil || hits.Load() != 4 {
		t.Fatalf("heartbeat: %v after %d sends in all; want it sent again", err, hits.Load())
	}
	var api *APIError
	if err := c.Register(t.Context(), "n", nil, "10.0.0.1"); !errors.As(err, &api) || hits.Load() != 5 {
		t.Fatalf("register: %v after %d sends in all; want LeaderFailed after one", err, hits.Load())
	}
}
