package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/server"
)

// A tenant sets, lists and deletes its registry credentials; no answer
// ever holds the password; another tenant reaches none of them.
func TestRegistryCredentials(t *testing.T) {
	q := newQuotaEnv(t)
	const secret = "s3cret-registry-token"
	acme, globex := q.tokens["acme"], q.tokens["globex"]
	rec := q.do("PUT", "/v1/registry-credentials/ghcr.io", acme, []byte(`{"username":"bot","password":"`+secret+`"}`))
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), secret) {
		t.Fatalf("set: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		method, path, token, body string
		code                      int
	}{
		{"GET", "/v1/registry-credentials", acme, "", http.StatusOK},
		{"GET", "/v1/registry-credentials?tenant=acme", globex, "", http.StatusForbidden},
		{"PUT", "/v1/registry-credentials/ghcr.io", globex, `{"tenant":"acme","username":"x","password":"y"}`, http.StatusForbidden},
		{"DELETE", "/v1/registry-credentials/ghcr.io?tenant=acme", globex, "", http.StatusForbidden},
		{"GET", "/v1/registry-credentials", q.admin, "", http.StatusBadRequest}, // names no tenant
		{"GET", "/v1/registry-credentials?tenant=acme", q.admin, "", http.StatusOK},
		{"PUT", "/v1/registry-credentials/Not_A_Host!", acme, `{"username":"x","password":"y"}`, http.StatusBadRequest},
		{"PUT", "/v1/registry-credentials/ghcr.io", acme, `{"username":"a:b","password":"y"}`, http.StatusBadRequest},
		{"PUT", "/v1/registry-credentials/ghcr.io", acme, `{"username":"x","password":""}`, http.StatusBadRequest},
		{"PUT", "/v1/registry-credentials/ghcr.io", acme, `{"username":"x","password":"y","extra":1}`, http.StatusBadRequest},
		{"DELETE", "/v1/registry-credentials/quay.io", acme, "", http.StatusNotFound},
	} {
		rec := q.do(tc.method, tc.path, tc.token, []byte(tc.body))
		if rec.Code != tc.code || strings.Contains(rec.Body.String(), secret) {
			t.Errorf("%s %s: %d %s, want %d without the secret", tc.method, tc.path, rec.Code, rec.Body, tc.code)
		}
	}
	rec = q.do("GET", "/v1/registry-credentials", acme, nil)
	var list struct {
		Credentials []wire.RegistryCredential `json:"registry_credentials"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Credentials) != 1 || list.Credentials[0].Registry != "ghcr.io" {
		t.Fatalf("list: %s (%v)", rec.Body, err)
	}
	if rec := q.do("DELETE", "/v1/registry-credentials/ghcr.io", acme, nil); rec.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if cs, _ := q.srv.RegistryCredentials(context.Background(), server.Principal{Tenant: "acme"}, ""); len(cs) != 0 {
		t.Errorf("after delete: %+v", cs)
	}
}

// FuzzRegistryCredentialSet holds the set call to its contract: any
// registry and body give 200 or a 4xx with a message, never a 5xx, and no
// answer holds the password.
func FuzzRegistryCredentialSet(f *testing.F) {
	f.Add("ghcr.io", `{"username":"bot","password":"pw-1"}`)
	f.Add("localhost:5000", `{"tenant":"acme","username":"u","password":"pw-2"}`)
	f.Add("[::1]:5000", `{"username":"u\n","password":"pw-3"}`)
	f.Add("a..b", `{"username":"","password":""}`)
	f.Add("ghcr.io", `{"username":"u","password":"`+strings.Repeat("p", 9000)+`"}`)
	f.Add("ghcr.io", `[]`)
	q := newQuotaEnv(f)
	f.Fuzz(func(t *testing.T, registry, body string) {
		if registry == "" || registry == "." || registry == ".." {
			return // not one path segment
		}
		rec := q.do("PUT", "/v1/registry-credentials/"+url.PathEscape(registry), q.tokens["acme"], []byte(body))
		if rec.Code >= 500 {
			t.Fatalf("PUT %q %q: %d %s", registry, body, rec.Code, rec.Body)
		}
		var req wire.RegistryCredentialSet
		if json.Unmarshal([]byte(body), &req) == nil && len(req.Password) > 3 && strings.Contains(rec.Body.String(), req.Password) {
			t.Fatalf("the answer holds the password: %s", rec.Body)
		}
		if rec.Code != http.StatusOK {
			var e struct{ Message string }
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Message == "" {
				t.Fatalf("PUT %q %q: %d without a message: %s", registry, body, rec.Code, rec.Body)
			}
		}
	})
}
