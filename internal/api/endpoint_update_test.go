package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// PUT /v1/endpoints/{name} changes the SLO in place (an Updated event),
// rolls out a new command (another template, a rollout time), POST
// .../restart rolls out another template of the same spec, .../undo rolls
// back to the template before (409 while there is none), and PUT refuses
// a body that names another endpoint, or another tenant, naming the field.
func TestEndpointUpdateRoute(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	if rec := e.do("POST", "/v1/endpoints", cop, []byte(chatEndpointYAML)); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("POST", "/v1/endpoints/chat/undo", cop, nil); rec.Code != http.StatusConflict {
		t.Errorf("undo of a template that never changed: %d %s, want 409", rec.Code, rec.Body)
	}
	rec := e.do("PUT", "/v1/endpoints/chat", cop, []byte(strings.Replace(chatEndpointYAML, "p95_ms: 150", "p95_ms: 120", 1)))
	ep := decode[Endpoint](t, rec)
	if rec.Code != http.StatusOK || ep.Spec.SLO.P95Ms != 120 || ep.Events[len(ep.Events)-1].Kind != "Updated" {
		t.Fatalf("update: %d %s", rec.Code, rec.Body)
	}
	rec = e.do("PUT", "/v1/endpoints/chat", cop, []byte(strings.Replace(chatEndpointYAML, "model: llama", "model: llama\ncommand: [vllm, serve]", 1)))
	rolled := decode[Endpoint](t, rec)
	if rec.Code != http.StatusOK || rolled.Template == ep.Template || rolled.RolloutSince == nil {
		t.Fatalf("a new command: %d %s, want a rollout of another template than %s", rec.Code, rec.Body, ep.Template)
	}
	rec = e.do("POST", "/v1/endpoints/chat/restart", cop, nil)
	restarted := decode[Endpoint](t, rec)
	if rec.Code != http.StatusOK || restarted.Template == rolled.Template || restarted.Events[len(restarted.Events)-1].Kind != "Restarted" {
		t.Fatalf("restart: %d %s", rec.Code, rec.Body)
	}
	rec = e.do("POST", "/v1/endpoints/chat/undo", cop, nil)
	undone := decode[Endpoint](t, rec)
	if rec.Code != http.StatusOK || undone.Template != rolled.Template || undone.PreviousTemplate != restarted.Template ||
		undone.Events[len(undone.Events)-1].Kind != "RolledBack" {
		t.Fatalf("undo of the restart: %d %s, want template %s back", rec.Code, rec.Body, rolled.Template)
	}
	if rec := e.do("POST", "/v1/endpoints/chat/undo", e.tokens["acme"], nil); rec.Code != http.StatusForbidden {
		t.Errorf("another tenant's undo: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("POST", "/v1/endpoints/nope/restart", cop, nil); rec.Code != http.StatusNotFound {
		t.Errorf("restart of no endpoint: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct{ path, body, field string }{
		{"/v1/endpoints/other", chatEndpointYAML, "name"},
		{"/v1/endpoints/chat", strings.Replace(chatEndpointYAML, "name: chat", "name: chat\ntenant: acme", 1), "tenant"},
	} {
		rec := e.do("PUT", tc.path, cop, []byte(tc.body))
		if got := decode[Error](t, rec); rec.Code != http.StatusBadRequest || got.Field != tc.field {
			t.Errorf("PUT %s: %d %s, want 400 on %s", tc.path, rec.Code, rec.Body, tc.field)
		}
	}
}

// Any body of PUT /v1/endpoints/{name}, by anyone, is a 200 by the owner
// or an admin whose answer is what the store then holds, with the tenant
// unchanged, or a 4xx (an error document) that changes nothing in the
// store.
func FuzzUpdateEndpoint(f *testing.F) {
	q := newQuotaEnv(f)
	acme := q.tokens["acme"]
	doc := strings.Replace(chatEndpointYAML, "name: chat", "name: chat\ntenant: acme", 1)
	if rec := q.do("POST", "/v1/endpoints", acme, []byte(doc)); rec.Code != http.StatusCreated {
		f.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	stored := func(t testing.TB) map[string]any {
		var v struct {
			Spec map[string]any `json:"spec"`
		}
		if err := json.Unmarshal(q.do("GET", "/v1/endpoints/chat", q.admin, nil).Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		return v.Spec
	}
	f.Add("chat", []byte(strings.Replace(doc, "p95_ms: 150", "p95_ms: 90", 1)), uint8(0))
	f.Add("chat", []byte(strings.Replace(doc, "max_replicas: 4", "max_replicas: 9", 1)), uint8(2))
	f.Add("chat", []byte(strings.Replace(doc, "gpu_milli: 250", "gpu_milli: 500", 1)), uint8(0))
	f.Add("chat", []byte(`{"name":"chat","model":"m","slo":{"p95_ms":100},"throughput":{"T4":1}}`), uint8(1))
	f.Add("chat", []byte("name: chat\n---\nname: chat\n"), uint8(0))
	f.Add("nope", []byte(doc), uint8(2))
	f.Add("chat", []byte(`[`), uint8(0))
	f.Fuzz(func(t *testing.T, name string, body []byte, who uint8) {
		tok := []string{acme, q.tokens["globex"], q.admin}[int(who)%3]
		target := "/v1/endpoints/" + url.PathEscape(name)
		if !sendable(target) {
			return
		}
		before := q.keys(t)
		rec := q.do("PUT", target, tok, body)
		sent := "PUT " + target + " " + string(body)
		if rec.Code != http.StatusOK {
			if rec.Code >= 500 || rec.Code < 400 {
				t.Fatalf("%s: %d %s", sent, rec.Code, rec.Body)
			}
			var e Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s: error body %q", sent, rec.Body)
			}
			if after := q.keys(t); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s: refused (%d) but changed the store", sent, rec.Code)
			}
			return
		}
		if tok == q.tokens["globex"] {
			t.Fatalf("%s: another tenant updated acme's endpoint", sent)
		}
		var answer struct {
			Spec map[string]any `json:"spec"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%s: answer %q: %v", sent, rec.Body, err)
		}
		if got := stored(t); !reflect.DeepEqual(got, answer.Spec) || got["tenant"] != "acme" {
			t.Fatalf("%s: the store holds\n%v\nthe answer said\n%v", sent, got, answer.Spec)
		}
	})
}
