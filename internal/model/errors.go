package model

import (
	"errors"
	"fmt"
)

// FieldError reports an invalid value and the dotted path of the field that
// holds it, e.g. "resources.gpus_per_instance".
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Prefix returns err with prefix prepended to its field path when err is a
// *FieldError; other errors are returned unchanged.
func Prefix(prefix string, err error) error {
	var fe *FieldError
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	f := prefix
	if fe.Field != "" {
		if fe.Field[0] == '[' {
			f += fe.Field
		} else {
			f += "." + fe.Field
		}
	}
	return &FieldError{Field: f, Msg: fe.Msg}
}
