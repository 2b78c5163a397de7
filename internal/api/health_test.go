package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/server"
)

// POST /v1/nodes/{name}/health takes a node's health check: healthy is
// required (an empty report is refused, not read as a failure), detail is
// bounded, a failure drains the node and a pass resumes it; another node's
// token is refused.
func TestHealthRoute(t *testing.T) {
	lab := newScopeLab(t)
	node := scopeNodes[0]
	tok := lab.tokens["node:"+node]
	h := New(Config{Server: lab.srv, Rate: -1})
	do := func(token, path, body string) (int, string) {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	path := "/v1/nodes/" + node + "/health"
	if code, body := do(tok, path, `{}`); code != http.StatusBadRequest || !strings.Contains(body, `"field":"healthy"`) {
		t.Errorf("no healthy: %d %s", code, body)
	}
	if code, body := do(tok, path, `{"healthy":false,"detail":"`+strings.Repeat("x", 4097)+`"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, `"field":"detail"`) {
		t.Errorf("a long detail: %d %s", code, body)
	}
	if code, body := do(tok, "/v1/nodes/"+scopeNodes[1]+"/health", `{"healthy":false}`); code != http.StatusForbidden {
		t.Errorf("another node's token: %d %s", code, body)
	}
	if code, body := do(tok, path, `{"healthy":false,"detail":"exit status 1: XID 79"}`); code != http.StatusOK || body != "{\"changed\":true}\n" {
		t.Errorf("a failed check: %d %s", code, body)
	}
	if n := nodeOf(t, lab.srv, node); n.Drain == nil || n.Drain.By != "health-check" || n.Drain.Reason != "health check failed: exit status 1: XID 79" {
		t.Errorf("after a failed check: %+v", n.Drain)
	}
	if code, body := do(tok, path, `{"healthy":true}`); code != http.StatusOK || body != "{\"changed\":true}\n" {
		t.Errorf("a passing check: %d %s", code, body)
	}
	if n := nodeOf(t, lab.srv, node); n.Drain != nil {
		t.Errorf("after a passing check: %+v", n.Drain)
	}
}

func nodeOf(t *testing.T, srv *server.Server, name string) server.NodeStatus {
	t.Helper()
	for _, n := range srv.Nodes() {
		if n.Node.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return server.NodeStatus{}
}
