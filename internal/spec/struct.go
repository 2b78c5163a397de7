package spec

import (
	"reflect"

	"github.com/allot-dev/allot/internal/model"
)

// Field types for the file formats other packages define (the simulator's
// scenario files) and read with DecodeStruct: a Duration is written as a
// Go duration ("90s", "72h"), a Time as an RFC 3339 time or a date.
// A Throughput is a mapping of GPU models to requests/s.
type (
	Duration   = duration
	Time       = timestamp
	Throughput = throughput
)

// DecodeStruct reads the one YAML document of data, from the file called
// name, into v, a pointer to a struct whose fields carry yaml tags (and may
// be of this package's field types), with this package's errors: unknown
// fields, wrong types and bad values are an *Error naming the line and
// the field. want says what the file should hold, for an empty file.
// Then check, when not nil, validates what was read: a *model.FieldError
// it returns is reported at the line of its field.
func DecodeStruct(name string, data []byte, v any, want string, check func() error) error {
	docs, err := parseDocuments(name, data)
	if err != nil {
		return err
	}
	root, err := single(name, docs, want)
	if err != nil {
		return err
	}
	d := newDecoder(name)
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return &Error{File: name, Msg: "spec: DecodeStruct needs a pointer to a struct"} // a bug in the caller
	}
	if err := d.decode(root, "", rv.Elem()); err != nil {
		return err
	}
	if check != nil {
		return d.fromModel(root, check(), nil)
	}
	return nil
}

// FieldError returns a validation error of field (a dotted path as written
// in the file, e.g. "endpoints[2].peak_rps") for DecodeStruct's check.
func FieldError(field, msg string) error { return &model.FieldError{Field: field, Msg: msg} }
