package server

import (
	"errors"
	"fmt"

	"github.com/allot-dev/allot/internal/model"
)

// Code classifies a refused request; the API maps each to an HTTP status.
type Code string

// Codes of refused requests (docs/api.md).
const (
	CodeInvalidSpec     Code = "InvalidSpec"
	CodeSkuNotAvailable Code = "SkuNotAvailable"
	CodeQuotaExceeded   Code = "QuotaExceeded"
	CodeForbidden       Code = "Forbidden"
	CodeNotFound        Code = "NotFound"
	CodeConflict        Code = "Conflict"
	// CodeTooLarge: the object would be larger than the store keeps.
	CodeTooLarge Code = "BodyTooLarge"

	// CodeResidencyForbidden and CodeTopologyUnsatisfiable refuse a job
	// that can never run, with the core's reason of the same name.
	CodeResidencyForbidden    Code = "ResidencyForbidden"
	CodeTopologyUnsatisfiable Code = "TopologyUnsatisfiable"
)

// Error is a request the server refuses, as opposed to a failure of the
// server itself (any other error).
type Error struct {
	Code  Code
	Field string // the field at fault, when one is
	Msg   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Msg)
}

func refuse(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fromField turns a model validation error into an InvalidSpec refusal.
func fromField(err error) error {
	var fe *model.FieldError
	if errors.As(err, &fe) {
		return &Error{Code: CodeInvalidSpec, Field: fe.Field, Msg: fe.Msg}
	}
	return &Error{Code: CodeInvalidSpec, Msg: err.Error()}
}

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
	if p.sees(j.Spec.Tenant) {
		return true
	}
	if p.Node == "" || len(j.Status.Attempts) == 0 {
		return false
	}
	for _, n := range j.Status.Attempts[len(j.Status.Attempts)-1].Nodes {
		if n == p.Node {
			return true
		}
	}
	return false
}

// sees reports whether p may see objects of tenant.
func (p Principal) sees(tenant string) bool { return p.Admin || p.Tenant == tenant }
