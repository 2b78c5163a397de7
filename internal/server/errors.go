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

// Principal is who a token speaks for: one tenant, or the administrator.
type Principal struct {
	Tenant string // empty for the administrator
	Admin  bool
}

// Name is the principal's name in logs and rate limits: the tenant, or
// "admin".
func (p Principal) Name() string {
	if p.Admin {
		return "admin"
	}
	return p.Tenant
}

// sees reports whether p may see objects of tenant.
func (p Principal) sees(tenant string) bool { return p.Admin || p.Tenant == tenant }
