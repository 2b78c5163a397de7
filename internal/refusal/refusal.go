// Package refusal is the error of a request that is refused, as opposed to
// a failure of the server itself: a Code the API maps to an HTTP status,
// the field at fault when there is one, and a message for a person. The
// server and the packages it wires (internal/endpoint) return it; the API
// (internal/api) writes it as {"code","field","message"}.
package refusal

import (
	"errors"
	"fmt"

	"github.com/allot-dev/allot/internal/model"
)

// Code classifies a refused request; the API maps each to an HTTP status.
type Code string

// Codes of refused requests (docs/api.md).
const (
	InvalidSpec     Code = "InvalidSpec"
	SkuNotAvailable Code = "SkuNotAvailable"
	QuotaExceeded   Code = "QuotaExceeded"
	Forbidden       Code = "Forbidden"
	NotFound        Code = "NotFound"
	Conflict        Code = "Conflict"
	// TooLarge: the object would be larger than the store keeps.
	TooLarge Code = "BodyTooLarge"

	// ResidencyForbidden and TopologyUnsatisfiable refuse a job that can
	// never run, with the core's reason of the same name.
	ResidencyForbidden    Code = "ResidencyForbidden"
	TopologyUnsatisfiable Code = "TopologyUnsatisfiable"
)

// Error is a refused request.
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

// New returns a refusal with code, naming field ("" for none), and the
// message format makes of args.
func New(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// FromField turns a model validation error into an InvalidSpec refusal
// naming its field.
func FromField(err error) error {
	var fe *model.FieldError
	if errors.As(err, &fe) {
		return &Error{Code: InvalidSpec, Field: fe.Field, Msg: fe.Msg}
	}
	return &Error{Code: InvalidSpec, Msg: err.Error()}
}

// Is reports whether err is a refusal, and with one of codes when any are
// given.
func Is(err error, codes ...Code) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if len(codes) == 0 {
		return true
	}
	for _, c := range codes {
		if e.Code == c {
			return true
		}
	}
	return false
}
