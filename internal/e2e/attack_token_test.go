package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAttackTokenLifecycle plays a leaked and a stale token: an expired
// token is refused (401 saying it expired), a revoked one is refused like
// an unknown one, a listing never shows a token or its whole hash, only
// the admin lists or revokes, and the admin token cannot be revoked
// through the API.
func TestAttackTokenLifecycle(t *testing.T) {
	needServer(t)
	name := uniq(t, "short")
	short := strings.TrimSpace(must(t, adminToken, "token", "create", "--tenant", "research", "--name", name, "--ttl", "2s"))
	must(t, short, "job", "list")
	victim := strings.TrimSpace(must(t, adminToken, "token", "create", "--tenant", "acme", "--name", name+"-v"))
	must(t, victim, "job", "list")

	// The listing: names, kinds, expiry; never a token or a whole hash.
	out := must(t, adminToken, "token", "list", "-o", "json")
	for _, secret := range []string{short, victim, adminToken, hashOf(short), hashOf(victim), hashOf(adminToken)} {
		if strings.Contains(out, secret) {
			t.Fatalf("token list shows a token or its hash:\n%s", out)
		}
	}
	var list struct {
		Tokens []struct {
			ID, Name, Kind, Tenant string
			ExpiresAt              *time.Time `json:"expires_at"`
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range list.Tokens {
		if k.Name == name {
			found = true
			if k.Kind != "tenant" || k.Tenant != "research" || k.ExpiresAt == nil || !strings.HasPrefix(hashOf(short), k.ID) {
				t.Errorf("listed %+v, want a research tenant token with an expiry and an ID from its hash", k)
			}
		}
	}
	if !found {
		t.Errorf("token list lacks %s:\n%s", name, out)
	}
	if table := must(t, adminToken, "token", "list"); !strings.Contains(table, name) || !strings.Contains(table, "EXPIRES") {
		t.Errorf("token list table:\n%s", table)
	}

	// Only the admin lists and revokes.
	for _, args := range [][]string{{"token", "list"}, {"token", "revoke", name + "-v"}} {
		r := allot(t, short, args...)
		if r.code == 0 || !strings.Contains(r.err, "Forbidden") {
			t.Errorf("a tenant token ran %v: exit %d, %q", args, r.code, r.err)
		}
	}
	resp := get(t, victim, "/v1/tokens")
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /v1/tokens with a tenant token: %d", resp.StatusCode)
	}

	// Revoked: refused from the next request on.
	must(t, adminToken, "token", "revoke", name+"-v")
	if r := allot(t, victim, "job", "list"); r.code == 0 || !strings.Contains(r.err, "Unauthorized") {
		t.Errorf("a revoked token listed jobs: exit %d, %q", r.code, r.err)
	}
	if r := allot(t, adminToken, "token", "revoke", name+"-v"); r.code != 2 || !strings.Contains(r.err, "NotFound") {
		t.Errorf("revoking twice: exit %d, %q", r.code, r.err)
	}

	// The admin token stays.
	var admin string
	for _, k := range list.Tokens {
		if k.Kind == "admin" && strings.HasPrefix(hashOf(adminToken), k.ID) {
			admin = k.ID
		}
	}
	if r := allot(t, adminToken, "token", "revoke", admin); r.code != 2 || !strings.Contains(r.err, "Conflict") {
		t.Errorf("revoking the admin token %q: exit %d, %q", admin, r.code, r.err)
	}
	must(t, adminToken, "job", "list")

	// Expired: refused, and told so.
	time.Sleep(2100 * time.Millisecond)
	r := allot(t, short, "job", "list")
	if r.code == 0 || !strings.Contains(r.err, "expired") {
		t.Errorf("an expired token: exit %d, %q; want a refusal saying it expired", r.code, r.err)
	}
	resp = get(t, short, "/v1/jobs")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/jobs with an expired token: %d, want 401", resp.StatusCode)
	}

	for _, ttl := range []string{"0s", "-1h", "forever", "99999d", "1ns"} {
		r := allot(t, adminToken, "token", "create", "--tenant", "research", "--ttl", ttl)
		if r.code != 2 || !strings.Contains(r.err, "field ttl") {
			t.Errorf("token create --ttl %s: exit %d, %q; want 2 naming ttl", ttl, r.code, r.err)
		}
	}
}

func hashOf(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// get sends GET path to the shared server with token.
func get(t *testing.T, token, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, serverURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
