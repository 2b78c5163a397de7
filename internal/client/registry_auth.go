package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/allot-dev/allot/internal/api/wire"
)

// RegistryCredential is a tenant's registry credential as the API shows
// it: never its secret.
type RegistryCredential = wire.RegistryCredential

// SetRegistryCredential stores the credential a tenant's jobs pull images
// of registry with (tenant "" is the token's own).
func (c *Client) SetRegistryCredential(ctx context.Context, tenant, registry, username, password string) (RegistryCredential, error) {
	body, err := json.Marshal(wire.RegistryCredentialSet{Tenant: tenant, Username: username, Password: password})
	if err != nil {
		return RegistryCredential{}, err
	}
	var out RegistryCredential
	err = c.do(ctx, request{method: http.MethodPut, path: "/v1/registry-credentials/" + seg(registry), body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// RegistryCredentials lists a tenant's registry credentials (tenant "" is
// the token's own).
func (c *Client) RegistryCredentials(ctx context.Context, tenant string) ([]RegistryCredential, error) {
	q := url.Values{}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	var out struct {
		Credentials []RegistryCredential `json:"registry_credentials"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/registry-credentials", query: q, out: &out})
	return out.Credentials, err
}

// DeleteRegistryCredential removes a tenant's credential for registry.
func (c *Client) DeleteRegistryCredential(ctx context.Context, tenant, registry string) error {
	q := url.Values{}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/registry-credentials/" + seg(registry), query: q})
}
