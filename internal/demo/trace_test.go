package demo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A traced load sends each request's token counts, at the trace's gaps,
// round and round; the server turns them into the request's service time.
func TestTraceLoad(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
	}))
	defer sink.Close()
	trace := []TraceRequest{{Gap: 10 * time.Millisecond, Context: 100, Generated: 5}, {Gap: 20 * time.Millisecond, Context: 7, Generated: 0}}
	res, err := Load(context.Background(), LoadConfig{URL: sink.URL + "/", Duration: 300 * time.Millisecond, Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// 300 ms of 15 ms per request on average: 20 requests, alternating.
	if res.Sent < 15 || res.Sent > 21 || res.Failed != 0 {
		t.Fatalf("%s; want about 20 requests", res)
	}
	for i, q := range queries[:4] {
		want := []string{"context=100&generated=5", "context=7&generated=0"}[i%2]
		if q != want {
			t.Errorf("request %d: query %q, want %q", i, q, want)
		}
	}
	if _, err := Load(context.Background(), LoadConfig{URL: sink.URL, Duration: time.Second, Trace: []TraceRequest{{}}}); err == nil {
		t.Error("a trace of no time was accepted")
	}
}

// A request's token counts set its service time; bad counts are 400
// naming the count.
func TestServeTokens(t *testing.T) {
	s, err := NewServer(ServeConfig{ServiceTime: time.Millisecond, Concurrency: 2,
		Tokens: func(c, g float64, batch int) time.Duration { return time.Duration(c+g) * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	start := time.Now()
	resp, err := http.Get(srv.URL + "/?context=30&generated=10")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != 200 || d < 40*time.Millisecond {
		t.Errorf("40 tokens at 1 ms each: %d after %s", resp.StatusCode, d)
	}
	resp, err = http.Get(srv.URL + "/?context=-1&generated=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("context=-1: %d, want 400", resp.StatusCode)
	}
}

// Whatever query a caller sends, the service time is ServiceTime, a
// token-derived one, or a 400 naming the count.
func FuzzServiceTime(f *testing.F) {
	for _, q := range []string{"", "context=1&generated=2", "context=x", "generated=99999999", "context=5", "context=%zz"} {
		f.Add(q)
	}
	s, err := NewServer(ServeConfig{ServiceTime: time.Millisecond, Concurrency: 4,
		Tokens: func(c, g float64, batch int) time.Duration { return time.Duration(c + g + float64(batch)) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL.RawQuery = query
		d, err := s.serviceTime(r)
		if err != nil {
			if !strings.Contains(err.Error(), "context=") && !strings.Contains(err.Error(), "generated=") {
				t.Fatalf("error %v names no count", err)
			}
			return
		}
		if d < 0 || d > time.Duration(2*MaxTokens+4) && d != time.Millisecond {
			t.Fatalf("query %q: service time %s", query, d)
		}
	})
}
