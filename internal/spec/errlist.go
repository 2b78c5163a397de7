package spec

import (
	"errors"
	"fmt"

	"github.com/allot-dev/allot/internal/model"
)

// MaxErrors is the most problems one read reports; a file with more says
// how many it left out.
const MaxErrors = 50

// Errors lists the problems in err, which a reader of this package
// returned: one *Error, or several joined. Errors that are not an *Error
// (a file that cannot be read) are left out.
func Errors(err error) []*Error {
	var out []*Error
	for _, e := range flatten(err) {
		var se *Error
		if errors.As(e, &se) {
			out = append(out, se)
		}
	}
	return out
}

// flatten lists the errors joined in err, depth first; err itself when it
// joins none.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// joinErrors joins the problems of one read, flattened, keeping the first
// MaxErrors and saying how many more there were; nil when there are none.
func joinErrors(errs ...error) error {
	var all []error
	for _, e := range errs {
		all = append(all, flatten(e)...)
	}
	if len(all) == 1 {
		return all[0]
	}
	if len(all) > MaxErrors {
		more := &Error{Msg: fmt.Sprintf("and %d more problems (limit: %d reported at once)", len(all)-MaxErrors, MaxErrors)}
		var first *Error
		if errors.As(all[0], &first) {
			more.File = first.File
		}
		all = append(all[:MaxErrors:MaxErrors], more)
	}
	return errors.Join(all...)
}

// didYouMean is "; did you mean NAME?" for the name among names nearest
// to word (model.Nearest), or "".
func didYouMean(word string, names []string) string {
	if n := model.Nearest(word, names); n != "" {
		return "; did you mean " + n + "?"
	}
	return ""
}

// tooLarge reports whether err holds a problem that ends a read: a
// document too large to go on reading.
func tooLarge(err error) bool { return errors.Is(err, ErrTooLarge) }
