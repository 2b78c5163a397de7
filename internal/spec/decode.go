package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

const (
	// maxVisits bounds the values decoded from one document, counting each
	// expansion of an alias, so that a small file cannot expand into an
	// enormous one.
	maxVisits = 1_000_000
	// maxMergeDepth bounds chains of merge keys ("<<").
	maxMergeDepth = 16
)

// decoder reads the YAML node tree of one file into the file-format types
// of this package, reporting the file, line and field of every problem.
type decoder struct {
	file string
	// setBy names the --set key whose value a node came from.
	setBy  map[*yaml.Node]string
	visits int
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, setBy: map[*yaml.Node]string{}}
}

// nodeDecoder is implemented by field types that read themselves from a
// node (quantities, durations, priorities, commands). A returned error that
// is not an *Error is reported at n.
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string) error
}

// parseDocuments splits data into its YAML documents, leaving out empty
// ones (a lone "---", comments only, or an explicit null).
func parseDocuments(file string, data []byte) (docs []*yaml.Node, err error) {
	if doc, ok := jsonDocument(data); ok { // the fast path of API submits: json.go
		return []*yaml.Node{resolve(doc)}, nil
	}
	defer func() {
		// The parser is not ours; whatever it does, a person gets an error.
		if r := recover(); r != nil {
			docs, err = nil, &Error{File: file, Msg: fmt.Sprintf("invalid YAML: parser failed: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	size := newExpansion(file, len(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, syntaxError(file, err)
		}
		// Bound what aliases expand to before anything reads the tree.
		if err := size.add(&doc); err != nil {
			return nil, err
		}
		root := resolve(&doc)
		if root == nil || root.Kind == yaml.DocumentNode || isNull(root) {
			continue
		}
		docs = append(docs, root)
	}
}

// single returns the only document of a fleet or tenancy file.
func single(file string, docs []*yaml.Node, want string) (*yaml.Node, error) {
	switch len(docs) {
	case 0:
		return nil, &Error{File: file, Msg: "file is empty: want " + want}
	case 1:
		return docs[0], nil
	}
	return nil, &Error{File: file, Line: docs[1].Line, Column: docs[1].Column,
		Msg: "want one YAML document, found another one here"}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// decode reads n into v, whose field path is path.
func (d *decoder) decode(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind == yaml.AliasNode {
		n = resolve(n)
		if n == nil {
			return d.errorAt(n, path, "alias refers to nothing")
		}
	}
	if err := d.visit(n, path); err != nil {
		return err
	}
	if isNull(n) {
		return nil // absent: keep the default
	}
	if v.CanAddr() {
		if nd, ok := v.Addr().Interface().(nodeDecoder); ok {
			err := nd.decodeNode(d, n, path)
			var e *Error
			if err != nil && !errors.As(err, &e) {
				err = d.errorAt(n, path, "%s", err.Error())
			}
			return err
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.errorAt(n, path, "want a mapping of fields, got %s", describe(n))
		}
		return d.decodeStruct(n, path, v, map[string]*yaml.Node{}, false, 0)
	case reflect.Slice:
		return d.decodeSlice(n, path, v)
	case reflect.Map:
		return d.decodeMap(n, path, v)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.decode(n, path, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return d.errorAt(n, path, "want a string, got %s", describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Int, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			return d.errorAt(n, path, "want an integer, got %s", describe(n))
		}
		v.SetInt(i)
		return nil
	case reflect.Float64:
		f, err := number(n)
		if err != nil {
			return d.errorAt(n, path, "%s", err)
		}
		v.SetFloat(f)
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			return d.errorAt(n, path, "want true or false, got %s", describe(n))
		}
		v.SetBool(b)
		return nil
	}
	return d.errorAt(n, path, "cannot read a value of type %s", v.Type()) // a bug in this package
}

// visit counts one more value read, failing when there are too many.
func (d *decoder) visit(n *yaml.Node, path string) error {
	if d.visits++; d.visits > maxVisits {
		return d.errorAt(n, path, "document is too large (more than %d values once aliases are expanded)", maxVisits)
	}
	return nil
}

// decodeStruct reads mapping n into struct v. seen holds the keys already
// set: a key written twice is an error, except that in a merged mapping
// (merged is true) a key already set directly is skipped, as it wins.
func (d *decoder) decodeStruct(n *yaml.Node, path string, v reflect.Value, seen map[string]*yaml.Node, merged bool, depth int) error {
	fields := fieldsOf(v.Type())
	var merges []*yaml.Node
	var errs []error // of fields; reading goes on to report them all
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if isMerge(k) {
			merges = append(merges, val)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return d.errorAt(k, path, "want a field name, got %s", describe(k))
		}
		fp := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			if merged {
				continue
			}
			return d.errorAt(k, fp, "set twice (first at line %d)", first.Line)
		}
		seen[k.Value] = k
		f, ok := fields.index[k.Value]
		if !ok {
			errs = append(errs, d.errorAt(k, fp, "unknown field %q (known fields: %s)%s", k.Value,
				strings.Join(fields.names, ", "), didYouMean(k.Value, fields.names)))
			continue
		}
		if err := d.decode(val, fp, v.Field(f)); err != nil {
			if tooLarge(err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return joinErrors(errs...)
	}
	if len(merges) > 0 && depth >= maxMergeDepth {
		return d.errorAt(n, path, "merge keys (<<) nest too deeply")
	}
	for _, m := range merges {
		for _, src := range mergeSources(m) {
			if err := d.visit(m, path); err != nil {
				return err
			}
			if src == nil || src.Kind != yaml.MappingNode {
				return d.errorAt(m, path, "a merge key (<<) needs a mapping or a list of mappings")
			}
			if err := d.decodeStruct(src, path, v, seen, true, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *decoder) decodeSlice(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind == yaml.ScalarNode && v.Type().Elem().Kind() == reflect.String {
		// A single string stands for a list of one.
		v.Set(reflect.ValueOf([]string{n.Value}).Convert(v.Type()))
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return d.errorAt(n, path, "want a list, got %s", describe(n))
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		if err := d.decode(c, fmt.Sprintf("%s[%d]", path, i), s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// decodeMap reads a mapping of names to strings (environment variables).
func (d *decoder) decodeMap(n *yaml.Node, path string, v reflect.Value) error {
	if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.String {
		return d.errorAt(n, path, "cannot read a value of type %s", v.Type()) // a bug in this package
	}
	if n.Kind != yaml.MappingNode {
		return d.errorAt(n, path, "want a mapping of names to values, got %s", describe(n))
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], resolve(n.Content[i+1])
		if err := d.visit(k, path); err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode || isMerge(k) {
			return d.errorAt(k, path, "want a name, got %s", describe(k))
		}
		fp := join(path, k.Value)
		if first, dup := lines[k.Value]; dup {
			return d.errorAt(k, fp, "set twice (first at line %d)", first)
		}
		lines[k.Value] = k.Line
		if val == nil || val.Kind != yaml.ScalarNode {
			return d.errorAt(val, fp, "want a string, got %s", describe(val))
		}
		s := val.Value
		if isNull(val) {
			s = ""
		}
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), reflect.ValueOf(s).Convert(v.Type().Elem()))
	}
	v.Set(m)
	return nil
}

// number reads a finite integer or floating-point scalar.
func number(n *yaml.Node) (float64, error) {
	var f float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil {
		return 0, fmt.Errorf("want a number, got %s", describe(n))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a finite number, got %s", describe(n))
	}
	return f, nil
}

// describe names what a person wrote, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", v)
		case "!!null":
			return "nothing"
		}
		return v
	}
	return "a document"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields is the yaml-tagged fields of a struct type.
type fields struct {
	index map[string]int // yaml name -> field index
	types map[string]reflect.Type
	names []string // sorted, for messages
}

var fieldCache sync.Map // reflect.Type -> *fields

func fieldsOf(t reflect.Type) *fields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fields)
	}
	f := &fields{index: map[string]int{}, types: map[string]reflect.Type{}}
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("yaml")
		if name == "" || name == "-" {
			continue
		}
		f.index[name] = i
		f.types[name] = t.Field(i).Type
		f.names = append(f.names, name)
	}
	sort.Strings(f.names)
	fieldCache.Store(t, f)
	return f
}
