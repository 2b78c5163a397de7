package policy

import (
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// MetricUtilization names the series of allocated over Ready GPUs of a
// scope, as a fraction; its key is the scope ("fleet", "region/eastus").
// Latency series are named by model.LatencyMetrics, keyed by endpoint, in
// seconds.
const MetricUtilization = "gpu_utilization"

// MaxSampleAge is how long a sample stays in force without a newer one. A
// series whose newest sample is older has no value (a condition on it does
// not hold), and a longer gap between two samples breaks a duration.
const MaxSampleAge = 5 * time.Minute

// Sample is one value of a series at a time.
type Sample struct {
	At    time.Time
	Value float64
}

type seriesKey struct{ metric, key string }

// Metrics is windows of samples, one series per metric and key, each in
// time order. The zero value is empty and ready to use. A value holds from
// its sample's time until the next sample, or for MaxSampleAge.
type Metrics struct {
	series map[seriesKey][]Sample
}

// Add records value for metric and key at at. A sample at the time of an
// existing one replaces it; samples may arrive out of order.
func (m *Metrics) Add(metric, key string, at time.Time, value float64) {
	if m.series == nil {
		m.series = map[seriesKey][]Sample{}
	}
	k := seriesKey{metric, key}
	s := m.series[k]
	i := sort.Search(len(s), func(i int) bool { return !s[i].At.Before(at) })
	switch {
	case i < len(s) && s[i].At.Equal(at):
		s[i].Value = value
	case i == len(s):
		s = append(s, Sample{at, value})
	default:
		s = append(s, Sample{})
		copy(s[i+1:], s[i:])
		s[i] = Sample{at, value}
	}
	m.series[k] = s
}

// Series returns the samples of metric and key in time order; the caller
// must not change them.
func (m *Metrics) Series(metric, key string) []Sample { return m.series[seriesKey{metric, key}] }

// Keys returns the keys that have a series of metric, sorted.
func (m *Metrics) Keys(metric string) []string {
	var out []string
	for k := range m.series {
		if k.metric == metric {
			out = append(out, k.key)
		}
	}
	sort.Strings(out)
	return out
}

// Trim drops the samples no evaluation at or after since can read: those
// before since, except the last of them, which may still be in force.
// A driver trims to now minus Window of its policies.
func (m *Metrics) Trim(since time.Time) {
	for k, s := range m.series {
		i := sort.Search(len(s), func(i int) bool { return s[i].At.After(since) })
		if i > 1 {
			m.series[k] = append(s[:0:0], s[i-1:]...)
		}
	}
}

// Window is how much history Evaluate reads for ps: the longest duration
// of a condition plus MaxSampleAge.
func Window(ps *model.PolicySet) time.Duration {
	var w time.Duration
	for _, p := range ps.Policies {
		for _, c := range p.Conditions {
			w = max(w, c.For)
		}
	}
	return w + MaxSampleAge
}

// RecordUtilization adds, at now, the utilisation of the fleet, of each
// region and of each cluster of snap: the milli-GPUs that jobs holding
// capacity (Preparing, Running, Preempted) hold on Ready nodes, over the
// GPUs of the Ready nodes. Nodes NotReady or Draining count in neither. A
// scope without Ready GPUs gets no sample.
func RecordUtilization(m *Metrics, snap *sched.Snapshot, now time.Time) {
	NewScopes(snap.Fleet).Record(m, snap.Jobs, now)
}

// Usage is the GPUs of a scope's Ready nodes and the milli-GPUs jobs hold
// on them.
type Usage struct {
	Ready          int
	AllocatedMilli int64
}

// Utilization counts Usage for the fleet, each region and each cluster of
// snap.
func Utilization(snap *sched.Snapshot) map[model.Scope]Usage {
	s := NewScopes(snap.Fleet)
	usage := s.count(snap.Jobs)
	out := make(map[model.Scope]Usage, len(s.scopes))
	for i, sc := range s.scopes {
		out[sc] = usage[i]
	}
	return out
}

// Scopes is a fleet's scopes (the fleet, its regions and clusters) and
// which its Ready nodes count in, read once: a driver whose fleet does not
// change, as the simulator's does not over a simulated week, records
// utilisation every minute with one Scopes (Record) rather than reading
// the fleet every time (RecordUtilization).
type Scopes struct {
	scopes []model.Scope
	keys   []string // the series key of each scope (Scope.String)
	ready  []int    // Ready GPUs by scope
	nodes  map[string]nodeScopes
	usage  []Usage // scratch of count
}

// nodeScopes is the index of a Ready node's region and cluster in
// Scopes.scopes.
type nodeScopes struct{ region, cluster int }

// NewScopes reads f's scopes and Ready nodes.
func NewScopes(f *model.Fleet) *Scopes {
	s := &Scopes{scopes: []model.Scope{model.ScopeFleet}, ready: []int{0}, nodes: make(map[string]nodeScopes, len(f.Nodes))}
	index := map[model.Scope]int{model.ScopeFleet: 0}
	indexOf := func(sc model.Scope) int {
		i, ok := index[sc]
		if !ok {
			i = len(s.scopes)
			index[sc] = i
			s.scopes, s.ready = append(s.scopes, sc), append(s.ready, 0)
		}
		return i
	}
	for _, n := range f.Nodes {
		if n.Health != model.NodeReady {
			continue
		}
		ns := nodeScopes{indexOf(model.Scope{Kind: "region", Name: n.Region}), indexOf(model.Scope{Kind: "cluster", Name: n.Cluster})}
		s.nodes[n.Name] = ns
		gpus := f.Catalog[n.SKU].GPUs
		s.ready[0] += gpus
		s.ready[ns.region] += gpus
		s.ready[ns.cluster] += gpus
	}
	s.keys = make([]string, len(s.scopes))
	for i, sc := range s.scopes {
		s.keys[i] = sc.String()
	}
	return s
}

// Record adds, at now, the utilisation of each scope as RecordUtilization
// does, of jobs on the fleet s was made of.
func (s *Scopes) Record(m *Metrics, jobs []*model.Job, now time.Time) {
	for i, u := range s.count(jobs) {
		if u.Ready > 0 {
			m.Add(MetricUtilization, s.keys[i], now, float64(u.AllocatedMilli)/float64(u.Ready*model.MilliPerGPU))
		}
	}
}

// count is the Usage of each scope by jobs, in s.usage.
func (s *Scopes) count(jobs []*model.Job) []Usage {
	if len(s.usage) != len(s.scopes) {
		s.usage = make([]Usage, len(s.scopes))
	}
	usage := s.usage
	for i := range usage {
		usage[i] = Usage{Ready: s.ready[i]}
	}
	for _, j := range jobs {
		if !j.Status.State.Holds() {
			continue
		}
		for _, a := range j.Status.Allocations {
			ns, ok := s.nodes[a.Node]
			if !ok {
				continue
			}
			m := int64(len(a.GPUs)) * a.GPUMilli
			usage[0].AllocatedMilli += m
			usage[ns.region].AllocatedMilli += m
			usage[ns.cluster].AllocatedMilli += m
		}
	}
	return usage
}
