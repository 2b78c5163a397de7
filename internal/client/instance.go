package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/allot-dev/allot/internal/api/wire"
)

// CodeAllocationFailed refuses an instance whose SKU is sold in the region
// but has no node free now; the message names the soonest alternative.
const CodeAllocationFailed = "AllocationFailed"

// InstanceRequest asks for whole nodes of a SKU in a region
// (POST /v1/instances).
type InstanceRequest = wire.InstanceRequest

// Instance is a lease of Count whole nodes of one SKU in one region, until
// it is deleted; the job of the same ID backs it.
type Instance struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Tenant    string   `json:"tenant"`
	SKU       string   `json:"sku"`
	Region    string   `json:"region"`
	Count     int      `json:"count"`
	Priority  string   `json:"priority"`
	Grace     string   `json:"grace"`
	State     string   `json:"state"`
	Reason    string   `json:"reason"`
	Detail    string   `json:"detail"`
	Nodes     []string `json:"nodes"`
	Evictions int      `json:"evictions"`
	CreatedAt Time     `json:"created_at"`
	StartedAt Time     `json:"started_at"`
	EndedAt   Time     `json:"ended_at"`
	// EvictionDeadline is set while the instance is Preempted: when its
	// eviction notice ends and its nodes are taken back.
	EvictionDeadline Time `json:"eviction_deadline"`
}

// CreateInstance asks for the instance r describes. The server answers at
// once: the placed instance (or, with r.Wait, the queued one), or an
// *Error with code AllocationFailed, SkuNotAvailable or QuotaExceeded. It
// sends a fresh idempotency key, so a request whose answer was lost is sent
// again without leasing a second instance (see CreateInstanceKeyed).
func (c *Client) CreateInstance(ctx context.Context, r InstanceRequest) (Instance, error) {
	return c.CreateInstanceKeyed(ctx, NewIdempotencyKey(), r)
}

// CreateInstanceKeyed is CreateInstance with the caller's idempotency key:
// the server answers a repeat of the key for the same request, within 24
// hours, with what it answered the first (the instance as it is now, or
// the same refusal) and leases nothing more; a repeat for another request
// is refused with Conflict.
func (c *Client) CreateInstanceKeyed(ctx context.Context, key string, r InstanceRequest) (Instance, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return Instance{}, fmt.Errorf("encode instance: %w", err)
	}
	var out Instance
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/instances", body: body,
		contentType: "application/json", out: &out, key: key})
	return out, err
}

// Instances returns the instances the token may see, of tenant when it is
// not empty; ended ones too with all.
func (c *Client) Instances(ctx context.Context, tenant string, all bool) ([]Instance, error) {
	q := url.Values{}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	if all {
		q.Set("all", "true")
	}
	var out struct {
		Instances []Instance `json:"instances"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/instances", query: q, out: &out})
	return out.Instances, err
}

// Instance returns the instance id.
func (c *Client) Instance(ctx context.Context, id string) (Instance, error) {
	var out Instance
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/instances/" + seg(id), out: &out})
	return out, err
}

// DeleteInstance ends the instance id and frees its nodes.
func (c *Client) DeleteInstance(ctx context.Context, id string) (Instance, error) {
	var out Instance
	err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/instances/" + seg(id), out: &out})
	return out, err
}
