package model

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseArray(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "0-3", want: []int{0, 1, 2, 3}},
		{in: "0-9:4", want: []int{0, 4, 8}},
		{in: "7", want: []int{7}},
		{in: "1,5, 9-10", want: []int{1, 5, 9, 10}},
		{in: "0-999", want: seq(1000)},
		{in: "0-1000", err: "more than 1000 indices"},
		{in: "", err: "empty array range"},
		{in: "3-1", err: "runs backwards"},
		{in: "0-9:0", err: "step must be"},
		{in: "5:2", err: "a step needs a range"},
		{in: "-1", err: "is not an index"},
		{in: "a-b", err: "is not an index"},
		{in: "0-1000000", err: "above the largest"},
		{in: "1,1", err: "given twice"},
		{in: "+1", err: "is not an index"},
	} {
		got, err := ParseArray(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseArray(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseArray(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestArrayMember(t *testing.T) {
	s := JobSpec{Name: "sweep", Tenant: "t", Resources: Resources{InstanceCount: 1, GPUsPerInstance: 1}}
	m := ArrayMember(s, 3)
	if m.Name != "sweep[3]" || m.ArrayIndex == nil || *m.ArrayIndex != 3 || s.ArrayIndex != nil {
		t.Errorf("member %+v of %+v", m, s)
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
}

// FuzzParseArray holds ParseArray to its contract on any input: no panic,
// and indices that are distinct, in range and at most MaxArraySize.
func FuzzParseArray(f *testing.F) {
	for _, s := range []string{"0-99", "0-99:10", "1,5,9", "", "-", ":", "0-", "5-1", "0-999999:1", "9999999999999999999", "1,,2", "0-1:99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		idx, err := ParseArray(s)
		if err != nil {
			if idx != nil {
				t.Fatalf("%q: indices %v with error %v", s, idx, err)
			}
			return
		}
		if len(idx) == 0 || len(idx) > MaxArraySize {
			t.Fatalf("%q: %d indices", s, len(idx))
		}
		seen := map[int]bool{}
		for _, i := range idx {
			if i < 0 || i > MaxArrayIndex || seen[i] {
				t.Fatalf("%q: index %d out of range or repeated", s, i)
			}
			seen[i] = true
		}
	})
}
