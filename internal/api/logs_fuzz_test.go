package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// logEnv is an env with one running job of copilot (attempt 1), whose log
// the admin token may append to.
func logEnv(t testing.TB) (*env, string) {
	e := newEnv(t, 0, 0)
	job := decode[Job](t, e.do("POST", "/v1/jobs", e.tokens["copilot"], []byte(chatJSON)))
	if err := e.srv.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e, "/v1/jobs/" + job.ID + "/attempts/1/log"
}

// TestLogOffsetQuery: a chunk with ?offset= is answered with the next
// offset the server wants; a bad offset, rank or skip is a 400 naming it.
func TestLogOffsetQuery(t *testing.T) {
	e, path := logEnv(t)
	if rec := e.do("POST", path+"?rank=0&offset=0", e.admin, []byte("a\n")); rec.Code != http.StatusOK ||
		decode[LogAppended](t, rec).Next != 2 {
		t.Fatalf("first chunk: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("POST", path+"?offset=5", e.admin, []byte("b\n")); rec.Code != http.StatusOK ||
		decode[LogAppended](t, rec).Next != 2 {
		t.Fatalf("a chunk past what the server has: %d %s, want next 2", rec.Code, rec.Body)
	}
	if rec := e.do("POST", path, e.admin, []byte("own line\n")); rec.Code != http.StatusNoContent {
		t.Fatalf("a line without offset: %d %s", rec.Code, rec.Body)
	}
	for query, field := range map[string]string{"offset=-1": "offset", "offset=x": "offset", "offset=0&rank=-2": "rank",
		"offset=0&rank=1": "rank", "offset=0&skip=yes": "skip"} {
		rec := e.do("POST", path+"?"+query, e.admin, []byte("c\n"))
		if rec.Code != http.StatusBadRequest || decode[Error](t, rec).Field != field {
			t.Errorf("?%s: %d %s, want 400 naming %s", query, rec.Code, rec.Body, field)
		}
	}
}

// FuzzLogQuery posts a chunk with random query strings: never a 5xx or a
// panic, and a refusal is an error document.
func FuzzLogQuery(f *testing.F) {
	e, path := logEnv(f)
	for _, q := range []string{"", "offset=0", "offset=3&rank=0&skip=1", "offset=99999999999999999999", "rank=&offset=",
		"offset=1e3", "offset=0&rank=2147483648", "skip=1"} {
		f.Add(q, []byte("line\n"))
	}
	f.Fuzz(func(t *testing.T, query string, body []byte) {
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.URL.RawQuery = query // as the client sent it, unparsed
		req.Header.Set("Authorization", "Bearer "+e.admin)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		switch {
		case rec.Code >= 500:
			t.Fatalf("?%s: %d %s", query, rec.Code, rec.Body)
		case rec.Code >= 400:
			if decode[Error](t, rec).Code == "" {
				t.Fatalf("?%s: %d without an error code: %s", query, rec.Code, rec.Body)
			}
		}
	})
}
