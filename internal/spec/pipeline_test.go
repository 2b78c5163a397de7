package spec

import (
	"slices"
	"testing"
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
