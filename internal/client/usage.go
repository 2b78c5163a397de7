package client

import (
	"context"
	"net/http"
	"net/url"
)

// Usage is one tenant's GPUs in use in one region and series, against its
// quota there. QuotaGPUs is nil when no quota applies.
type Usage struct {
	Tenant    string   `json:"tenant"`
	Region    string   `json:"region"`
	Series    string   `json:"series"`
	UsedGPUs  float64  `json:"used_gpus"`
	QuotaGPUs *float64 `json:"quota_gpus"`
}

// Usage returns the usage the token may see in region (all regions when
// empty): a tenant's own, or every tenant's for an admin.
func (c *Client) Usage(ctx context.Context, region string) ([]Usage, error) {
	q := url.Values{}
	if region != "" {
		q.Set("region", region)
	}
	var out struct {
		Usage []Usage `json:"usage"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/usage", query: q, out: &out})
	return out.Usage, err
}
