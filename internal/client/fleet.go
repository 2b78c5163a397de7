package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Node and SKU are the API's bodies (package wire).
type (
	Node = wire.Node
	SKU  = wire.SKU
)

// Nodes lists the fleet's nodes (admin only).
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out struct {
		Nodes []Node `json:"nodes"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes", out: &out})
	return out.Nodes, err
}

// SKUs lists the SKUs of region, of one series ("ND") when series is not
// empty.
func (c *Client) SKUs(ctx context.Context, region, series string) ([]SKU, error) {
	q := url.Values{}
	if region != "" {
		q.Set("region", region)
	}
	if series != "" {
		q.Set("series", series)
	}
	var out struct {
		SKUs []SKU `json:"skus"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skus", query: q, out: &out})
	return out.SKUs, err
}
