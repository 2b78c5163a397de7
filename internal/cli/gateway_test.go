package cli

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
)

// hostFleet is one T4 node named localhost, so that a replica on it is
// routed at localhost:PORT, where the test's replica listens.
const hostFleet = `regions:
  - name: eastus
    residency: us
    clusters:
      - name: eastus-eth1
        fabric: ethernet
        racks:
          - name: eastus-eth1-r1
            nodes:
              - {name: localhost, sku: NC4-T4x1}
`

const hostTenants = `partitions:
  - {name: shared, tier: shared}
tenants:
  - {name: copilot, kind: internal, partition: shared}
`

// allot gateway --domain routes a request for host NAME.DOMAIN (with or
// without a port, over HTTP/1.1 and HTTP/2 without TLS) to a replica of
// endpoint NAME, its path unchanged; a request for a host of an unknown
// name is 404 and reaches no replica. Through a real allot server (its
// agents simulated: the replica is this test's, which says its port as
// allot demo serve does) and a real allot gateway, both in this process.
func TestGatewayRoutesHostNames(t *testing.T) {
	dir := t.TempDir()
	fleet, tenants := filepath.Join(dir, "fleet.yaml"), filepath.Join(dir, "tenants.yaml")
	for file, doc := range map[string]string{fleet: hostFleet, tenants: hostTenants} {
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	out, errOut, stopServer := startServer(t, data, "--agents", "simulated", "--fleet", fleet, "--tenants", tenants)
	defer stopServer()
	server := waitFor(t, out, regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`))[1]
	admin := readAdminToken(t, data)
	cli := func(args ...string) string {
		t.Helper()
		o, e, code := run(t, append(args, "--server", server, "--token", admin)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s\nserver log:\n%s", args, code, e, errOut.String())
		}
		return o
	}

	// An endpoint of one public replica.
	spec := filepath.Join(dir, "chat.yaml")
	if err := os.WriteFile(spec, []byte(`name: chat
tenant: copilot
model: demo
command: [allot, demo, serve]
resources: {gpus_per_instance: 1, gpu_models: [T4]}
min_replicas: 1
max_replicas: 1
slo: {p95_ms: 500}
throughput: {T4: 100}
access: public
readiness: {path: /healthz, timeout: 1s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cli("endpoint", "create", "-f", spec)
	api, err := client.New(server, admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job := ""
	for deadline := time.Now().Add(20 * time.Second); job == ""; time.Sleep(50 * time.Millisecond) {
		e, err := api.GetEndpoint(ctx, "chat")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range e.Replicas {
			if r.State == "Running" {
				job = r.Job
			}
		}
		if job == "" && time.Now().After(deadline) {
			t.Fatalf("no replica of chat runs after 20s: %+v", e.Replicas)
		}
	}

	// The replica: it counts what reaches it (not its readiness checks)
	// and says its port, as allot demo serve does in its first report.
	var hits atomic.Int64
	var seen atomic.Value
	rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		hits.Add(1)
		seen.Store(r.URL.Path + " " + r.Proto)
		_, _ = io.WriteString(w, "hello from chat\n")
	}))
	defer rep.Close()
	port := rep.Listener.Addr().(*net.TCPAddr).Port
	if err := api.ReportEndpointMetrics(ctx, "chat", client.MetricsReport{Replica: job + ".1", Port: port}); err != nil {
		t.Fatal(err)
	}

	// A gateway with --domain, on a gateway token.
	tokenFile := filepath.Join(dir, "gateway-token")
	if err := os.WriteFile(tokenFile, []byte(cli("token", "create", "--gateway")), 0o600); err != nil {
		t.Fatal(err)
	}
	var gwOut, gwErr syncBuffer
	gwCtx, stopGateway := context.WithCancel(ctx)
	gwDone := make(chan int, 1)
	go func() {
		gwDone <- Run(gwCtx, []string{"gateway", "--server", server, "--token-file", tokenFile, "--listen", "127.0.0.1:0",
			"--domain", "Allot.Test", "--report-every", "200ms"}, &gwOut, &gwErr)
	}()
	defer func() {
		stopGateway()
		if code := <-gwDone; code != ExitOK {
			t.Errorf("gateway exit %d: %s", code, gwErr.String())
		}
	}()
	gw := waitFor(t, &gwOut, regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`))[1]

	h1 := &http.Client{Timeout: 5 * time.Second}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: &protocols, TLSClientConfig: &tls.Config{}}}
	get := func(c *http.Client, host, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, gw+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The gateway learns the route from its watch and the replica's
	// readiness from its check.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := get(h1, "chat.allot.test", "/v1/complete")
		if code == http.StatusOK && body == "hello from chat\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("host chat.allot.test: %d %q after 20s\ngateway log:\n%s", code, body, gwErr.String())
		}
	}
	if s, _ := seen.Load().(string); s != "/v1/complete HTTP/1.1" {
		t.Errorf("the replica saw %q, want /v1/complete (the path unchanged) over HTTP/1.1", s)
	}
	for _, tc := range []struct {
		name, host string
		client     *http.Client
	}{{"a port and capitals", "CHAT.allot.test:8000", h1}, {"HTTP/2 without TLS", "chat.allot.test", h2}} {
		if code, body := get(tc.client, tc.host, "/v1/complete"); code != http.StatusOK || body != "hello from chat\n" {
			t.Errorf("%s (host %s): %d %q, want the replica's answer", tc.name, tc.host, code, body)
		}
	}
	before := hits.Load()
	for _, host := range []string{"nosuch.allot.test", "chat.elsewhere.test", "a.chat.allot.test"} {
		if code, body := get(h1, host, "/v1/complete"); code != http.StatusNotFound || !strings.Contains(body, "NotFound") {
			t.Errorf("host %s: %d %q, want 404 NotFound", host, code, body)
		}
	}
	if n := hits.Load(); n != before {
		t.Errorf("requests for unknown hosts reached the replica %d times", n-before)
	}
}
