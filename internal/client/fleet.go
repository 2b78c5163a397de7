package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Node and SKU are the API's bodies (package wire).
type (
	Node       = wire.Node
	NodeDetail = wire.NodeDetail
	SKU        = wire.SKU
)

// GetNode describes one node: its status, what its agent registered and
// each GPU's use (admin only).
func (c *Client) GetNode(ctx context.Context, name string) (NodeDetail, error) {
	var out NodeDetail
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes/" + seg(name), out: &out})
	return out, err
}

// Nodes lists the fleet's nodes (admin only).
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out struct {
		Nodes []Node `json:"nodes"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes", out: &out})
	return out.Nodes, err
}

// DrainNode drains node name for reason (admin only): the work on it runs
// on, nothing new is placed there until ResumeNode.
func (c *Client) DrainNode(ctx context.Context, name, reason string) (Node, error) {
	body, err := json.Marshal(wire.DrainRequest{Reason: reason})
	if err != nil {
		return Node{}, fmt.Errorf("encode drain: %w", err)
	}
	var out Node
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(name) + "/drain", body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// ResumeNode ends the drain of node name (admin only).
func (c *Client) ResumeNode(ctx context.Context, name string) (Node, error) {
	var out Node
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(name) + "/resume", out: &out})
	return out, err
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
