package azurellm

import "errors"

// ErrFormat is wrapped by every error about the content of a trace file.
var ErrFormat = errors.New("azurellm: bad trace file")
