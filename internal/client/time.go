package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Time is a timestamp of the API. It decodes from RFC 3339, null or "";
// the zero Time means "not set" and encodes as null.
type Time struct{ time.Time }

// MarshalJSON encodes t as RFC 3339, or null when zero.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.Time.Format(time.RFC3339Nano))
}

// UnmarshalJSON reads RFC 3339, null or "".
func (t *Time) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) || bytes.Equal(data, []byte(`""`)) {
		*t = Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("want an RFC 3339 time, got %s", data)
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time, got %q", s)
	}
	if v.Year() <= 1 { // Go's zero time, as a server may write it
		v = time.Time{}
	}
	*t = Time{v}
	return nil
}
