package agent

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
)

// A server that takes an agent's exit report and never answers (a
// stalled leader, or a follower passing the report to one) holds it up
// for a report's bound, not for the client's long-poll timeout: the agent
// then tells the next server, and the job's GPUs are free again within
// seconds. The soak found the 45 s stall (scripts/soak.sh, a stalled
// leader).
func TestReportGoesAroundAHungServer(t *testing.T) {
	l := newLab(t)
	target, err := url.Parse(l.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // the hung requests' cancellations
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") && strings.Contains(readAll(r), `"exited"`) {
			select { // taken, never answered
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(release); hung.Close() })
	cl, err := client.New(hung.URL+","+l.url, l.admin)
	if err != nil {
		t.Fatal(err)
	}
	cl.HTTP.Timeout = DefaultWait + 15*time.Second // as allot agent sets it
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := l.config(t, "h100-01")
	cfg.Client = cl
	runAgent(t, ctx, cfg)
	id := l.submit(t, "name: quick\ntenant: team\ncommand: [true]\nresources: {gpus_per_instance: 8}\n")
	l.waitState(t, id, "Running")
	start := time.Now()
	l.waitState(t, id, "Succeeded") // within 15 s
	if d := time.Since(start); d > 12*time.Second {
		t.Errorf("the exit took %s to reach the server", d)
	}
}

// readAll reads r's body and puts it back for the proxy.
func readAll(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}
