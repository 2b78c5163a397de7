package stats

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxValues is the most values ParseRange returns.
const MaxValues = 10000

// ParseRange reads a list of non-negative integers such as "3", "1-10" or
// "1,3,5-7": comma-separated elements, each a number or an ascending
// inclusive range lo-hi (lo = hi allowed), with spaces allowed around
// numbers. The values come back in the order written, which need not be
// ascending. Empty elements, anything but decimal digits, negative
// numbers, descending ranges, a value written twice and more than
// MaxValues values are refused.
func ParseRange(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no values")
	}
	var out []int
	seen := make(map[int]string) // value → the element that gave it
	for _, part := range strings.Split(s, ",") {
		elem := strings.TrimSpace(part)
		if elem == "" {
			return nil, fmt.Errorf("empty element in %q", s)
		}
		lo, hi, err := parseElement(elem)
		if err != nil {
			return nil, err
		}
		if hi-lo >= MaxValues-len(out) {
			return nil, fmt.Errorf("more than %d values", MaxValues)
		}
		for i := range hi - lo + 1 { // not v <= hi: hi may be the largest int
			v := lo + i
			if first, ok := seen[v]; ok {
				if first == elem {
					return nil, fmt.Errorf("%d is written twice (%q)", v, elem)
				}
				return nil, fmt.Errorf("%d is written twice (%q and %q)", v, first, elem)
			}
			seen[v] = elem
			out = append(out, v)
		}
	}
	return out, nil
}

// parseElement reads one element of ParseRange's list: "n" or "lo-hi".
func parseElement(elem string) (lo, hi int, err error) {
	if strings.HasPrefix(elem, "-") {
		return 0, 0, fmt.Errorf("%q is negative", elem)
	}
	first, second, isRange := strings.Cut(elem, "-")
	lo, err = parseCount(first, elem)
	if err != nil || !isRange {
		return lo, lo, err
	}
	second = strings.TrimSpace(second)
	if strings.HasPrefix(second, "-") {
		return 0, 0, fmt.Errorf("%q has a negative bound", elem)
	}
	hi, err = parseCount(second, elem)
	if err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("range %q is descending; write %d-%d", elem, hi, lo)
	}
	return lo, hi, nil
}

// parseCount reads a non-negative decimal integer, digits only, naming elem
// when it fails.
func parseCount(s, elem string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number or a range lo-hi", elem)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", elem)
	}
	return v, nil
}

// ParseFloats reads a comma-separated list of positive finite numbers such
// as "0.6,0.8,1.0,1.2", with spaces allowed around each. Empty elements,
// non-numbers, NaN, infinities, zero and negative values are refused, the
// error naming the element.
func ParseFloats(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no values")
	}
	var out []float64
	for i, part := range strings.Split(s, ",") {
		elem := strings.TrimSpace(part)
		if elem == "" {
			return nil, fmt.Errorf("element %d of %q is empty", i+1, s)
		}
		v, err := strconv.ParseFloat(elem, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return nil, fmt.Errorf("%q is out of range", elem)
		case err != nil:
			return nil, fmt.Errorf("%q is not a number", elem)
		case math.IsNaN(v) || math.IsInf(v, 0):
			return nil, fmt.Errorf("%q is not finite", elem)
		case !(v > 0):
			return nil, fmt.Errorf("%q is not positive", elem)
		}
		out = append(out, v)
	}
	return out, nil
}
