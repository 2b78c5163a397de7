package spec

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// Error is a problem in a file a person wrote. File is the file's name, or
// "--set key" when the value came from a command-line override; Line and
// Column are 1-based and zero when unknown. Field is the dotted path of the
// offending field as written in the file, e.g. "resources.gpus_per_instance"
// or "regions[1].clusters[0].fabric"; it is empty for errors about the file
// as a whole.
type Error struct {
	File   string
	Line   int
	Column int
	Field  string
	Msg    string
	err    error // a sentinel it matches (ErrTooLarge), or nil
}

// Unwrap returns the sentinel error e matches, if any.
func (e *Error) Unwrap() error { return e.err }

// Error formats e as "file:line:col: field: msg", leaving out the parts that
// are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if e.File != "" {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" && e.File != "--set "+e.Field { // a --set names its field already
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// yamlLine finds the line number in the parser's messages ("yaml: line 3: …").
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// syntaxError turns an error of the YAML parser into an *Error.
func syntaxError(file string, err error) *Error {
	msg := err.Error()
	e := &Error{File: file}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	e.Msg = "invalid YAML: " + msg
	return e
}

// errorAt builds an *Error for the value at node n, whose field path is
// path. A node that came from a --set override names the override instead of
// a place in the file.
func (d *decoder) errorAt(n *yaml.Node, path, format string, args ...any) *Error {
	e := &Error{File: d.file, Field: path, Msg: fmt.Sprintf(format, args...)}
	if n == nil {
		return e
	}
	if key, ok := d.setBy[n]; ok {
		e.File = "--set " + key
		return e
	}
	e.Line, e.Column = n.Line, n.Column
	return e
}

// errorAtPath builds an *Error for the field at path, located by walking the
// document from root. When the field is absent, the error points at the
// nearest enclosing value that is present.
func (d *decoder) errorAtPath(root *yaml.Node, path, format string, args ...any) *Error {
	return d.errorAt(locate(root, path), path, format, args...)
}

// fromModel maps an error from model validation, or several joined, back
// to the file. A *model.FieldError's path is rewritten by rewrite (nil keeps it) and then
// located under root; other errors are reported against the whole file.
func (d *decoder) fromModel(root *yaml.Node, err error, rewrite func(string) string) error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range flatten(err) {
		var fe *model.FieldError
		if !errors.As(e, &fe) {
			out = append(out, &Error{File: d.file, Msg: e.Error()})
			continue
		}
		path := fe.Field
		if rewrite != nil {
			path = rewrite(path)
		}
		out = append(out, d.errorAtPath(root, path, "%s", fe.Msg))
	}
	return joinErrors(out...)
}

// locate walks a dotted field path such as "regions[1].clusters[0].fabric"
// from root and returns the deepest node on the way that exists: the value
// of the last field when it is present.
func locate(root *yaml.Node, path string) *yaml.Node {
	n := resolve(root)
	for _, seg := range splitPath(path) {
		var next *yaml.Node
		if seg.key != "" {
			next = lookup(n, seg.key)
		} else if n != nil && n.Kind == yaml.SequenceNode && seg.index < len(n.Content) {
			next = resolve(n.Content[seg.index])
		}
		if next == nil {
			break
		}
		n = next
	}
	return n
}

// segment is one step of a field path: a mapping key or a sequence index.
type segment struct {
	key   string
	index int
}

// splitPath splits "a.b[2].c" into a, b, [2], c. Parts it cannot read end
// the path.
func splitPath(path string) []segment {
	var segs []segment
	for path != "" {
		switch {
		case path[0] == '.':
			path = path[1:]
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return segs
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 {
				return segs
			}
			segs = append(segs, segment{index: i})
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segs = append(segs, segment{key: path[:end]})
			path = path[end:]
		}
	}
	return segs
}

// resolve follows aliases and unwraps documents.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && i < 100; i++ {
		switch {
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		case n.Kind == yaml.DocumentNode && len(n.Content) == 1:
			n = n.Content[0]
		default:
			return n
		}
	}
	return n
}

// lookup returns the value of key in mapping n, looking into merged
// mappings ("<<") when the key is not set directly.
func lookup(n *yaml.Node, key string) *yaml.Node {
	return lookupSeen(n, key, map[*yaml.Node]bool{})
}

// lookupSeen is lookup that searches each mapping once, as merges may refer
// to themselves.
func lookupSeen(n *yaml.Node, key string, seen map[*yaml.Node]bool) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode || seen[n] {
		return nil
	}
	seen[n] = true
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && !isMerge(n.Content[i]) {
			return resolve(n.Content[i+1])
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			continue
		}
		for _, m := range mergeSources(n.Content[i+1]) {
			if v := lookupSeen(m, key, seen); v != nil {
				return v
			}
		}
	}
	return nil
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Tag == "!!merge"
}

// mergeSources lists the mappings a merge key's value names: one mapping or
// a sequence of them.
func mergeSources(v *yaml.Node) []*yaml.Node {
	v = resolve(v)
	if v == nil {
		return nil
	}
	if v.Kind == yaml.SequenceNode {
		out := make([]*yaml.Node, 0, len(v.Content))
		for _, c := range v.Content {
			out = append(out, resolve(c))
		}
		return out
	}
	return []*yaml.Node{v}
}
