package client

import (
	"context"
	"net/http"

	"github.com/allot-dev/allot/internal/api/wire"
)

// PolicySet is the server's active operator policy set (docs/policies.md).
type PolicySet struct {
	Revision    int64         `json:"revision"` // 0: none was ever applied
	AppliedAt   Time          `json:"applied_at"`
	AppliedBy   string        `json:"applied_by"`
	Text        string        `json:"text"` // the policies file as applied
	EvaluatedAt Time          `json:"evaluated_at"`
	Policies    []Policy      `json:"policies"`
	Events      []PolicyEvent `json:"events"`
}

// Policy is one policy with what it does now: Firing while it applies
// (Held: its conditions hold now; otherwise it cools down until Until).
type Policy struct {
	Name       string            `json:"name"`
	Firing     bool              `json:"firing"`
	Held       bool              `json:"held"`
	Since      Time              `json:"since"`
	Until      Time              `json:"until"`
	Cooldown   string            `json:"cooldown"`
	Actions    []string          `json:"actions"`
	Conditions []PolicyCondition `json:"conditions"`
	Overrides  []PolicyOverride  `json:"overrides"`
	Ignored    []PolicyOverride  `json:"ignored"`
}

// PolicyCondition and PolicyOverride are shared with the other side of
// the API (package wire).
type (
	PolicyCondition = wire.PolicyCondition
	PolicyOverride  = wire.PolicyOverride
)

// PolicyEvent is a policy that fired, cleared or stopped.
type PolicyEvent struct {
	At         Time              `json:"at"`
	Policy     string            `json:"policy"`
	Event      string            `json:"event"` // fires, clears or stops
	Text       string            `json:"text"`
	Conditions []PolicyCondition `json:"conditions"`
}

// ApplyPolicies replaces the server's policy set with a policies file,
// YAML or JSON (admin token).
func (c *Client) ApplyPolicies(ctx context.Context, file []byte) (PolicySet, error) {
	var out PolicySet
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/policies", body: file,
		contentType: "application/yaml", out: &out})
	return out, err
}

// Policies returns the server's policy set and what each policy does now
// (admin token).
func (c *Client) Policies(ctx context.Context) (PolicySet, error) {
	var out PolicySet
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/policies", out: &out})
	return out, err
}

// DeletePolicy removes the policy called name (admin token) and returns
// the set left.
func (c *Client) DeletePolicy(ctx context.Context, name string) (PolicySet, error) {
	var out PolicySet
	err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/policies/" + seg(name), out: &out})
	return out, err
}

// DeletePolicies removes every policy (admin token); the file's targets
// stay.
func (c *Client) DeletePolicies(ctx context.Context) (PolicySet, error) {
	var out PolicySet
	err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/policies", out: &out})
	return out, err
}
