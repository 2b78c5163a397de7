package model

import (
	"fmt"
	"strconv"
	"strings"
)

// Class is a priority class. A higher class may preempt a lower one.
type Class int

const (
	ClassSpot     Class = iota // cheapest; evicted whenever capacity is needed
	ClassStandard              // the default
	ClassReserved              // runs on bought-ahead or guaranteed capacity
)

func (c Class) String() string {
	switch c {
	case ClassSpot:
		return "spot"
	case ClassStandard:
		return "standard"
	case ClassReserved:
		return "reserved"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classes are every class, lowest first.
var Classes = []Class{ClassSpot, ClassStandard, ClassReserved}

// ParseClass reads a class name alone: "spot", "standard" or "reserved".
func ParseClass(s string) (Class, error) {
	for _, c := range Classes {
		if strings.EqualFold(strings.TrimSpace(s), c.String()) {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown priority class %q (want spot, standard or reserved)%s", s,
		DidYouMean(s, []string{"spot", "standard", "reserved"}))
}

// Priority is a class and an integer priority inside it (higher first).
type Priority struct {
	Class Class
	Value int
}

func (p Priority) String() string {
	if p.Value == 0 {
		return p.Class.String()
	}
	return fmt.Sprintf("%s:%d", p.Class, p.Value)
}

// Less reports whether p ranks below q.
func (p Priority) Less(q Priority) bool {
	if p.Class != q.Class {
		return p.Class < q.Class
	}
	return p.Value < q.Value
}

// ParsePriority reads "spot", "standard", "reserved", optionally followed by
// ":N" for the priority inside the class.
func ParsePriority(s string) (Priority, error) {
	name, val, hasVal := strings.Cut(strings.TrimSpace(s), ":")
	var p Priority
	switch strings.ToLower(name) {
	case "spot":
		p.Class = ClassSpot
	case "standard", "":
		p.Class = ClassStandard
	case "reserved":
		p.Class = ClassReserved
	default:
		return p, fmt.Errorf("unknown priority class %q (want spot, standard or reserved)%s", name,
			DidYouMean(name, []string{"spot", "standard", "reserved"}))
	}
	if hasVal {
		v, err := strconv.Atoi(val)
		if err != nil {
			return p, fmt.Errorf("priority value %q is not an integer", val)
		}
		p.Value = v
	}
	return p, nil
}
