package alert

import (
	"slices"
	"strings"
)

// Sample is one series of a metric: its labels and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Values are the series of /metrics at one moment, by metric name. A
// histogram appears as Prometheus exposes it: NAME_bucket samples with an
// "le" label (cumulative counts), NAME_count and NAME_sum.
type Values map[string][]Sample

// Add appends a sample of name with labels given as name, value pairs.
func (v Values) Add(name string, value float64, labels ...string) {
	l := make(map[string]string, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	v[name] = append(v[name], Sample{Labels: l, Value: value})
}

// Labels of an alert instance, as name=value pairs sorted by name.
type Labels map[string]string

// key is a stable string for a label set, used to index instances.
func (l Labels) key() string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(l[n])
		b.WriteByte(0)
	}
	return b.String()
}

// pick returns the labels of s named by names (missing ones are "").
func pick(s Sample, names ...string) Labels {
	l := make(Labels, len(names))
	for _, n := range names {
		l[n] = s.Labels[n]
	}
	return l
}

// sumBy sums the samples of name grouped by the labels names, as PromQL's
// sum by (names) does; a group exists only when a sample has it.
func sumBy(v Values, name string, names ...string) map[string]groupSum {
	out := map[string]groupSum{}
	for _, s := range v[name] {
		l := pick(s, names...)
		k := l.key()
		g := out[k]
		g.labels, g.value = l, g.value+s.Value
		out[k] = g
	}
	return out
}

// groupSum is one group of sumBy.
type groupSum struct {
	labels Labels
	value  float64
}
