package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/store"
)

// MaxTokenTTL is the longest lifetime a token may be given: ten years.
const MaxTokenTTL = 10 * 365 * 24 * time.Hour

// MaxTokenName bounds a token's name.
const MaxTokenName = 64

// tokenIDLen is how many hex digits of a token's hash name it in listings
// and revocations: enough to tell tokens apart, nothing to rebuild the
// token from (the hash is of 256 random bits).
const tokenIDLen = 12

// ScopeMetrics is the scope of a metrics-reader token: what a Prometheus
// server scrapes /metrics with. It reads every series, every tenant's
// included, and may call nothing else.
const ScopeMetrics = "metrics"

// ScopeGateway is the scope of a gateway token: what allot gateway reads
// the routes of every tenant's endpoints with (GET /v1/routes, which
// carries the hashes of the tokens that may call each endpoint) and posts
// its measurements with (POST /v1/gateway/reports). It may call nothing
// else: no job, no endpoint's spec, no token.
const ScopeGateway = "gateway"

// TokenOptions says what token CreateTokenFor makes: for Tenant, for Node,
// or of Scope ScopeMetrics (one of them), named Name, valid for TTL (0:
// until revoked).
type TokenOptions struct {
	Tenant, Node, Name string
	Scope              string
	TTL                time.Duration
}

// TokenInfo is a stored token as an admin may see it: never the token,
// only an ID made of the first digits of its hash.
type TokenInfo struct {
	ID        string
	Name      string
	Kind      string // admin, tenant, node, endpoint, metrics or gateway
	Tenant    string
	Node      string
	Endpoint  string
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	// LastUsed is when a request last carried the token since the server
	// started (kept in memory only); zero when none did.
	LastUsed time.Time
}

func (e tokenEntry) expired(now time.Time) bool { return !e.expires.IsZero() && !now.Before(e.expires) }

// tokenEntry returns the cached entry of the token with this hash.
func (c *cache) tokenEntry(hash string) (tokenEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.tokens[hash]
	return e, ok
}

// TokenExpired reports whether token is one the server knows that has
// expired, and when: a client is told so rather than "unknown token".
func (s *Server) TokenExpired(token string) (time.Time, bool) {
	if token == "" {
		return time.Time{}, false
	}
	e, ok := s.cache.tokenEntry(HashToken(token))
	if !ok || !e.expired(s.clock.Now()) {
		return time.Time{}, false
	}
	return e.expires, true
}

// CreateTokenFor makes a tenant or node token as o says, stores only its
// hash, and returns it with what a listing shows of it.
func (s *Server) CreateTokenFor(ctx context.Context, o TokenOptions) (string, TokenInfo, error) {
	switch {
	case o.Scope != "" && o.Scope != ScopeMetrics && o.Scope != ScopeGateway:
		return "", TokenInfo{}, refuse(CodeInvalidSpec, "scope", "%q: want %q (a metrics reader), %q (a gateway) or none", o.Scope, ScopeMetrics, ScopeGateway)
	case o.Scope != "" && (o.Tenant != "" || o.Node != ""):
		return "", TokenInfo{}, refuse(CodeInvalidSpec, "scope", "a %s token has no tenant or node", o.Scope)
	case o.Scope == "" && (o.Tenant == "") == (o.Node == ""):
		return "", TokenInfo{}, refuse(CodeInvalidSpec, "tenant", "give tenant or node (one of them), or scope %q", ScopeMetrics)
	}
	if o.TTL < 0 || o.TTL > MaxTokenTTL || (o.TTL > 0 && o.TTL < time.Second) {
		return "", TokenInfo{}, refuse(CodeInvalidSpec, "ttl", "is %v, want 1s to %v (or none: until revoked)", o.TTL, MaxTokenTTL)
	}
	if err := checkTokenName(o.Name); err != nil {
		return "", TokenInfo{}, err
	}
	w := s.world()
	if o.Tenant != "" && !w.tenants[o.Tenant] {
		return "", TokenInfo{}, refuse(CodeInvalidSpec, "tenant", "unknown tenant %q", o.Tenant)
	}
	if _, ok := w.nodes[o.Node]; o.Node != "" && !ok {
		return "", TokenInfo{}, refuse(CodeInvalidSpec, "node", "no node %q in the fleet", o.Node)
	}
	now := s.clock.Now()
	rec := tokenRecord{Tenant: o.Tenant, Node: o.Node, Scope: o.Scope, Name: o.Name, CreatedAt: now}
	if o.TTL > 0 {
		rec.ExpiresAt = now.Add(o.TTL).UTC()
	}
	tok := newToken()
	if err := s.storeToken(ctx, tok, rec); err != nil {
		return "", TokenInfo{}, err
	}
	s.log.Info("token created", "tenant", o.Tenant, "node", o.Node, "scope", o.Scope, "name", o.Name, "expires", rec.ExpiresAt)
	info := tokenInfo(HashToken(tok), rec)
	s.audit(ctx, Principal{Admin: true}, ActionTokenCreate, "token/"+info.ID, tokenAuditText(info))
	return tok, info, nil
}

