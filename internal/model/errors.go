package model

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
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

// Printable checks a name a person chose and others will see printed (a
// job's name, a reservation's): valid UTF-8 with no control characters or
// other runes a terminal does not print as themselves. Ordinary spaces are
// allowed.
func Printable(field, s string) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fieldErr(field, "must be valid UTF-8 (byte %d is not)", i)
		}
		if !unicode.IsPrint(r) {
			return fieldErr(field, "must not hold control or other non-printable characters (found %U at byte %d)", r, i)
		}
		i += size
	}
	return nil
}
