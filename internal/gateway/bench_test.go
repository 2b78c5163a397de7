package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
)

// BenchmarkRequest is the CPU one request costs through a gateway to a
// local replica that answers at once, requests one after another (the
// replica's own cost included; compare BenchmarkDirect).
func BenchmarkRequest(b *testing.B) {
	rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") }))
	defer rep.Close()
	src := newSource()
	src.set(wire.RouteTable{Version: "1", Routes: []wire.Route{route("chat", "public", addr(rep))}})
	g, err := New(Config{Source: src, Name: "bench", ReportEvery: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	g.Apply(src.t)
	for _, r := range g.table.Load().endpoints["chat"].replicas {
		r.ready.Store(true)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	benchGet(b, srv.URL+"/chat/")
}

// BenchmarkDirect is BenchmarkRequest without the gateway.
func BenchmarkDirect(b *testing.B) {
	rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") }))
	defer rep.Close()
	benchGet(b, rep.URL+"/")
}

func benchGet(b *testing.B, url string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
