package api

import (
	"net/http"
	"net/url"
	"path"
	"reflect"
	"strings"
	"testing"
)

// TestDrainNode plays a drain and a resume through the API: the
// administrator's, with the node's answer; a tenant's and a bad body's
// refusals; and the node list showing the drain meanwhile.
func TestDrainNode(t *testing.T) {
	q := newQuotaEnv(t)
	const drain = "/v1/nodes/eastus-t4x1-01/drain"
	for _, tc := range []struct {
		name, token, body string
		code              int
		field             string
	}{
		{"a tenant", q.tokens["acme"], `{"reason":"mine"}`, http.StatusForbidden, ""},
		{"no reason", q.admin, `{}`, http.StatusBadRequest, "reason"},
		{"an unknown field", q.admin, `{"reason":"x","until":"tomorrow"}`, http.StatusBadRequest, "until"},
	} {
		rec := q.do("POST", drain, tc.token, []byte(tc.body))
		if e := decode[Error](t, rec); rec.Code != tc.code || e.Field != tc.field {
			t.Errorf("%s: %d %+v, want %d on %q", tc.name, rec.Code, e, tc.code, tc.field)
		}
	}
	if rec := q.do("POST", "/v1/nodes/nope/drain", q.admin, []byte(`{"reason":"x"}`)); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown node: %d %s", rec.Code, rec.Body)
	}
	rec := q.do("POST", drain, q.admin, []byte(`{"reason":"PSU swap"}`))
	if n := decode[Node](t, rec); rec.Code != http.StatusOK || n.Health != "Draining" || n.Drain == nil || n.Drain.Reason != "PSU swap" || n.Drain.By != "admin" {
		t.Fatalf("drain: %d %s", rec.Code, rec.Body)
	}
	list := decode[struct{ Nodes []Node }](t, q.do("GET", "/v1/nodes", q.admin, nil)).Nodes
	for _, n := range list {
		if drained := n.Name == "eastus-t4x1-01"; drained != (n.Health == "Draining") || drained != (n.Drain != nil) {
			t.Errorf("listed %s: %s %+v", n.Name, n.Health, n.Drain)
		}
	}
	rec = q.do("POST", "/v1/nodes/eastus-t4x1-01/resume", q.admin, nil)
	if n := decode[Node](t, rec); rec.Code != http.StatusOK || n.Health != "Ready" || n.Drain != nil {
		t.Fatalf("resume: %d %s", rec.Code, rec.Body)
	}
	if rec := q.do("POST", "/v1/nodes/eastus-t4x1-01/resume", q.tokens["globex"], nil); rec.Code != http.StatusForbidden {
		t.Errorf("a tenant's resume: %d %s", rec.Code, rec.Body)
	}
}

// Any drain or resume, of any node name, by anyone, is a 200 from the
// administrator that leaves the node drained for the reason given (or
// resumed), or a 4xx naming its field that changes nothing.
func FuzzDrainNode(f *testing.F) {
	q := newQuotaEnv(f)
	f.Add("eastus-t4x1-01", false, []byte(`{"reason":"XID 79"}`), uint8(2))
	f.Add("eastus-t4x1-01", true, []byte(nil), uint8(2))
	f.Add("eastus-t4x1-01", false, []byte(`{"reason":""}`), uint8(2))
	f.Add("eastus-h100-01", false, []byte(`{"reason":"a\u0000b"}`), uint8(2))
	f.Add("..%2Fh100", false, []byte(`{"reason":1}`), uint8(2))
	f.Add("eastus-t4x1-01", false, []byte(`{"reason":"x"}`), uint8(0))
	f.Add("westus-a100-01", false, []byte(`[`), uint8(2))
	f.Fuzz(func(t *testing.T, name string, resume bool, body []byte, who uint8) {
		tok := []string{q.tokens["acme"], q.tokens["globex"], q.admin}[int(who)%3]
		verb := "drain"
		if resume {
			verb = "resume"
		}
		target := "/v1/nodes/" + url.PathEscape(name) + "/" + verb
		if !sendable(target) {
			return
		}
		before := q.keys(t)
		rec := q.do("POST", target, tok, body)
		sent := "POST " + target + " " + string(body)
		if rec.Code != http.StatusOK {
			refused(t, rec, sent)
			if after := q.keys(t); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s: refused (%d) but changed the store", sent, rec.Code)
			}
			return
		}
		n := decode[Node](t, rec)
		switch {
		case tok != q.admin:
			t.Fatalf("%s: a tenant's token changed node %q", sent, n.Name)
		case n.Name != name:
			t.Fatalf("%s: answered node %q", sent, n.Name)
		case resume && (n.Drain != nil || n.Health == "Draining"):
			t.Fatalf("%s: still drained: %+v", sent, n)
		case !resume && (n.Drain == nil || n.Health != "Draining" || n.Drain.Reason == "" || n.Drain.Reason != strings.TrimSpace(n.Drain.Reason)):
			t.Fatalf("%s: drained as %+v", sent, n)
		}
	})
}

// sendable reports whether target is a path a client sends: the mux
// redirects ./ and ../ rather than serving them.
func sendable(target string) bool {
	_, err := url.ParseRequestURI(target)
	return err == nil && path.Clean(target) == target
}
