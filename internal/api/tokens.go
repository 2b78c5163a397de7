package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/server"
)

// tokenRequest is the body of POST /v1/tokens.
type tokenRequest struct {
	Tenant string `json:"tenant"`
	Node   string `json:"node"`
	Name   string `json:"name"`
	// Scope "metrics" makes a metrics-reader token (neither tenant nor
	// node): it reads every series of /metrics and nothing else.
	Scope string `json:"scope"`
	// TTL is a Go duration ("720h"); empty: until revoked.
	TTL string `json:"ttl"`
}

// parseTokenRequest reads a token request; the server checks the names.
func parseTokenRequest(body []byte) (server.TokenOptions, *Error) {
	var req tokenRequest
	if e := decodeStrict(body, &req); e != nil {
		return server.TokenOptions{}, e
	}
	o := server.TokenOptions{Tenant: req.Tenant, Node: req.Node, Name: req.Name, Scope: req.Scope}
	switch {
	case req.Scope != "" && req.Scope != server.ScopeMetrics && req.Scope != server.ScopeGateway:
		return o, &Error{Code: codeInvalidSpec, Field: "scope", Message: fmt.Sprintf("%q: want %q (a metrics reader), %q (a gateway) or none", clip(req.Scope), server.ScopeMetrics, server.ScopeGateway)}
	case req.Scope != "" && (req.Node != "" || req.Tenant != ""):
		return o, &Error{Code: codeInvalidSpec, Field: "scope", Message: "a " + clip(req.Scope) + " token has no tenant or node"}
	case req.Scope != "":
	case req.Node != "" && req.Tenant != "":
		return o, &Error{Code: codeInvalidSpec, Field: "node", Message: "give tenant or node, not both"}
	case req.Node == "" && req.Tenant == "":
		return o, &Error{Code: codeInvalidSpec, Field: "tenant", Message: "must not be empty (or give scope \"metrics\")"}
	}
	if req.TTL != "" {
		d, err := parseTTL(req.TTL)
		if err != nil {
			return o, &Error{Code: codeInvalidSpec, Field: "ttl", Message: err.Error()}
		}
		o.TTL = d
	}
	return o, nil
}

// parseTTL reads a token lifetime: a Go duration ("720h", "90m") or a
// number of days ("30d"), from 1s to server.MaxTokenTTL.
func parseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%q: want a duration from 1s to %v, e.g. 720h or 30d", clip(s), server.MaxTokenTTL)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := parseCount(days, 3650)
		if err != nil {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, bad
		}
		d = v
	}
	if d < time.Second || d > server.MaxTokenTTL {
		return 0, bad
	}
	return d, nil
}

// parseCount reads a decimal count from 0 to limit.
func parseCount(s string, limit int) (int, error) {
	if s == "" || len(s) > 9 {
		return 0, fmt.Errorf("not a count")
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("not a count")
		}
		n = n*10 + int(r-'0')
	}
	if n > limit {
		return 0, fmt.Errorf("over %d", limit)
	}
	return n, nil
}

// TokenInfo is a stored token in GET /v1/tokens: never the token itself.
type TokenInfo struct {
	ID        string     `json:"id"`
	Name      string     `json:"name,omitempty"`
	Kind      string     `json:"kind"`
	Tenant    string     `json:"tenant,omitempty"`
	Node      string     `json:"node,omitempty"`
	Endpoint  string     `json:"endpoint,omitempty"`
	CreatedAt *time.Time `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Expired   bool       `json:"expired"`
	// LastUsed is the last request with the token since the server
	// started; null when none.
	LastUsed *time.Time `json:"last_used"`
}

func newTokenInfo(t server.TokenInfo, now time.Time) TokenInfo {
	out := TokenInfo{ID: t.ID, Name: t.Name, Kind: t.Kind, Tenant: t.Tenant, Node: t.Node, Endpoint: t.Endpoint}
	if !t.CreatedAt.IsZero() {
		c := t.CreatedAt.UTC()
		out.CreatedAt = &c
	}
	if !t.ExpiresAt.IsZero() {
		e := t.ExpiresAt.UTC()
		out.ExpiresAt = &e
		out.Expired = !now.Before(e)
	}
	if !t.LastUsed.IsZero() {
		u := t.LastUsed
		out.LastUsed = &u
	}
	return out
}

func (h *handler) listTokens(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	toks, err := h.srv.Tokens(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.srv.Clock().Now()
	out := make([]TokenInfo, len(toks))
	for i, t := range toks {
		out[i] = newTokenInfo(t, now)
	}
	writeJSON(w, http.StatusOK, map[string][]TokenInfo{"tokens": out})
}

func (h *handler) revokeToken(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	t, err := h.srv.RevokeToken(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newTokenInfo(t, h.srv.Clock().Now()))
}
