package spec

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// override is one --set key=value.
type override struct {
	key   string
	path  []string // key split at dots
	value string
}

var nodeDecoderType = reflect.TypeFor[nodeDecoder]()

// parseSets reads --set overrides, checking each key against the file
// layout t and each value's syntax.
func parseSets(sets []string, t reflect.Type) ([]override, error) {
	out := make([]override, 0, len(sets))
	for _, s := range sets {
		key, value, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, &Error{File: "--set " + s, Msg: "want key=value, e.g. priority=spot or retry.max_retries=5"}
		}
		o := override{key: key, path: strings.Split(key, "."), value: value}
		short, err := shortKey(t, o.path)
		if err != nil {
			return nil, &Error{File: "--set " + key, Field: key, Msg: err.Error()}
		}
		o.path = short
		if err := checkKey(t, o.path); err != nil {
			return nil, &Error{File: "--set " + key, Field: key, Msg: err.Error()}
		}
		if _, err := parseValue(value); err != nil {
			return nil, &Error{File: "--set " + key, Field: key, Msg: err.Error()}
		}
		out = append(out, o)
	}
	return out, nil
}

// shortKey returns path, or, when path is one key that the layout t does
// not have at its top but has under exactly one of its mappings, the whole
// path to it: instance_count is resources.instance_count, as 'plan' and
// 'job show' print the fields. A key under several mappings is refused with
// each whole key.
func shortKey(t reflect.Type, path []string) ([]string, error) {
	if len(path) != 1 {
		return path, nil
	}
	top := fieldsOf(deref(t))
	if _, ok := top.types[path[0]]; ok {
		return path, nil
	}
	var found [][]string
	for _, name := range top.names {
		ft := deref(top.types[name])
		if ft.Kind() != reflect.Struct || reflect.PointerTo(ft).Implements(nodeDecoderType) {
			continue
		}
		if _, ok := fieldsOf(ft).types[path[0]]; ok {
			found = append(found, []string{name, path[0]})
		}
	}
	switch len(found) {
	case 0:
		return path, nil // checkKey names the keys there are
	case 1:
		return found[0], nil
	}
	var whole []string
	for _, f := range found {
		whole = append(whole, strings.Join(f, "."))
	}
	return nil, fmt.Errorf("key %q is under several mappings: give the whole key, one of %s", path[0], strings.Join(whole, ", "))
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// checkKey reports whether path names a field of the layout t.
func checkKey(t reflect.Type, path []string) error {
	for i, seg := range path {
		if seg == "" {
			return fmt.Errorf("empty part in key %q", strings.Join(path, "."))
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		parent := strings.Join(path[:i], ".")
		switch {
		case i > 0 && reflect.PointerTo(t).Implements(nodeDecoderType):
			return fmt.Errorf("%s takes one value and has no key %q; set %s=…", parent, seg, parent)
		case t.Kind() == reflect.Struct:
			f := fieldsOf(t)
			ft, ok := f.types[seg]
			if !ok {
				where := ""
				if parent != "" {
					where = " under " + parent
				}
				return fmt.Errorf("unknown key %q (known keys%s: %s)%s", seg, where, strings.Join(f.names, ", "), didYouMean(seg, f.names))
			}
			t = ft
		case t.Kind() == reflect.Map:
			t = t.Elem() // any name is a key of the map
		default:
			return fmt.Errorf("%s is a single value and has no key %q", parent, seg)
		}
	}
	return nil
}

// parseValue reads a --set value as a YAML scalar or flow collection; an
// empty value is null, which resets the field to its default.
func parseValue(value string) (n *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("invalid value: parser failed: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return nil, fmt.Errorf("invalid value: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := newExpansion("", len(value)).add(&doc); err != nil {
		return nil, fmt.Errorf("invalid value: %s", err.(*Error).Msg)
	}
	if len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, nil
	}
	return doc.Content[0], nil
}

// applySets returns a copy of the mapping n with the overrides applied.
// Only the mappings on the way to a set key are copied; the rest is shared
// with n. Nodes that come from an override are recorded in d.setBy, so
// that errors in them name the override.
func (d *decoder) applySets(n *yaml.Node, overrides []override) (*yaml.Node, error) {
	if len(overrides) == 0 || n == nil || n.Kind != yaml.MappingNode {
		return n, nil // nothing to do, or not a job: reading it will say so
	}
	root := copyMapping(n)
	for _, o := range overrides {
		val, err := parseValue(o.value)
		if err != nil {
			return nil, &Error{File: "--set " + o.key, Field: o.key, Msg: err.Error()}
		}
		d.mark(val, o.key)
		m := root
		for i, seg := range o.path {
			idx := keyIndex(m, seg)
			if i == len(o.path)-1 {
				if idx >= 0 {
					m.Content[idx+1] = val
				} else {
					m.Content = append(m.Content, d.newKey(seg, o.key), val)
				}
				break
			}
			var child *yaml.Node
			if idx >= 0 {
				child = resolve(m.Content[idx+1])
			} else {
				child = lookup(m, seg) // from a merged mapping
			}
			switch {
			case child == nil || isNull(child):
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				d.setBy[child] = o.key
			case child.Kind == yaml.MappingNode:
				child = copyMapping(child)
			default:
				return nil, d.errorAt(child, strings.Join(o.path[:i+1], "."),
					"--set %s: want a mapping here to set %s in, got %s", o.key, o.path[i+1], describe(child))
			}
			if idx >= 0 {
				m.Content[idx+1] = child
			} else {
				m.Content = append(m.Content, d.newKey(seg, o.key), child)
			}
			m = child
		}
	}
	return root, nil
}

// copyMapping returns a shallow copy of mapping n, whose own keys can be
// changed without changing n. Merged keys are kept as merges.
func copyMapping(n *yaml.Node) *yaml.Node {
	cp := *n
	cp.Anchor = ""
	cp.Content = append([]*yaml.Node(nil), n.Content...)
	return &cp
}

// keyIndex returns the index in m.Content of the first key named key, or -1.
func keyIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key && !isMerge(k) {
			return i
		}
	}
	return -1
}

func (d *decoder) newKey(name, key string) *yaml.Node {
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
	d.setBy[k] = key
	return k
}

// mark records every node of the value tree n as coming from --set key.
func (d *decoder) mark(n *yaml.Node, key string) {
	if n == nil {
		return
	}
	if _, done := d.setBy[n]; done {
		return
	}
	d.setBy[n] = key
	for _, c := range n.Content {
		d.mark(c, key)
	}
	d.mark(n.Alias, key)
}
