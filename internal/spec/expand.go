package spec

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ErrTooLarge is matched (errors.Is) by the *Error of a document that is too
// large once its aliases are expanded.
var ErrTooLarge = errors.New("spec: document too large once aliases are expanded")

// MaxExpanded is the least size, in bytes, that a file may reach once its
// aliases are expanded; a file larger than a quarter of it may expand to
// four times its own size. A file without aliases never comes near: its
// expanded size is at most its own.
const MaxExpanded = 4 << 20

// expandLimit is the expanded size allowed for a file of n bytes.
func expandLimit(n int) int64 { return max(MaxExpanded, 4*int64(n)) }

// expansion measures the size of YAML documents as if every alias were
// replaced by a copy of its anchor's value: a scalar costs its length plus
// one, a collection one plus its items, an alias what its anchor costs.
// Each anchor is measured once (memoised), and the walk stops as soon as the
// total passes the limit, so it costs at most the size of the parsed tree.
type expansion struct {
	file  string
	limit int64
	total int64
	size  map[*yaml.Node]int64 // anchored nodes measured; -1 while being measured
}

func newExpansion(file string, dataLen int) *expansion {
	return &expansion{file: file, limit: expandLimit(dataLen), size: map[*yaml.Node]int64{}}
}

// add counts document n towards the total of the file.
func (x *expansion) add(n *yaml.Node) error {
	s, err := x.measure(n, 0)
	if err != nil {
		return err
	}
	x.total += s
	if x.total > x.limit {
		return x.tooLarge(n, "")
	}
	return nil
}

// measure returns the expanded size of n; base is the size already counted
// on the way to n, so that the walk fails as soon as the file is too large.
func (x *expansion) measure(n *yaml.Node, base int64) (int64, error) {
	if n == nil {
		return 0, nil
	}
	if n.Kind == yaml.AliasNode {
		a := n.Alias
		if a == nil {
			return 1, nil // reading it says "alias refers to nothing"
		}
		s, ok := x.size[a]
		switch {
		case ok && s < 0:
			return 0, &Error{File: x.file, Line: n.Line, Column: n.Column,
				Msg: fmt.Sprintf("alias *%s refers to a value that contains it", n.Value)}
		case !ok:
			var err error
			if s, err = x.anchored(a, base); err != nil {
				return 0, err
			}
		}
		if x.total+base+s > x.limit {
			return 0, x.tooLarge(n, n.Value)
		}
		return s, nil
	}
	if n.Anchor != "" {
		if s, ok := x.size[n]; ok && s >= 0 {
			return s, nil
		}
		return x.anchored(n, base)
	}
	return x.node(n, base)
}

// anchored measures an anchored node once.
func (x *expansion) anchored(n *yaml.Node, base int64) (int64, error) {
	x.size[n] = -1
	s, err := x.node(n, base)
	if err != nil {
		return 0, err
	}
	x.size[n] = s
	return s, nil
}

func (x *expansion) node(n *yaml.Node, base int64) (int64, error) {
	s := int64(1) + int64(len(n.Value))
	if x.total+base+s > x.limit {
		return 0, x.tooLarge(n, "")
	}
	for _, c := range n.Content {
		cs, err := x.measure(c, base+s)
		if err != nil {
			return 0, err
		}
		s += cs
	}
	if x.total+base+s > x.limit {
		return 0, x.tooLarge(n, "")
	}
	return s, nil
}

func (x *expansion) tooLarge(n *yaml.Node, alias string) *Error {
	what := "the file"
	if alias != "" {
		what = "alias *" + alias
	}
	return &Error{File: x.file, Line: n.Line, Column: n.Column, err: ErrTooLarge,
		Msg: fmt.Sprintf("%s makes the file too large: over %s once aliases are expanded "+
			"(limit: a file may expand to %s or 4 times its own size)", what, SizeText(x.limit), SizeText(MaxExpanded))}
}
