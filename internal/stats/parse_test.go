package stats

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  string // a part of the error; "" when none
	}{
		{in: "3", want: []int{3}},
		{in: "0", want: []int{0}},
		{in: "1-5", want: []int{1, 2, 3, 4, 5}},
		{in: "1,3,5-7", want: []int{1, 3, 5, 6, 7}},
		{in: "7,2,4-5", want: []int{7, 2, 4, 5}},
		{in: " 1 , 3 - 4 ", want: []int{1, 3, 4}},
		{in: "5-5", want: []int{5}},
		{in: "007", want: []int{7}},
		{in: "1-10000", want: seq(1, 10000)},
		{in: "9223372036854775807", want: []int{math.MaxInt}},
		{in: "9223372036854775806-9223372036854775807", want: []int{math.MaxInt - 1, math.MaxInt}},
		{in: "5-1", err: `range "5-1" is descending`},
		{in: "", err: "no values"},
		{in: "  ", err: "no values"},
		{in: "1,,3", err: `empty element in "1,,3"`},
		{in: "1,", err: "empty element"},
		{in: ",1", err: "empty element"},
		{in: "a", err: `"a" is not a number`},
		{in: "1.5", err: `"1.5" is not a number`},
		{in: "+3", err: `"+3" is not a number`},
		{in: "1-", err: `"1-" is not a number`},
		{in: "1-2-3", err: `"1-2-3" is not a number`},
		{in: "1 2", err: `"1 2" is not a number`},
		{in: "-3", err: `"-3" is negative`},
		{in: "1--3", err: `"1--3" has a negative bound`},
		{in: "99999999999999999999", err: "too large"},
		{in: "1,2,1", err: `1 is written twice ("1")`},
		{in: "1-5,3", err: `3 is written twice ("1-5" and "3")`},
		{in: "1-10001", err: "more than 10000 values"},
		{in: "1-5000,5001-10001", err: "more than 10000 values"},
		{in: "0-9223372036854775807", err: "more than 10000 values"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRange(c.in)
			switch {
			case c.err == "" && err != nil:
				t.Errorf("ParseRange(%q): %v", c.in, err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("ParseRange(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
			case c.err == "" && !slices.Equal(got, c.want):
				t.Errorf("ParseRange(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func seq(lo, hi int) []int {
	var s []int
	for v := lo; v <= hi; v++ {
		s = append(s, v)
	}
	return s
}

func TestParseFloats(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []float64
		err  string
	}{
		{in: "0.6,0.8,1.0,1.2", want: []float64{0.6, 0.8, 1, 1.2}},
		{in: "2", want: []float64{2}},
		{in: " 1e-3 , 5 ", want: []float64{0.001, 5}},
		{in: "1,1", want: []float64{1, 1}},
		{in: "", err: "no values"},
		{in: "0.6,,1", err: `element 2 of "0.6,,1" is empty`},
		{in: "0.6,", err: "element 2"},
		{in: "abc", err: `"abc" is not a number`},
		{in: "1,NaN", err: `"NaN" is not finite`},
		{in: "inf", err: `"inf" is not finite`},
		{in: "-Inf", err: `"-Inf" is not finite`},
		{in: "1e999", err: `"1e999" is out of range`},
		{in: "0", err: `"0" is not positive`},
		{in: "-0", err: `"-0" is not positive`},
		{in: "1,-0.5", err: `"-0.5" is not positive`},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseFloats(c.in)
			switch {
			case c.err == "" && err != nil:
				t.Errorf("ParseFloats(%q): %v", c.in, err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("ParseFloats(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
			case c.err == "" && !slices.Equal(got, c.want):
				t.Errorf("ParseFloats(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

// ParseRange never panics; what it accepts is at most MaxValues distinct
// non-negative integers, one element's worth per comma-separated element,
// that read back the same when written as a plain list.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"1-10", "3", "1,3,5-7", "5-1", "", "1,,2", "-3", "1--2", "0-9223372036854775807",
		"1-5,3", " 4 - 6 ", "99999999999999999999", "1-10000", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseRange(s)
		if err != nil {
			if got != nil {
				t.Errorf("ParseRange(%q) returned %v with its error", s, got)
			}
			if err.Error() == "" {
				t.Errorf("ParseRange(%q): empty error", s)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxValues {
			t.Fatalf("ParseRange(%q) gave %d values", s, len(got))
		}
		if len(got) < strings.Count(s, ",")+1 {
			t.Fatalf("ParseRange(%q) gave %d values for %d elements", s, len(got), strings.Count(s, ",")+1)
		}
		seen := make(map[int]bool)
		parts := make([]string, len(got))
		for i, v := range got {
			if v < 0 || seen[v] {
				t.Fatalf("ParseRange(%q) = %v: %d is negative or repeated", s, got, v)
			}
			seen[v] = true
			parts[i] = strconv.Itoa(v)
		}
		again, err := ParseRange(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("ParseRange(%q) = %v, which reads back as %v, %v", s, got, again, err)
		}
	})
}

// ParseFloats never panics; what it accepts is one positive finite number
// per comma-separated element, each reading back the same.
func FuzzParseFloats(f *testing.F) {
	for _, s := range []string{"0.6,0.8,1.0,1.2", "1", "", "1,,2", "NaN", "inf", "-1", "0", "1e999", "1e-400",
		"0x1p-3", "1_000", " 2 ,3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseFloats(s)
		if err != nil {
			if got != nil {
				t.Errorf("ParseFloats(%q) returned %v with its error", s, got)
			}
			return
		}
		if len(got) != strings.Count(s, ",")+1 {
			t.Fatalf("ParseFloats(%q) gave %d values for %d elements", s, len(got), strings.Count(s, ",")+1)
		}
		for _, v := range got {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("ParseFloats(%q) = %v: %g is not positive and finite", s, got, v)
			}
			if back, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 64), 64); err != nil || back != v {
				t.Fatalf("%g reads back as %g, %v", v, back, err)
			}
		}
	})
}