func checkTokenName(name string) error {
	if len(name) > MaxTokenName {
		return refuse(CodeInvalidSpec, "name", "is %d bytes, over the limit of %d", len(name), MaxTokenName)
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return refuse(CodeInvalidSpec, "name", "%q: want letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}

func tokenInfo(hash string, r tokenRecord) TokenInfo {
	t := TokenInfo{ID: hash[:min(tokenIDLen, len(hash))], Name: r.Name, Tenant: r.Tenant, Node: r.Node, Endpoint: r.Endpoint,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	switch {
	case r.Admin:
		t.Kind = "admin"
	case r.Node != "":
		t.Kind = "node"
	case r.Endpoint != "":
		t.Kind = "endpoint"
	case r.Scope == ScopeMetrics:
		t.Kind = "metrics"
	case r.Scope == ScopeGateway:
		t.Kind = "gateway"
	default:
		t.Kind = "tenant"
	}
	return t
}

// Tokens lists every stored token, oldest first (admin).
func (s *Server) Tokens(ctx context.Context) ([]TokenInfo, error) {
	kvs, _, err := s.st.List(ctx, prefixTokens)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]TokenInfo, 0, len(kvs))
	for _, kv := range kvs {
		var r tokenRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			s.log.Error("skipping unreadable token record", "key", kv.Key, "err", err)
			continue
		}
		hash := strings.TrimPrefix(kv.Key, prefixTokens)
		t := tokenInfo(hash, r)
		if e, ok := s.cache.tokenEntry(hash); ok && e.lastUse != nil {
			if ns := e.lastUse.Load(); ns != 0 {
				t.LastUsed = time.Unix(0, ns).UTC()
			}
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].CreatedAt.Before(out[b].CreatedAt) })
	return out, nil
}

// RevokeToken deletes the tenant or node token with this ID (or, when no
// ID matches, the one token with this name); requests with it are refused
// from then on. The admin token (kept in DATA/admin-token) and endpoint
// tokens (deleted with their endpoint) cannot be revoked here.
func (s *Server) RevokeToken(ctx context.Context, idOrName string) (TokenInfo, error) {
	if idOrName == "" || len(idOrName) > 2*MaxTokenName {
		return TokenInfo{}, refuse(CodeInvalidSpec, "id", "want a token ID or name, as 'allot token list' shows")
	}
	kvs, _, err := s.st.List(ctx, prefixTokens)
	if err != nil {
		return TokenInfo{}, fmt.Errorf("list tokens: %w", err)
	}
	var byID, byName []store.KV
	var infos []TokenInfo
	for _, kv := range kvs {
		var r tokenRecord
		if json.Unmarshal(kv.Value, &r) != nil {
			continue
		}
		t := tokenInfo(strings.TrimPrefix(kv.Key, prefixTokens), r)
		switch {
		case t.ID == idOrName:
			byID = append(byID, kv)
			infos = append(infos, t)
		case t.Name == idOrName:
			byName = append(byName, kv)
			infos = append(infos, t)
		}
	}
	match := byID
	if len(match) == 0 {
		match = byName
	} else {
		infos = infos[:1]
	}
	switch {
	case len(match) == 0:
		return TokenInfo{}, refuse(CodeNotFound, "id", "no token with ID or name %q", idOrName)
	case len(match) > 1:
		return TokenInfo{}, refuse(CodeConflict, "id", "%d tokens are named %q; revoke by ID", len(match), idOrName)
	}
	t := infos[0]
	switch t.Kind {
	case "admin":
		return TokenInfo{}, refuse(CodeConflict, "id", "the admin token is not revoked through the API: "+
			"stop the server, delete DATA/admin-token and the next start makes a new one")
	case "endpoint":
		return TokenInfo{}, refuse(CodeConflict, "id", "an endpoint's token goes with its endpoint: delete endpoint %s", t.Endpoint)
	}
	kv := match[0]
	rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(kv.Key, kv.ModRev)}, Then: []store.Op{store.DeleteOp(kv.Key)}})
	if errors.Is(err, store.ErrConflict) {
		return TokenInfo{}, refuse(CodeConflict, "id", "token %s changed meanwhile; try again", t.ID)
	}
	if err != nil {
		return TokenInfo{}, fmt.Errorf("revoke token: %w", err)
	}
	s.cache.delKey(kv.Key, rev)
	s.log.Info("token revoked", "id", t.ID, "name", t.Name, "kind", t.Kind, "tenant", t.Tenant, "node", t.Node)
	s.audit(ctx, Principal{Admin: true}, ActionTokenRevoke, "token/"+t.ID, tokenAuditText(t))
	return t, nil
}
