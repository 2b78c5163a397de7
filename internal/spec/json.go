package spec

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// A job submitted through the API is usually one JSON object. JSON is YAML
// too, but the YAML parser costs three quarters of what reading a job costs,
// so jsonDocument builds the node tree the YAML parser would, once
// encoding/json has checked the syntax: the decoder that follows, its
// checks and its errors (file, line, column and field) are those of the
// YAML path, which FuzzJSONDocument holds it to. Input that is not exactly
// one JSON object or array goes to the YAML parser as before, which also
// reports syntax errors.

// jsonDocument returns data as a YAML document node when data is one JSON
// object or array, and ok false otherwise. Text the YAML parser would read
// differently from JSON goes to the YAML path: invalid UTF-8, and line
// breaks YAML knows and JSON does not (a lone CR, NEL, LS, PS), which could
// stand raw in a JSON string.
func jsonDocument(data []byte) (doc *yaml.Node, ok bool) {
	start := skipSpace(data, 0)
	if start == len(data) || (data[start] != '{' && data[start] != '[') || !json.Valid(data) || !utf8.Valid(data) ||
		bytes.Contains(data, []byte("\u0085")) || bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029")) ||
		loneCR(data) {
		return nil, false
	}
	b := jsonBuilder{data: data, line: 1}
	root, err := b.value()
	if err != nil {
		return nil, false // json.Valid said yes: cannot happen
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: root.Column, Content: []*yaml.Node{root}}, true
}

// jsonBuilder reads JSON that json.Valid has accepted, so it checks
// nothing but keeps track of lines.
type jsonBuilder struct {
	data      []byte
	off       int // next byte to read
	line      int // of off, 1-based
	lineStart int // offset of the first byte of line
}

// value reads the JSON value at the next non-space byte as a node.
func (b *jsonBuilder) value() (*yaml.Node, error) {
	b.skip()
	n := &yaml.Node{Line: b.line, Column: utf8.RuneCount(b.data[b.lineStart:b.off]) + 1}
	switch c := b.data[b.off]; c {
	case '{', '[':
		b.off++
		n.Kind, n.Tag, n.Style = yaml.MappingNode, "!!map", yaml.FlowStyle
		end := byte('}')
		if c == '[' {
			n.Kind, n.Tag, end = yaml.SequenceNode, "!!seq", ']'
		}
		for {
			b.skip()
			if b.data[b.off] == end {
				b.off++
				return n, nil
			}
			v, err := b.value() // in a mapping, the key, then its value
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
	case '"':
		s, err := b.str()
		if err != nil {
			return nil, err
		}
		n.Kind, n.Tag, n.Value, n.Style = yaml.ScalarNode, "!!str", s, yaml.DoubleQuotedStyle
	case 't':
		b.off += len("true")
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", "true"
	case 'f':
		b.off += len("false")
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", "false"
	case 'n':
		b.off += len("null")
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	default: // a number
		from := b.off
		for b.off < len(b.data) && strings.IndexByte("+-.0123456789eE", b.data[b.off]) >= 0 {
			b.off++
		}
		v := string(b.data[from:b.off])
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, numberTag(v), v
	}
	return n, nil
}

// str reads the string at b.off, escapes decoded.
func (b *jsonBuilder) str() (string, error) {
	from, escaped := b.off, false
	for b.off++; b.data[b.off] != '"'; b.off++ {
		if b.data[b.off] == '\\' {
			escaped = true
			b.off++
		}
	}
	b.off++
	if !escaped {
		return string(b.data[from+1 : b.off-1]), nil
	}
	var s string
	err := json.Unmarshal(b.data[from:b.off], &s)
	return s, err
}

// skip moves past white space and the separators ',' and ':', counting
// lines.
func (b *jsonBuilder) skip() {
	for ; b.off < len(b.data); b.off++ {
		switch b.data[b.off] {
		case '\n':
			b.line++
			b.lineStart = b.off + 1
		case ' ', '\t', '\r', ',', ':':
		default:
			return
		}
	}
}

// numberTag is the tag YAML resolves a JSON number to: an integer when it
// has neither fraction nor exponent and fits 64 bits, else a float.
func numberTag(s string) string {
	if strings.ContainsAny(s, ".eE") {
		return "!!float"
	}
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return "!!int"
	}
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return "!!int"
	}
	return "!!float"
}

func loneCR(data []byte) bool {
	for i, c := range data {
		if c == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			return true
		}
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}
