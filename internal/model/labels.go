package model

import (
	"fmt"
	"sort"
)

// Limits on labels, so that a label set stays something a person reads at a
// glance and a record stays small.
const (
	MaxLabels          = 64
	MaxLabelKeyLength  = 63
	MaxLabelValueBytes = 253
)

// ValidateLabels checks the labels of a partition, tenant or job: at most
// MaxLabels of them; each key 1 to MaxLabelKeyLength characters of ASCII
// letters, digits, '-', '_', '.' and '/', starting with a letter or digit
// (so "workload", "pool", "team.example.com/cost-center"); each value at
// most MaxLabelValueBytes bytes of printable text. field is the path of the
// labels ("labels"); an error names the key ("labels.workload").
func ValidateLabels(field string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fieldErr(field, "at most %d labels, got %d", MaxLabels, len(labels))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the same key first on every run
	for _, k := range keys {
		if err := labelKey(k); err != nil {
			return fieldErr(field, "%s", err)
		}
		v := labels[k]
		if len(v) > MaxLabelValueBytes {
			return fieldErr(field+"."+k, "must be at most %d bytes, got %d", MaxLabelValueBytes, len(v))
		}
		if err := Printable(field+"."+k, v); err != nil {
			return err
		}
	}
	return nil
}

func labelKey(k string) error {
	if k == "" || len(k) > MaxLabelKeyLength {
		return fmt.Errorf("label key %q must be 1 to %d characters", printableOrQuoted(k), MaxLabelKeyLength)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '-' && c != '_' && c != '.' && c != '/')) {
			return fmt.Errorf("label key %q: want letters, digits, '-', '_', '.' or '/', starting with a letter or digit",
				printableOrQuoted(k))
		}
	}
	return nil
}

// printableOrQuoted returns s when it is short and printable, or a marker
// that says it is not, so that a message never carries control characters.
func printableOrQuoted(s string) string {
	if len(s) > 80 || Printable("", s) != nil {
		return "(not printable or too long)"
	}
	return s
}

// WorkLabels returns the labels a job's work carries: its partition's, then
// its tenant's, then its own, a later one overriding an earlier one of the
// same key. Either of p and t may be nil.
func WorkLabels(p *Partition, t *Tenant, s *JobSpec) map[string]string {
	out := map[string]string{}
	if p != nil {
		for k, v := range p.Labels {
			out[k] = v
		}
	}
	if t != nil {
		for k, v := range t.Labels {
			out[k] = v
		}
	}
	for k, v := range s.Labels {
		out[k] = v
	}
	return out
}

// WorkMatches is Matches(WorkLabels(p, t, s), sel) without building the
// merged labels: for each key of sel, the job's own value, else its
// tenant's, else its partition's. Policies ask it of every job every cycle.
func WorkMatches(p *Partition, t *Tenant, s *JobSpec, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := workLabel(p, t, s, k); !ok || got != v {
			return false
		}
	}
	return true
}

// Selector is a label selector (a Target's Match) read into pairs once,
// for a caller that tests many jobs against it: ranging over a small map
// costs several times the lookups themselves.
type Selector []LabelPair

// LabelPair is one key and the value a Selector wants for it.
type LabelPair struct{ Key, Value string }

// NewSelector reads sel, in no particular order (a selector wants all of
// its pairs).
func NewSelector(sel map[string]string) Selector {
	out := make(Selector, 0, len(sel))
	for k, v := range sel {
		out = append(out, LabelPair{k, v})
	}
	return out
}

// WorkMatches is WorkMatches(p, t, s, the map sel was read from).
func (sel Selector) WorkMatches(p *Partition, t *Tenant, s *JobSpec) bool {
	for _, kv := range sel {
		if got, ok := workLabel(p, t, s, kv.Key); !ok || got != kv.Value {
			return false
		}
	}
	return true
}

// workLabel is key's value in WorkLabels(p, t, s), read without building
// the merged labels.
func workLabel(p *Partition, t *Tenant, s *JobSpec, key string) (string, bool) {
	got, ok := s.Labels[key]
	if !ok && t != nil {
		got, ok = t.Labels[key]
	}
	if !ok && p != nil {
		got, ok = p.Labels[key]
	}
	return got, ok
}

// Matches reports whether labels carry every key of sel with its value.
// An empty selector matches everything.
func Matches(labels, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
