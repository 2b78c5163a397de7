package client

import (
	"context"
	"net/http"
	"net/url"
)

// Node is one machine of the fleet and what runs on it.
type Node struct {
	Name         string   `json:"name"`
	SKU          string   `json:"sku"`
	Region       string   `json:"region"`
	Cluster      string   `json:"cluster"`
	Leaf         string   `json:"leaf"`
	Rack         string   `json:"rack"`
	Health       string   `json:"health"`
	GPUs         int      `json:"gpus"`
	GPUModel     string   `json:"gpu_model"`
	FreeGPUMilli int64    `json:"free_gpu_milli"`
	Jobs         []string `json:"jobs"`
}

// SKU is a machine type sold in one region, with its capacity now.
type SKU struct {
	Name             string  `json:"name"`
	Series           string  `json:"series"`
	GPUModel         string  `json:"gpu_model"`
	GPUsPerNode      int     `json:"gpus_per_node"`
	Region           string  `json:"region"`
	Nodes            int     `json:"nodes"`
	FreeNodes        int     `json:"free_nodes"`
	FreeGPUs         float64 `json:"free_gpus"`
	PricePerHour     float64 `json:"price_per_hour"`
	SpotPricePerHour float64 `json:"spot_price_per_hour"`
}

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
