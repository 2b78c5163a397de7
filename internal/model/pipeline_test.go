package model

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func steps(after ...[]string) []JobSpec {
	out := make([]JobSpec, len(after))
	for i, a := range after {
		out[i] = JobSpec{Name: string(rune('a' + i)), After: a}
	}
	return out
}

func TestAfterCycle(t *testing.T) {
	idx := 3
	for _, tc := range []struct {
		name  string
		specs []JobSpec
		want  string
	}{
		{"chain", steps(nil, []string{"a"}, []string{"b", "a"}), ""},
		{"IDs are not followed", steps([]string{"x-123"}, []string{"a"}), ""},
		{"two", steps([]string{"b"}, []string{"a"}), "a → b → a"},
		{"three behind a chain", steps(nil, []string{"a", "d"}, []string{"b"}, []string{"c"}), "b → d → c → b"},
		{"self", steps([]string{"a"}), "a → a"},
		{"through conditions", steps([]string{"any:b"}, []string{"notok:a"}), "a → b → a"},
		{"an array by its name", []JobSpec{{Name: "s[3]", ArrayIndex: &idx, After: []string{"t"}}, {Name: "t", After: []string{"s"}}},
			"s[3] → t → s[3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if c := AfterCycle(tc.specs); c != nil {
				got = CycleText(tc.specs, c)
			}
			if got != tc.want {
				t.Errorf("AfterCycle = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateAfter(t *testing.T) {
	base := func(after ...string) JobSpec {
		return JobSpec{Name: "j", Tenant: "t", Resources: Resources{InstanceCount: 1, GPUsPerInstance: 1}, After: after}
	}
	for _, tc := range []struct {
		after []string
		field string
		msg   string
	}{
		{[]string{"prep", "x-1k2m"}, "", ""},
		{[]string{""}, "after[0]", "must not be empty"},
		{[]string{"a", "j"}, "after[1]", "cannot wait for itself"},
		{[]string{"a", "a"}, "after[1]", "listed twice"},
		{[]string{"a\x00"}, "after[0]", "non-printable"},
		{[]string{"any:prep", "notok:train", "ok:eval", "x:y"}, "", ""},
		{[]string{"any:"}, "after[0]", "names no job after its condition"},
		{[]string{"prep", "any:prep"}, "after[1]", "listed twice"},
		{[]string{"notok:j"}, "after[0]", "cannot wait for itself"},
		{slices.Repeat([]string{"a"}, MaxAfter+1), "after", "over the limit"},
	} {
		s := base(tc.after...)
		err := s.Validate()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("after %q: %v, want no error", tc.after, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg)):
			t.Errorf("after %q: %v, want %s: …%s…", tc.after, err, tc.field, tc.msg)
		}
	}
}

// An entry's own condition wins over the job's; Entry writes it back as it
// reads, a prefix only where the condition differs or the name would read
// as one.
func TestPredecessors(t *testing.T) {
	s := JobSpec{After: []string{"prep", "any:train", "notok:eval", "ok:any:odd", "x:y"}, AfterCondition: AfterNotOK}
	want := []Predecessor{{"prep", AfterNotOK}, {"train", AfterAny}, {"eval", AfterNotOK}, {"any:odd", AfterOK}, {"x:y", AfterNotOK}}
	got := s.Predecessors()
	if !slices.Equal(got, want) {
		t.Fatalf("Predecessors = %v, want %v", got, want)
	}
	for i, p := range got {
		if e := p.Entry(s.AfterCondition); SplitAfter(e, s.AfterCondition) != p {
			t.Errorf("%v as an entry is %q, which reads back as %v", p, e, SplitAfter(e, s.AfterCondition))
		}
		if i == 0 && p.Entry(s.AfterCondition) != "prep" || i == 1 && p.Entry(s.AfterCondition) != "any:train" {
			t.Errorf("entry of %v: %q", p, p.Entry(s.AfterCondition))
		}
	}
	if e := (Predecessor{"any:odd", AfterOK}).Entry(AfterOK); e != "ok:any:odd" {
		t.Errorf("a name that reads as a condition: %q", e)
	}
}

// FuzzAfterCycle holds AfterCycle to its word on any graph: a circle it
// reports is one (each job waits for the next), and when it reports none
// the jobs can be ordered so that each comes after those it waits for.
func FuzzAfterCycle(f *testing.F) {
	f.Add([]byte{1, 0, 2, 1})
	f.Add([]byte{0, 1, 1, 2, 2, 0})
	f.Add([]byte{3, 3})
	f.Fuzz(func(t *testing.T, edges []byte) {
		const n = 6
		specs := make([]JobSpec, n)
		for i := range specs {
			specs[i].Name = string(rune('a' + i))
		}
		for k := 0; k+1 < len(edges) && k < 64; k += 2 {
			from, to := int(edges[k])%n, int(edges[k+1])%(n+1) // n: an ID, not a name
			name := "id-x"
			if to < n {
				name = specs[to].Name
			}
			specs[from].After = append(specs[from].After, name)
		}
		waits := func(i, k int) bool { return slices.Contains(specs[i].After, specs[k].Name) }
		if c := AfterCycle(specs); c != nil {
			if len(c) < 2 || c[0] != c[len(c)-1] {
				t.Fatalf("cycle %v does not close", c)
			}
			for i := 0; i+1 < len(c); i++ {
				if !waits(c[i], c[i+1]) {
					t.Fatalf("cycle %v: %d does not wait for %d", c, c[i], c[i+1])
				}
			}
			return
		}
		done := make([]bool, n)
		for range n {
			progress := false
			for i := range specs {
				ready := !done[i]
				for k := range specs {
					ready = ready && (!waits(i, k) || done[k])
				}
				if ready {
					done[i], progress = true, true
				}
			}
			if !progress {
				break
			}
		}
		if slices.Contains(done, false) {
			t.Fatalf("no cycle reported, yet the jobs cannot be ordered: %+v", specs)
		}
	})
}
