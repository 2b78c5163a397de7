package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseJobsReportsEveryError checks that one read reports every
// problem of a file — of several fields, of several documents — each with
// its line and field, and suggests the name meant.
func TestParseJobsReportsEveryError(t *testing.T) {
	doc := `name: a
tenant: research
resources:
  gpus_per_instance: 99
  instance_count: 0
priority: standrd
placement: {interconnect: infinband}
---
name: b
tenant: research
resoures: {gpus_per_instance: 1}
---
name: ok
tenant: research
`
	_, err := ParseJobs("jobs.yaml", []byte(doc), nil)
	if err == nil {
		t.Fatal("no error")
	}
	want := []struct {
		line  int
		field string
		msg   string
	}{
		{4, "resources.gpus_per_instance", "between 0 and 64"},
		{5, "resources.instance_count", "between 1 and 4096"},
		{6, "priority", "did you mean standard?"},
		{7, "placement.interconnect", "did you mean infiniband?"},
		{11, "resoures", "did you mean resources?"},
	}
	got := Errors(err)
	if len(got) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(got), len(want), err)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if g.File == "jobs.yaml" && g.Line == w.line && g.Field == w.field && strings.Contains(g.Msg, w.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem at line %d, field %s, saying %q in:\n%v", w.line, w.field, w.msg, err)
		}
	}
}

// TestReadJobsReportsEveryFile checks that a directory read reports the
// problems of every file.
func TestReadJobsReportsEveryFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.yaml": "name: a\ntenant: research\nresources: {gpus_per_instance: 99}\n",
		"b.yaml": "name: b\ntenant: research\nresources: {gpus_per_instance: 1}\n",
		"c.yaml": "name: c\nresources: {gpus_per_instance: 1}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	specs, err := ReadJobs(dir, nil)
	if specs != nil {
		t.Errorf("read %d jobs of a directory with errors, want none", len(specs))
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, w := range []string{"a.yaml:3:", "resources.gpus_per_instance", "c.yaml:1:", "tenant: must not be empty"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
}

// TestParseJobsErrorLimit checks that a file of many bad jobs reports at
// most MaxErrors of them and says how many more there were.
func TestParseJobsErrorLimit(t *testing.T) {
	var b strings.Builder
	for range MaxErrors + 10 {
		b.WriteString("---\nname: x\ntenant: research\nresources: {gpus_per_instance: 99}\n")
	}
	_, err := ParseJobs("many.yaml", []byte(b.String()), nil)
	if list := Errors(err); len(list) != MaxErrors+1 || !strings.HasPrefix(list[MaxErrors].Msg, "and 10 more problems") {
		t.Errorf("%d problems reported, want %d and a line saying how many more", len(list), MaxErrors)
	}
	if err == nil || !strings.Contains(err.Error(), "and 10 more problems") {
		t.Errorf("error does not say how many more: %v", err)
	}
}

func TestParseJobsArray(t *testing.T) {
	specs, err := ParseJobs("a.yaml", []byte("name: sweep\ntenant: research\narray: 0-8:4\nresources: {gpus_per_instance: 1}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, s := range specs {
		names = append(names, s.Name)
		if s.ArrayIndex == nil || *s.ArrayIndex != i*4 {
			t.Errorf("%s: array index %v, want %d", s.Name, s.ArrayIndex, i*4)
		}
	}
	if got := strings.Join(names, " "); got != "sweep[0] sweep[4] sweep[8]" {
		t.Errorf("names %q, want sweep[0] sweep[4] sweep[8]", got)
	}
	// A member read back from its document stays one job.
	doc, _ := json.Marshal(DocumentOf(specs[1]))
	back, err := ParseJobs("doc", doc, nil)
	if err != nil || len(back) != 1 || back[0].ArrayIndex == nil || *back[0].ArrayIndex != 4 || back[0].Name != "sweep[4]" {
		t.Errorf("member read back: %+v, %v", back, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{"name: s\ntenant: r\narray: 0-5000\n", "more than 1000 indices"},
		{"name: s\ntenant: r\narray: 5-1\n", "runs backwards"},
		{"name: s\ntenant: r\narray: [1, 2]\n", "want a range such as 0-99"},
		{"name: s\ntenant: r\narray: 0-3\narray_index: 2\n", "not both"},
		{"name: s\ntenant: r\narray: 0-1,1\n", "a.yaml:3:8: array: array range \"0-1,1\": index 1 is given twice"},
	} {
		_, err := ParseJobs("a.yaml", []byte(tc.doc), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.doc, err, tc.want)
		}
	}
}
