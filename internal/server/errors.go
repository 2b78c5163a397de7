package server

import (
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/refusal"
)

// Code classifies a refused request; the API maps each to an HTTP status
// (package refusal).
type Code = refusal.Code

// Codes of refused requests (docs/api.md).
const (
	CodeInvalidSpec           = refusal.InvalidSpec
	CodeSkuNotAvailable       = refusal.SkuNotAvailable
	CodeQuotaExceeded         = refusal.QuotaExceeded
	CodeForbidden             = refusal.Forbidden
	CodeNotFound              = refusal.NotFound
	CodeConflict              = refusal.Conflict
	CodeTooLarge              = refusal.TooLarge
	CodeResidencyForbidden    = refusal.ResidencyForbidden
	CodeTopologyUnsatisfiable = refusal.TopologyUnsatisfiable
)

// Error is a request the server refuses, as opposed to a failure of the
// server itself (any other error).
type Error = refusal.Error

func refuse(code Code, field, format string, args ...any) *Error {
	return refusal.New(code, field, format, args...)
}

// fromField turns a model validation error into an InvalidSpec refusal.
func fromField(err error) error { return refusal.FromField(err) }

// Principal is who a token speaks for: one tenant, the administrator, the
// agent of one node, or the replicas of one inference endpoint.
type Principal struct {
	Tenant string // empty for the administrator, agents and endpoints
	Admin  bool
	Node   string // set for a node token: the agent of this node
	// Endpoint is set for an endpoint's token: its replicas, which may
	// only report the endpoint's metrics (endpoints.go). With Admin also
	// set it is the server itself acting for the endpoint (submitting and
	// stopping its replicas); no token carries both.
	Endpoint string
	// Token is the name the token was given at creation ("" when none):
	// the audit log records it next to Name.
	Token string
	// System is set, with Admin, when the server acts on its own (a drain
	// of a node that fails jobs, faildrain.go): Name is System. No token
	// carries it.
	System string
	// Metrics is set for a metrics-reader token (ScopeMetrics): it may
	// read every series of /metrics and call nothing else.
	Metrics bool
	// Gateway is set for a gateway token (ScopeGateway): it may read the
	// routes of every endpoint and report what it measured, nothing else.
	Gateway bool
}

// Name is the principal's name in logs and rate limits: the tenant,
// "admin", "node:NAME", "endpoint:NAME" or the server's own ("server").
func (p Principal) Name() string {
	switch {
	case p.System != "":
		return p.System
	case p.Endpoint != "":
		return "endpoint:" + p.Endpoint
	case p.Admin:
		return "admin"
	case p.Node != "":
		return "node:" + p.Node
	case p.Metrics:
		return "metrics:" + p.Token
	case p.Gateway:
		return "gateway:" + p.Token
	}
	return p.Tenant
}

// Runs reports whether p may act as node's agent: the administrator, or
// that node's token.
func (p Principal) Runs(node string) bool { return p.Admin || (p.Node != "" && p.Node == node) }

// mayReport reports whether p may report facts about j: its tenant, the
// administrator, or the agent of a node of j's current attempt.
func (p Principal) mayReport(j *model.Job) bool {
	if p.Sees(j.Spec.Tenant) {
		return true
	}
	if p.Node == "" || len(j.Status.Attempts) == 0 {
		return false
	}
	return ranOn(j, p.Node)
}

// Sees reports whether p may see objects of tenant.
func (p Principal) Sees(tenant string) bool { return p.Admin || p.Tenant == tenant }
