package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
)

// TestAlertNodeNotReady starts allot server with external agents and runs
// none: every node stays NotReady, so AllotNodeNotReady fires (after a
// 1 s `for` set by the hidden --alert-for), shows in 'allot alert list' and
// reaches the webhook; a tenant token is refused.
func TestAlertNodeNotReady(t *testing.T) {
	needServer(t)
	if !strings.Contains(serverHelp, "--alert-webhook") {
		t.Skip("allot server has no --alert-webhook flag")
	}
	var mu sync.Mutex // guards notices
	var notices []client.AlertNotice
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n client.AlertNotice
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &n); err != nil {
			t.Errorf("webhook body %q: %v", b, err)
		}
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}))
	defer hook.Close()

	dir := t.TempDir()
	log := &syncBuffer{}
	url, admin, stop, err := startServerArgs(filepath.Join(dir, "data"), log, "server",
		"--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "internal/e2e/testdata/agent-fleet.yaml"),
		"--tenants", filepath.Join(root, "internal/e2e/testdata/agent-tenants.yaml"),
		"--agents", "external", "--rate-limit", "0",
		"--alert-webhook", hook.URL+"/allot?key=s3cret", "--alert-every", "100ms", "--alert-for", "1s")
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, log.String())
	}
	defer func() {
		stop()
		if t.Failed() {
			t.Logf("server log:\n%s", tail(log.String(), 8<<10))
		}
	}()

	var firing []client.Alert
	deadline := time.Now().Add(20 * time.Second)
	for len(firing) < len(labNodes) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		var out struct{ Alerts []client.Alert }
		if err := json.Unmarshal([]byte(allotMust(t, url, admin, "alert", "list", "-o", "json")), &out); err != nil {
			t.Fatal(err)
		}
		firing = firing[:0]
		for _, a := range out.Alerts {
			if a.Name == "AllotNodeNotReady" && a.State == "firing" {
				firing = append(firing, a)
			}
		}
	}
	if len(firing) != len(labNodes) {
		t.Fatalf("%d AllotNodeNotReady firing, want one per node (%d)", len(firing), len(labNodes))
	}
	for _, a := range firing {
		if a.Labels["health"] != "NotReady" || a.FiredAt == nil || a.FiredAt.Sub(a.Since) < time.Second {
			t.Errorf("alert %+v: want NotReady, fired at least 1 s after it started to hold", a)
		}
	}

	table := allotMust(t, url, admin, "alert", "list")
	if !strings.Contains(table, "ALERT") || !strings.Contains(table, "AllotNodeNotReady") ||
		!strings.Contains(table, "node="+labNodes[0]) || !strings.Contains(table, "is NotReady") {
		t.Errorf("alert list:\n%s", table)
	}
	if y := allotMust(t, url, admin, "alert", "list", "-o", "yaml"); !strings.Contains(y, "state: firing") {
		t.Errorf("alert list -o yaml:\n%s", y)
	}

	team := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "team"))
	if r := allotAt(t, url, team, "alert", "list"); r.code == 0 || !strings.Contains(r.err, "admin") {
		t.Errorf("tenant alert list: exit %d\n%s%s", r.code, r.out, r.err)
	}

	deadline = time.Now().Add(10 * time.Second)
	var got int
	for time.Now().Before(deadline) {
		mu.Lock()
		got = 0
		for _, n := range notices {
			for _, a := range n.Alerts {
				if a.Name == "AllotNodeNotReady" && a.State == "firing" && n.Version == 1 && n.Source == "allot" {
					got++
				}
			}
		}
		mu.Unlock()
		if got >= len(labNodes) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got != len(labNodes) {
		t.Errorf("webhook got %d firing AllotNodeNotReady, want %d", got, len(labNodes))
	}
	if !strings.Contains(log.String(), "alert firing") || strings.Contains(log.String(), "s3cret") {
		t.Errorf("server log: want 'alert firing' lines and no webhook secret")
	}
}
