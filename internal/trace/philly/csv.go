package philly

import "errors"

// ErrFormat is wrapped by every error about the content of a trace file.
var ErrFormat = errors.New("philly: bad trace file")
