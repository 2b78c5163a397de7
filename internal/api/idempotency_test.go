package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSubmitIdempotencyKey checks the header's contract: a submit that
// repeats a key answers 200 with Idempotent-Replayed and the first job, a
// batch too; the key with another body is 409 naming the header; a
// malformed or repeated header is 400 naming it, before anything is
// stored.
func TestSubmitIdempotencyKey(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	post := func(path, body string, keys ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+cop)
		for _, k := range keys {
			req.Header.Add("Idempotency-Key", k)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	first := post("/v1/jobs", chatJSON, "deploy-42")
	if first.Code != http.StatusCreated || first.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("first submit: %d %s", first.Code, first.Body)
	}
	again := post("/v1/jobs", chatJSON, "deploy-42")
	if again.Code != http.StatusOK || again.Header().Get("Idempotent-Replayed") != "true" ||
		decode[Job](t, again).ID != decode[Job](t, first).ID || again.Header().Get("Location") != first.Header().Get("Location") {
		t.Fatalf("repeat: %d %v %s; want 200, Idempotent-Replayed and job %s", again.Code, again.Header(), again.Body, decode[Job](t, first).ID)
	}
	other := strings.Replace(chatJSON, `"chat"`, `"chat-2"`, 1)
	for _, tc := range []struct {
		name, body string
		keys       []string
		status     int
		code       string
	}{
		{"reused for another job", other, []string{"deploy-42"}, 409, "Conflict"},
		{"too long", other, []string{strings.Repeat("k", 256)}, 400, "InvalidSpec"},
		{"not ASCII", other, []string{"clé"}, 400, "InvalidSpec"},
		{"twice", other, []string{"a", "b"}, 400, "InvalidSpec"},
	} {
		rec := post("/v1/jobs", tc.body, tc.keys...)
		got := decode[Error](t, rec)
		if rec.Code != tc.status || got.Code != tc.code || got.Field != "Idempotency-Key" {
			t.Errorf("%s: %d %s, want %d %s naming Idempotency-Key", tc.name, rec.Code, rec.Body, tc.status, tc.code)
		}
	}

	batch := `[{"name":"a","resources":{"gpu_milli":100,"gpu_models":["T4"]}},{"name":"b","resources":{"gpu_milli":100,"gpu_models":["T4"]}}]`
	b1 := post("/v1/jobs/batch", batch, "batch-1")
	b2 := post("/v1/jobs/batch", batch, "batch-1")
	if b1.Code != http.StatusCreated || b2.Code != http.StatusOK || b2.Header().Get("Idempotent-Replayed") != "true" ||
		!bytes.Equal(b1.Body.Bytes(), b2.Body.Bytes()) {
		t.Fatalf("batch: %d then %d\n%s\n%s", b1.Code, b2.Code, b1.Body, b2.Body)
	}
	list := decode[struct{ Jobs []Job }](t, e.do("GET", "/v1/jobs", cop, nil))
	if len(list.Jobs) != 3 {
		t.Fatalf("%d jobs stored, want 3 (chat, a, b)", len(list.Jobs))
	}
}

// TestCreateInstanceIdempotencyKey: POST /v1/instances honours the key as
// a submit does.
func TestCreateInstanceIdempotencyKey(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	post := func(body, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/instances", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+cop)
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	const t4 = `{"sku":"NC64-T4x4","region":"eastus"}`
	first := post(t4, "box-1")
	if first.Code != http.StatusCreated {
		t.Fatalf("first create: %d %s", first.Code, first.Body)
	}
	again := post(t4, "box-1")
	if again.Code != http.StatusOK || again.Header().Get("Idempotent-Replayed") != "true" ||
		decode[Instance](t, again).ID != decode[Instance](t, first).ID {
		t.Fatalf("repeat: %d %v %s; want 200, Idempotent-Replayed and instance %s", again.Code, again.Header(), again.Body, decode[Instance](t, first).ID)
	}
	rec := post(`{"sku":"NC64-T4x4","region":"eastus","grace":"2m"}`, "box-1")
	if got := decode[Error](t, rec); rec.Code != http.StatusConflict || got.Code != "Conflict" || got.Field != "Idempotency-Key" {
		t.Fatalf("the key with another request: %d %s, want 409 Conflict naming Idempotency-Key", rec.Code, rec.Body)
	}
	list := decode[struct{ Instances []Instance }](t, e.do("GET", "/v1/instances", cop, nil))
	if len(list.Instances) != 1 {
		t.Fatalf("%d instances, want 1", len(list.Instances))
	}
}
