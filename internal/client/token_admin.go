package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// TokenRequest asks for a token of Tenant, of Node, or of Scope "metrics"
// (one of them), named Name, valid for TTL ("720h", "30d"; empty: until
// revoked).
type TokenRequest struct {
	Tenant string `json:"tenant,omitempty"`
	Node   string `json:"node,omitempty"`
	Scope  string `json:"scope,omitempty"`
	Name   string `json:"name,omitempty"`
	TTL    string `json:"ttl,omitempty"`
}

// CreateTokenWith creates a token as r asks (admin only).
func (c *Client) CreateTokenWith(ctx context.Context, r TokenRequest) (Token, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return Token{}, fmt.Errorf("encode token request: %w", err)
	}
	var out Token
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/tokens", body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// TokenInfo is a stored token as GET /v1/tokens lists it: never the token.
type TokenInfo struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Tenant    string `json:"tenant"`
	Node      string `json:"node"`
	Endpoint  string `json:"endpoint"`
	CreatedAt Time   `json:"created_at"`
	ExpiresAt Time   `json:"expires_at"`
	Expired   bool   `json:"expired"`
	LastUsed  Time   `json:"last_used"` // since the server started
}

// Tokens lists the stored tokens (admin only).
func (c *Client) Tokens(ctx context.Context) ([]TokenInfo, error) {
	var out struct {
		Tokens []TokenInfo `json:"tokens"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/tokens", out: &out})
	return out.Tokens, err
}

// RevokeToken deletes the token with this ID or name (admin only).
func (c *Client) RevokeToken(ctx context.Context, idOrName string) (TokenInfo, error) {
	var out TokenInfo
	err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/tokens/" + seg(idOrName), out: &out})
	return out, err
}
