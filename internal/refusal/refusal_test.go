package refusal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

func TestRefusal(t *testing.T) {
	named := New(Conflict, "name", "endpoint %q exists", "chat")
	if got := named.Error(); got != `Conflict: name: endpoint "chat" exists` {
		t.Errorf("Error() = %q", got)
	}
	if got := New(NotFound, "", "no endpoint").Error(); got != "NotFound: no endpoint" {
		t.Errorf("Error() without a field = %q", got)
	}
	wrapped := fmt.Errorf("stop replica: %w", named)
	for _, c := range []struct {
		err   error
		codes []Code
		want  bool
	}{
		{wrapped, nil, true},
		{wrapped, []Code{NotFound, Conflict}, true},
		{wrapped, []Code{NotFound}, false},
		{errors.New("disk full"), nil, false},
		{nil, nil, false},
	} {
		if got := Is(c.err, c.codes...); got != c.want {
			t.Errorf("Is(%v, %v) = %v, want %v", c.err, c.codes, got, c.want)
		}
	}
	var e *Error
	if err := FromField(&model.FieldError{Field: "slo.p95_ms", Msg: "must be above 0"}); !errors.As(err, &e) || e.Code != InvalidSpec || e.Field != "slo.p95_ms" {
		t.Errorf("FromField: %v", err)
	}
}
