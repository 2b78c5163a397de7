package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlDocument is what the YAML path makes of data: its first document.
func yamlDocument(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc)
	return &doc, err
}

// sameTree reports where two node trees differ in anything the decoder
// reads: kind, tag, value, style, position and children.
func sameTree(a, b *yaml.Node, path string) error {
	switch {
	case a.Kind != b.Kind:
		return fmt.Errorf("%s: kind %v, want %v", path, a.Kind, b.Kind)
	case a.ShortTag() != b.ShortTag():
		return fmt.Errorf("%s: tag %s, want %s", path, a.ShortTag(), b.ShortTag())
	case a.Value != b.Value:
		return fmt.Errorf("%s: value %q, want %q", path, a.Value, b.Value)
	case a.Style != b.Style:
		return fmt.Errorf("%s: style %v, want %v", path, a.Style, b.Style)
	case a.Line != b.Line || a.Column != b.Column:
		return fmt.Errorf("%s: at %d:%d, want %d:%d", path, a.Line, a.Column, b.Line, b.Column)
	case len(a.Content) != len(b.Content):
		return fmt.Errorf("%s: %d children, want %d", path, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if err := sameTree(a.Content[i], b.Content[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkLikeYAML fails when data takes the JSON path and its tree differs
// from the YAML parser's. Valid JSON that the YAML parser refuses is read
// by the JSON path alone, which is no loss.
func checkLikeYAML(t *testing.T, data []byte) {
	t.Helper()
	got, ok := jsonDocument(data)
	if !ok {
		return
	}
	want, err := yamlDocument(data)
	if err != nil {
		return
	}
	if err := sameTree(got, want, "doc"); err != nil {
		t.Fatalf("%s\nin %q", err, data)
	}
}

func TestJSONDocumentLikeYAML(t *testing.T) {
	inputs := []string{
		`{"name":"e2e","tenant":"bench","command":["sleep","infinity"],"resources":{"gpus_per_instance":1,"gpu_models":["H100"]}}`,
		`{"name":"bench","tenant":"research","priority":"spot","duration":"30s","resources":{"gpu_milli":250,"gpu_models":["T4"],"cpu":1,"memory":"2Gi"}}`,
		"  {\n  \"name\" : \"a\",\n\n    \"n\": [1, -2, 0, 1.5, 1e3, -0.25E-2, 99999999999999999999],\n \"t\": true, \"f\": false, \"z\": null}\n",
		`[{"name": "a"}, {"name": "b", "env": {"K": "v\u00e9\tq\"\\/"}}]`,
		"{\"naïve\": \"日本語\", \"x\": {\"y\": [[], {}, [{}]]}}",
		"{\r\n  \"a\": 1,\r\n  \"b\": \"x\"\r\n}",
		`{"priority": {"class": "standard", "value": 10}, "retry": {"max_retries": 3, "timeout": "1h"}}`,
		`[]`, `{}`, `[1]`, `{"a":{"b":{"c":{}}}}`,
	}
	for _, in := range inputs {
		if _, ok := jsonDocument([]byte(in)); !ok {
			t.Errorf("not read as JSON: %q", in)
		}
		checkLikeYAML(t, []byte(in))
	}
	// Everything else goes to the YAML path.
	for _, in := range []string{
		"name: a\n", "{name: a}", `"just a string"`, "42", "null", "", "{\"a\":1}{\"b\":2}", "{\"a\":1}\n---\n{\"b\":2}",
		"{\"a\":\"x\u2028y\"}", "{\"a\":\r1}", "\xef\xbb\xbf{\"a\":1}", "{\"a\":\"\xff\"}",
	} {
		if _, ok := jsonDocument([]byte(in)); ok {
			t.Errorf("read as JSON: %q", in)
		}
	}
}

// Every example job (the first document of each file), as JSON in two
// layouts, reads to the same tree and the same specs as through the YAML
// parser.
func TestJSONDocumentExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/jobs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		compact, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		indented, err := json.MarshalIndent(v, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		first, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		yspecs, yerr := ParseJobs(f, first, nil)
		for _, in := range [][]byte{compact, indented} {
			checkLikeYAML(t, in)
			specs, err := ParseJobs(f, in, nil)
			if fmt.Sprint(specs, err) != fmt.Sprint(yspecs, yerr) {
				t.Errorf("%s as JSON: %v %v\nas YAML: %v %v", f, specs, err, yspecs, yerr)
			}
		}
	}
}

// A mistake in a JSON job is reported at its line and column, as in YAML.
func TestJSONJobErrorPosition(t *testing.T) {
	in := "{\n  \"name\": \"x\",\n  \"tenant\": \"t\",\n  \"resources\": {\"gpus_per_instance\": \"two\"}\n}\n"
	_, err := ParseJobs("job", []byte(in), nil)
	var e *Error
	if !errors.As(err, &e) || e.Line != 4 || e.Column != 38 || e.Field != "resources.gpus_per_instance" {
		t.Fatalf("%v (%+v)", err, e)
	}
	_, yerr := ParseJobs("job", []byte(strings.Replace(in, "{\n", "# yaml\n{\n", 1)), nil)
	var ye *Error
	if !errors.As(yerr, &ye) || ye.Line != 5 || ye.Column != e.Column || ye.Msg != e.Msg {
		t.Fatalf("YAML path: %v; JSON path: %v", yerr, err)
	}
}

func FuzzJSONDocument(f *testing.F) {
	f.Add([]byte(`{"name":"e2e","tenant":"bench","resources":{"gpus_per_instance":1}}`))
	f.Add([]byte("[\n {\"a\": [1, 2.5, \"é\"]},\n {}\n]"))
	f.Add([]byte(`{"a": {"b": null, "c": true}}`))
	f.Add([]byte("\n\t{\"k\u00e9\": \"\\u00e9\\n\\\"\", \"n\": [-0.5e+3, 12]}\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLikeYAML(t, data)
	})
}

func BenchmarkParseJobJSON(b *testing.B) {
	job := []byte(`{"name":"e2e","tenant":"bench","command":["sleep","infinity"],"resources":{"gpus_per_instance":1,"gpu_models":["H100"]}}`)
	yml := append([]byte("# as YAML\n"), job...) // a comment line: not JSON, so the YAML path
	for _, c := range []struct {
		name string
		data []byte
	}{{"json", job}, {"yaml", yml}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseJobs("job", c.data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
