package store

import "fmt"

// ValidateWatch checks the arguments of Store.Watch as every backend must:
// a valid prefix and a revision that is not negative.
func ValidateWatch(prefix string, fromRev int64) error {
	if err := ValidatePrefix("prefix", prefix); err != nil {
		return err
	}
	if fromRev < 0 {
		return &InvalidError{Field: "from_rev", Msg: fmt.Sprintf("is %d, must be >= 0", fromRev)}
	}
	return nil
}

// FailedWatch returns the channel of a watch that ends before it starts:
// one Event carrying err, then the close, as Store.Watch promises.
func FailedWatch(err error) <-chan Event {
	out := make(chan Event, 1)
	out <- Event{Err: err}
	close(out)
	return out
}
