package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Token is the API's answer to a token request (package wire).
type Token = wire.Token

// CreateToken creates a token for tenant (admin only).
func (c *Client) CreateToken(ctx context.Context, tenant string) (Token, error) {
	body, err := json.Marshal(map[string]string{"tenant": tenant})
	if err != nil {
		return Token{}, fmt.Errorf("encode token request: %w", err)
	}
	var out Token
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/tokens", body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// CreateNodeToken creates a token for the agent of node (admin only).
func (c *Client) CreateNodeToken(ctx context.Context, node string) (Token, error) {
	body, err := json.Marshal(map[string]string{"node": node})
	if err != nil {
		return Token{}, fmt.Errorf("encode token request: %w", err)
	}
	var out Token
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/tokens", body: body,
		contentType: "application/json", out: &out})
	return out, err
}
