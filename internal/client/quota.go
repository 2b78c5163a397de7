package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Quota requests, quota edits and the audit log (package wire).
type (
	QuotaRequest    = wire.QuotaRequest
	QuotaRequestNew = wire.QuotaRequestNew
	QuotaSet        = wire.QuotaSet
	AuditRecord     = wire.AuditRecord
	AuditLog        = wire.AuditLog
)

// RequestQuota files a request for the quota r asks for (the new total).
func (c *Client) RequestQuota(ctx context.Context, r QuotaRequestNew) (QuotaRequest, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return QuotaRequest{}, fmt.Errorf("encode quota request: %w", err)
	}
	var out QuotaRequest
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/quota-requests", body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// QuotaRequests lists the quota requests the token may see (a tenant its
// own, the admin all), in state when it is not empty.
func (c *Client) QuotaRequests(ctx context.Context, state string) ([]QuotaRequest, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
	}
	var out struct {
		QuotaRequests []QuotaRequest `json:"quota_requests"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/quota-requests", query: q, out: &out})
	return out.QuotaRequests, err
}

// DecideQuotaRequest approves or denies the pending request id (admin
// only); a denial needs a reason.
func (c *Client) DecideQuotaRequest(ctx context.Context, id string, approve bool, reason string) (QuotaRequest, error) {
	body, err := json.Marshal(wire.QuotaDecision{Reason: reason})
	if err != nil {
		return QuotaRequest{}, fmt.Errorf("encode decision: %w", err)
	}
	verb := "deny"
	if approve {
		verb = "approve"
	}
	var out QuotaRequest
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/quota-requests/" + seg(id) + "/" + verb, body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// SetQuota replaces one quota (admin only).
func (c *Client) SetQuota(ctx context.Context, q QuotaSet) (QuotaSet, error) {
	body, err := json.Marshal(q)
	if err != nil {
		return QuotaSet{}, fmt.Errorf("encode quota: %w", err)
	}
	var out QuotaSet
	err = c.do(ctx, request{method: http.MethodPut, path: "/v1/quotas", body: body, contentType: "application/json", out: &out})
	return out, err
}

// AuditQuery selects audit records: since a time or a duration back from
// now ("24h", "7d", RFC 3339; empty: all), by actor (a principal's or a
// token's name), at most Limit (0: the server's default).
type AuditQuery struct {
	Since, Actor string
	Limit        int
}

// Audit reads the audit log, oldest first (admin only).
func (c *Client) Audit(ctx context.Context, a AuditQuery) (AuditLog, error) {
	q := url.Values{}
	if a.Since != "" {
		q.Set("since", a.Since)
	}
	if a.Actor != "" {
		q.Set("actor", a.Actor)
	}
	if a.Limit != 0 {
		q.Set("limit", strconv.Itoa(a.Limit))
	}
	var out AuditLog
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/audit", query: q, out: &out})
	return out, err
}
