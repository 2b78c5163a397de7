package demo

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newServer(t *testing.T, cfg ServeConfig) (*Server, *httptest.Server) {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

// Under an open-loop load at 60 % of its capacity the server measures the
// offered rate, a p95 of at least its service time, and a utilisation
// near the load's share of its capacity.
func TestServeUnderLoad(t *testing.T) {
	s, hs := newServer(t, ServeConfig{ServiceTime: 20 * time.Millisecond, Concurrency: 2, Replica: "r1"})
	s.Measure() // start the interval now
	res, err := Load(context.Background(), LoadConfig{URL: hs.URL, RPS: 60, Duration: 2 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep := s.Measure()
	t.Logf("load: %s\nserver: %+v", res, rep)
	if res.Failed > 0 || res.OK != res.Sent {
		t.Fatalf("load: %s", res)
	}
	if rep.P95Ms < 20 {
		t.Errorf("p95 %.1f ms, below the 20 ms service time", rep.P95Ms)
	}
	if res.P95 < 20*time.Millisecond {
		t.Errorf("the client saw a p95 of %s, below the service time", res.P95)
	}
	if rep.RequestsPerSec < 40 || rep.RequestsPerSec > 80 {
		t.Errorf("measured %.1f requests/s, want about 60", rep.RequestsPerSec)
	}
	if rep.Utilisation < 0.3 || rep.Utilisation > 0.95 {
		t.Errorf("utilisation %.2f, want about 0.6", rep.Utilisation)
	}
	if rep.Replica != "r1" {
		t.Errorf("replica %q, want r1", rep.Replica)
	}
}

// With one slot, four requests at once are served one after another: the
// last one waits for three service times, which a server without the
// limit would not make it do.
func TestServeQueuesBeyondConcurrency(t *testing.T) {
	s, hs := newServer(t, ServeConfig{ServiceTime: 50 * time.Millisecond, Concurrency: 1})
	s.Measure()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fetch(context.Background(), http.DefaultClient, hs.URL); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rep := s.Measure()
	if rep.P95Ms < 190 {
		t.Errorf("p95 %.1f ms of four requests on one 50 ms slot, want about 200", rep.P95Ms)
	}
	if rep.Utilisation < 0.5 {
		t.Errorf("utilisation %.2f, want the slot busy most of the time", rep.Utilisation)
	}
	if empty := s.Measure(); empty.P95Ms != 0 || empty.RequestsPerSec != 0 {
		t.Errorf("an interval without requests measured %+v", empty)
	}
}

func TestServePaths(t *testing.T) {
	_, hs := newServer(t, ServeConfig{Concurrency: 1})
	for path, want := range map[string]int{"/healthz": 200, "/": 200, "/nope": 404} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
	for _, cfg := range []ServeConfig{{Concurrency: 0}, {Concurrency: 1, ServiceTime: -1}, {Concurrency: 1, ReportURL: "http://x"}} {
		if _, err := NewServer(cfg); err == nil {
			t.Errorf("NewServer(%+v): no error", cfg)
		}
	}
}

// Run posts a Report with the documented field names and the bearer
// token at once (the port) and every interval, and stops when its context ends.
func TestRunReports(t *testing.T) {
	got := make(chan map[string]any, 16)
	var auth string
	var mu sync.Mutex
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.Method != http.MethodPost {
			t.Errorf("report: %s, %v", r.Method, err)
		}
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		got <- m
	}))
	defer sink.Close()
	s, err := NewServer(ServeConfig{ServiceTime: time.Millisecond, Concurrency: 4, Replica: "job-1.2",
		ReportURL: sink.URL, ReportToken: "s3cret", ReportEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln, &out) }()
	for range 5 {
		if err := fetch(ctx, http.DefaultClient, "http://"+ln.Addr().String()+"/"); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(5 * time.Second)
	for {
		var m map[string]any
		select {
		case m = <-got:
		case <-deadline:
			t.Fatal("no report with the requests within 5 s")
		}
		port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
		if len(m) != 5 || m["replica"] != "job-1.2" || fmt.Sprint(m["port"]) != port {
			t.Fatalf("report %v, want exactly requests_per_sec, p95_ms, utilisation, replica and port %s", m, port)
		}
		for _, k := range []string{"requests_per_sec", "p95_ms", "utilisation"} {
			if _, ok := m[k].(float64); !ok {
				t.Fatalf("report %v: %s is not a number", m, k)
			}
		}
		if m["requests_per_sec"].(float64) > 0 {
			break
		}
	}
	mu.Lock()
	if auth != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the bearer token", auth)
	}
	mu.Unlock()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// A report to an https server is checked against ReportCA: it reaches a
// server whose certificate the PEM holds, not one the system's roots
// would have to vouch for; a PEM without a certificate is refused.
func TestReportCA(t *testing.T) {
	var n atomic.Int32
	sink := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer sink.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sink.Certificate().Raw}))
	for _, tc := range []struct {
		ca   string
		sent bool
	}{{ca, true}, {"", false}} {
		s, err := NewServer(ServeConfig{Concurrency: 1, ReportURL: sink.URL, ReportEvery: time.Second, ReportCA: tc.ca})
		if err != nil {
			t.Fatal(err)
		}
		before := n.Load()
		err = s.post(t.Context(), Report{})
		if sent := n.Load() > before; sent != tc.sent || (err == nil) != tc.sent {
			t.Errorf("CA given %v: sent %v, %v", tc.ca != "", sent, err)
		}
	}
	if _, err := NewServer(ServeConfig{Concurrency: 1, ReportCA: "not PEM"}); err == nil {
		t.Error("a CA without a certificate was accepted")
	}
}
