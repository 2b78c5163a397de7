package model

import (
	"fmt"
	"strconv"
	"strings"
)

// A job array is one job file or command submitted as many jobs, one per
// index of a range such as 0-99 or 0-99:10, as sbatch --array does. Each
// member is a job of its own named NAME[IDX], whose ArrayIndex is IDX.

const (
	// MaxArraySize is the most members one array may have.
	MaxArraySize = 1000
	// MaxArrayIndex is the largest index an array may use.
	MaxArrayIndex = 999_999
)

// ParseArray reads an array range: a comma-separated list of indices (7),
// ranges (0-99) and ranges with a step (0-99:10), and returns its indices
// in the order written, each once. It refuses an empty list, a range that
// runs backwards, a step below 1, an index above MaxArrayIndex, a repeated
// index and more than MaxArraySize indices.
func ParseArray(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty array range: want A-B[:STEP], e.g. 0-99 or 0-99:10")
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, step, err := arrayPart(part)
		if err != nil {
			return nil, err
		}
		for i := lo; i <= hi; i += step {
			if seen[i] {
				return nil, fmt.Errorf("array range %q: index %d is given twice", s, i)
			}
			seen[i] = true
			if out = append(out, i); len(out) > MaxArraySize {
				return nil, fmt.Errorf("array range %q has more than %d indices (limit: %d jobs per array); "+
					"use a step (0-9999:10) or submit several arrays", s, MaxArraySize, MaxArraySize)
			}
		}
	}
	return out, nil
}

// arrayPart reads one item of an array range: N, A-B or A-B:S.
func arrayPart(part string) (lo, hi, step int, err error) {
	bad := func(why string) (int, int, int, error) {
		return 0, 0, 0, fmt.Errorf("array range item %q: %s; want N, A-B or A-B:STEP, e.g. 0-99:10", part, why)
	}
	rng, st, hasStep := strings.Cut(part, ":")
	a, b, isRange := strings.Cut(rng, "-")
	if lo, err = arrayIndex(a); err != nil {
		return bad(err.Error())
	}
	hi, step = lo, 1
	if isRange {
		if hi, err = arrayIndex(b); err != nil {
			return bad(err.Error())
		}
	}
	if hasStep {
		if !isRange {
			return bad("a step needs a range")
		}
		if step, err = strconv.Atoi(st); err != nil || step < 1 || step > MaxArrayIndex {
			return bad(fmt.Sprintf("the step must be a whole number from 1 to %d", MaxArrayIndex))
		}
	}
	if hi < lo {
		return bad(fmt.Sprintf("the range runs backwards (%d > %d)", lo, hi))
	}
	return lo, hi, step, nil
}

func arrayIndex(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("%q is not an index (a whole number from 0)", s)
	}
	if n > MaxArrayIndex {
		return 0, fmt.Errorf("index %d is above the largest, %d", n, MaxArrayIndex)
	}
	return n, nil
}

// ArrayMember returns the member of the array s at index i: s named
// NAME[i], with ArrayIndex i.
func ArrayMember(s JobSpec, i int) JobSpec {
	s.Name = fmt.Sprintf("%s[%d]", s.Name, i)
	idx := i
	s.ArrayIndex = &idx
	return s
}
