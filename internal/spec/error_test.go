package spec

import "testing"

func TestErrorString(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{File: "job.yaml", Line: 3, Column: 5, Field: "retry.timeout", Msg: "bad"}, "job.yaml:3:5: retry.timeout: bad"},
		{Error{File: "job.yaml", Line: 3, Msg: "invalid YAML: x"}, "job.yaml:3: invalid YAML: x"},
		{Error{File: "job.yaml", Msg: "file is empty"}, "job.yaml: file is empty"},
		{Error{File: "--set retry.timeout", Field: "retry.timeout", Msg: "bad"}, "--set retry.timeout: bad"},
		{Error{File: "--set placement.regions", Field: "placement.regions[1]", Msg: "bad"}, "--set placement.regions: placement.regions[1]: bad"},
		{Error{Line: 2, Column: 1, Field: "name", Msg: "bad"}, "2:1: name: bad"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestLocate(t *testing.T) {
	root, err := parseDocuments("f", doc(`
regions:
  - name: a
  - name: b
    clusters:
      - {name: c, fabric: x}
base: &b {k: 1}
m:
  <<: *b
`))
	if err != nil {
		t.Fatal(err)
	}
	for path, line := range map[string]int{
		"regions[1].clusters[0].fabric":  5,
		"regions[1].clusters[0].missing": 5,
		"regions[7].name":                2, // absent: the list
		"m.k":                            6,
		"":                               1,
	} {
		n := locate(root[0], path)
		if n == nil || n.Line != line {
			t.Errorf("locate(%q) = %+v, want a node on line %d", path, n, line)
		}
	}
}
