package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

func TestParseJobsAfter(t *testing.T) {
	jobs, err := ParseJobs("pipeline.yaml", doc(`
name: prepare
tenant: t
---
name: train
tenant: t
after: prepare
---
name: evaluate
tenant: t
after: [train, prepare-0123456789abc]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, j := range jobs {
		got = append(got, j.After)
	}
	want := [][]string{nil, {"prepare"}, {"train", "prepare-0123456789abc"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("after = %q, want %q", got, want)
	}
	if d := DocumentOf(jobs[2]); !slices.Equal(d.After, want[2]) {
		t.Errorf("document after = %q, want %q", d.After, want[2])
	}
}

func TestParseJobsAfterErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"cycle", `
name: a
tenant: t
after: [c]
---
name: b
tenant: t
after: [a]
---
name: c
tenant: t
after: [b]
`, 3, "after", `job "a" waits for itself through a cycle: a → c → b → a`},
		{"cycle in a list", `
- {name: a, tenant: t}
- {name: b, tenant: t, after: [a, c]}
- {name: c, tenant: t,
   after: [b]}
`, 2, "[1].after", `job "b" waits for itself through a cycle: b → c → b`},
		{"self", `
name: a
tenant: t
after: [x, a]
`, 3, "after[1]", `job "a" cannot wait for itself`},
		{"empty name", `
name: a
tenant: t
after: [""]
`, 3, "after[0]", "must not be empty"},
		{"twice", `
name: a
tenant: t
after: [x, x]
`, 3, "after[1]", `"x" is listed twice`},
		{"mapping", `
name: a
tenant: t
after: {job: x}
`, 3, "after", "want the names of jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := ParseJobs("job.yaml", doc(tc.yaml), nil)
			if err == nil {
				t.Fatalf("ParseJobs = %+v, want an error", jobs)
			}
			wantError(t, err, "job.yaml", tc.line, tc.field, tc.msg)
		})
	}
}

// TestAfterCondition reads after_condition: ok (the default, written as
// nothing), any or notok; another word is an error at its line, with the
// nearest word.
func TestAfterCondition(t *testing.T) {
	for doc, want := range map[string]model.AfterCondition{
		"name: c\ntenant: t\nafter: train\nafter_condition: any\n":   model.AfterAny,
		"name: c\ntenant: t\nafter: train\nafter_condition: notok\n": model.AfterNotOK,
		"name: c\ntenant: t\nafter: train\nafter_condition: ok\n":    model.AfterOK,
		"name: c\ntenant: t\nafter: train\n":                         model.AfterOK,
	} {
		specs, err := ParseJobs("j.yaml", []byte(doc), nil)
		if err != nil || specs[0].AfterCondition != want {
			t.Errorf("%q: %v (%v), want %q", doc, specs, err, want)
			continue
		}
		back, err := ParseJobs("j.json", mustMarshal(t, DocumentOf(specs[0])), nil)
		if err != nil || back[0].AfterCondition != want {
			t.Errorf("%q through its document: %v (%v)", doc, back, err)
		}
	}
	_, err := ParseJobs("j.yaml", []byte("name: c\ntenant: t\nafter: train\nafter_condition: anny\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "j.yaml:4") || !strings.Contains(err.Error(), "did you mean any?") {
		t.Errorf("a misspelt condition: %v, want an error at line 4 suggesting any", err)
	}
	_, err = ParseJobs("j.yaml", []byte("name: c\ntenant: t\nafter_condition: any\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "after_condition") || !strings.Contains(err.Error(), "give after too") {
		t.Errorf("a condition without after: %v", err)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
