package model

import "regexp"

// NameRule says what ValidName accepts, for error messages.
const NameRule = "want 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit"

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidName reports whether name may name a stored object that is its own
// ID (a reservation, an endpoint): see NameRule.
func ValidName(name string) bool { return validName.MatchString(name) }
