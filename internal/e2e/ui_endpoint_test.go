package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/allot-dev/allot/internal/client"
)

// TestUIEndpointGateway opens /ui of 'allot up' with the token of the
// tenant whose endpoint takes load through up's gateway: under the
// endpoint's row the dashboard shows what the gateways measured over the
// last minute (requests/s, the p95 against the SLO, errors, in flight)
// and a row per replica with its requests in flight and its p95, as
// endpoint show reports them.
func TestUIEndpointGateway(t *testing.T) {
	needServer(t)
	browser := findChromium(t)
	shots := screenshotDir(t)
	dir := t.TempDir()
	url, admin := startUp(t, dir)
	tok := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "copilot"))
	file := filepath.Join(dir, "chat.yaml")
	if err := os.WriteFile(file, []byte(`name: chat
tenant: copilot
model: demo
command: [allot, demo, serve, --gpu, T4, --service-time, 20ms, --concurrency, "8", --report-every, 2s]
resources: {gpu_milli: 250, gpu_models: [T4]}
min_replicas: 2
max_replicas: 2
slo: {p95_ms: 500}
throughput: {T4: 100}
access: public
readiness: {path: /healthz, timeout: 1s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(http://\S+/chat/)`).FindStringSubmatch(allotMust(t, url, tok, "endpoint", "create", "-f", file))
	if m == nil {
		t.Fatal("endpoint create printed no URL")
	}
	ep := endpointWatch{t: t, url: url, tok: tok, name: "chat"}
	ep.waitFor("both replicas are routed and ready", 30*time.Second, func(e client.Endpoint) bool {
		return e.Gateway != nil && len(e.Gateway.Replicas) == 2 && e.Gateway.Replicas[0].Ready && e.Gateway.Replicas[1].Ready
	})
	startLoad(t, m[1], "--rps", "20", "--duration", "60s")
	// A replica's minute is counted in slots of 10 s: its p95 shows once
	// one slot with its requests is whole.
	e := ep.waitFor("the gateways measured a p95 of each replica", 30*time.Second, func(e client.Endpoint) bool {
		if e.Gateway == nil || e.Gateway.RequestsPerSec == 0 || len(e.Gateway.Replicas) != 2 {
			return false
		}
		for _, r := range e.Gateway.Replicas {
			if r.Latency.P95Ms == 0 {
				return false
			}
		}
		return true
	})

	tab := newTab(t, browser)
	openDashboard(t, tab, url, tok)

	const panel = `#endpoints tr.gateway[data-gateway="chat"]`
	waitFor(t, tab, "the gateway panel under the endpoint's row", `#endpoints tr[data-endpoint="chat"] + tr.gateway[data-gateway="chat"]`)
	for _, r := range e.Gateway.Replicas {
		waitFor(t, tab, "replica "+r.Job+" with its p95", fmt.Sprintf(`%s tr[data-replica=%q]:not([data-p95=""])`, panel, r.Job))
	}
	if n := count(t, tab, panel+" tr[data-replica]"); n != 2 {
		t.Errorf("the panel lists %d replicas, want the 2 the gateways measured", n)
	}
	attr := func(name string) string {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).dataset[%q] || ""`, panel, name)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if rps, _ := strconv.ParseFloat(attr("rps"), 64); rps <= 0 {
		t.Errorf("the panel shows %q req/s, want the load's", attr("rps"))
	}
	if p95, _ := strconv.ParseFloat(attr("p95"), 64); p95 <= 0 || attr("overSlo") != "false" {
		t.Errorf("the panel's p95 is %q ms, over the SLO %q; want a measured p95 within the 500 ms SLO", attr("p95"), attr("overSlo"))
	}
	if s := text(t, tab, panel+" .summary"); !strings.Contains(s, "req/s") || !strings.Contains(s, "of SLO 500 ms") || !strings.Contains(s, "errors") {
		t.Errorf("the panel reads %q; want requests/s, the p95 against the SLO and the errors", s)
	}
	if s := text(t, tab, panel+" .replicas"); !strings.Contains(s, "In flight") || !strings.Contains(s, "p95 ms") {
		t.Errorf("the replicas' table reads %q; want each replica's requests in flight and p95", s)
	}
	screenshot(t, tab, shots, "endpoint-gateway.png")
}
