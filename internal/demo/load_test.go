package demo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// On loopback the generator sends about the asked rate and ends about
// when asked.
func TestLoadAchievesRate(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer hs.Close()
	start := time.Now()
	res, err := Load(context.Background(), LoadConfig{URL: hs.URL, RPS: 200, Duration: 2 * time.Second, Seed: 7})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.AchievedRPS < 170 || res.AchievedRPS > 230 {
		t.Errorf("achieved %.1f requests/s, want about 200", res.AchievedRPS)
	}
	if res.OK != res.Sent || res.Failed+res.Dropped > 0 {
		t.Errorf("%s", res)
	}
	if elapsed > 4*time.Second {
		t.Errorf("a 2 s test took %s", elapsed)
	}
	if !(res.P50 <= res.P90 && res.P90 <= res.P95 && res.P95 <= res.P99 && res.P99 <= res.Max) || res.Max <= 0 {
		t.Errorf("percentiles out of order: %s", res)
	}
}

// Arrivals do not wait for answers: against a server that takes 100 ms per
// request, one at a time, the generator still sends its 20 requests/s
// (a closed loop would send at most 10), and their latency grows as the
// queue does.
func TestLoadIsOpenLoop(t *testing.T) {
	s, err := NewServer(ServeConfig{ServiceTime: 100 * time.Millisecond, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	res, err := Load(context.Background(), LoadConfig{URL: hs.URL, RPS: 20, Duration: time.Second, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent < 14 {
		t.Errorf("sent %d requests in 1 s at 20/s to a slow server, want about 20: %s", res.Sent, res)
	}
	if res.Max < 500*time.Millisecond {
		t.Errorf("max latency %s; %d requests queued on a 100 ms slot should wait longer", res.Max, res.Sent)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, cfg := range []LoadConfig{{RPS: 1, Duration: time.Second}, {URL: "http://x", Duration: time.Second},
		{URL: "http://x", RPS: 1}} {
		if _, err := Load(context.Background(), cfg); err == nil {
			t.Errorf("Load(%+v): no error", cfg)
		}
	}
	res, err := Load(context.Background(), LoadConfig{URL: "http://127.0.0.1:1/", RPS: 50, Duration: 200 * time.Millisecond, Seed: 1})
	if err != nil || res.Failed == 0 || res.OK != 0 || !strings.Contains(res.String(), "first error") {
		t.Errorf("load of a closed port: %s, %v; want failures", res, err)
	}
}
