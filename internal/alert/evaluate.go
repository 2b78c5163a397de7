package alert

import (
	"slices"
	"strings"
	"time"
)

// State of an alert.
type State string

// The states of an alert: Pending while its condition has held for less
// than the rule's For, Firing after, Resolved once it stopped holding.
const (
	Pending  State = "pending"
	Firing   State = "firing"
	Resolved State = "resolved"
)

// Alert is one instance of a rule and where it stands.
type Alert struct {
	Name     string
	Severity string
	State    State
	Labels   Labels
	Value    float64   // the expression's value at the last evaluation that held
	Summary  string    // a sentence with the labels and the value
	Since    time.Time // when the condition started to hold
	// FiredAt is when it started firing (zero while pending); ResolvedAt
	// when it resolved (zero unless resolved).
	FiredAt    time.Time
	ResolvedAt time.Time
}

// Defaults of Options.
const (
	DefaultKeepResolved = time.Hour
	DefaultMaxResolved  = 100
)

// Options tune an Evaluator; zero fields take the defaults.
type Options struct {
	// For, when positive, replaces every rule's non-zero For (tests and
	// demonstrations: an alert fires without waiting minutes).
	For time.Duration
	// KeepResolved is how long a resolved alert stays listed;
	// MaxResolved how many are kept at most (the newest).
	KeepResolved time.Duration
	MaxResolved  int
}

// Evaluator runs the rules and keeps each alert's state between
// evaluations. It is not safe for concurrent use; the caller serialises.
type Evaluator struct {
	rules    []Rule
	opt      Options
	hist     history
	active   map[string]*Alert // pending and firing, by rule name and label key
	resolved []Alert           // oldest first
}

// New returns an Evaluator of rules (normally Rules).
func New(rules []Rule, opt Options) *Evaluator {
	if opt.KeepResolved <= 0 {
		opt.KeepResolved = DefaultKeepResolved
	}
	if opt.MaxResolved <= 0 {
		opt.MaxResolved = DefaultMaxResolved
	}
	return &Evaluator{rules: rules, opt: opt, hist: history{}, active: map[string]*Alert{}}
}

// Evaluate runs every rule over v at now and returns the alerts that
// started firing or resolved in this step (Firing first, then Resolved,
// each sorted by name and labels).
func (e *Evaluator) Evaluate(v Values, now time.Time) []Alert {
	// 1. Record the series range rules read.
	e.hist.record(v, now)

	var changed []Alert
	seen := map[string]bool{}
	for _, r := range e.rules {
		// 2. The instances for which the condition holds.
		wait := r.For
		if e.opt.For > 0 && wait > 0 {
			wait = e.opt.For
		}
		for _, in := range r.cond(v, &e.hist, now) {
			// 3. Pending, then Firing after For.
			k := r.Name + "\x00" + in.Labels.key()
			seen[k] = true
			a, ok := e.active[k]
			if !ok {
				a = &Alert{Name: r.Name, Severity: r.Severity, State: Pending, Labels: in.Labels, Since: now}
				e.active[k] = a
			}
			a.Value, a.Summary = in.Value, r.summary(in)
			if a.State == Pending && now.Sub(a.Since) >= wait {
				a.State, a.FiredAt = Firing, now
				changed = append(changed, *a)
			}
		}
	}
	// 3. Instances that stopped holding: dropped or Resolved.
	for k, a := range e.active {
		if seen[k] {
			continue
		}
		delete(e.active, k)
		if a.State == Firing {
			a.State, a.ResolvedAt = Resolved, now
			e.resolved = append(e.resolved, *a)
			changed = append(changed, *a)
		}
	}
	e.forget(now)
	slices.SortFunc(changed, compare)
	return changed
}

// forget drops resolved alerts past KeepResolved or MaxResolved.
func (e *Evaluator) forget(now time.Time) {
	slices.SortStableFunc(e.resolved, func(a, b Alert) int { return a.ResolvedAt.Compare(b.ResolvedAt) })
	i := 0
	for i < len(e.resolved) && now.Sub(e.resolved[i].ResolvedAt) > e.opt.KeepResolved {
		i++
	}
	i = max(i, len(e.resolved)-e.opt.MaxResolved)
	e.resolved = slices.Delete(e.resolved, 0, i)
}

// Restore replaces the evaluator's alerts with alerts, as Alerts returned
// them from another evaluator (a server that led before this one): the
// pending and firing ones go on from their Since and FiredAt, so a
// condition that still holds neither waits its For again nor fires a
// second time, and one that no longer holds resolves at the next
// Evaluate; the resolved ones are kept. The series that range rules read
// start afresh.
func (e *Evaluator) Restore(alerts []Alert) {
	e.active, e.resolved = map[string]*Alert{}, nil
	for _, a := range alerts {
		switch a.State {
		case Pending, Firing:
			e.active[a.Name+"\x00"+a.Labels.key()] = &a
		case Resolved:
			e.resolved = append(e.resolved, a)
		}
	}
	slices.SortStableFunc(e.resolved, func(a, b Alert) int { return a.ResolvedAt.Compare(b.ResolvedAt) })
}

// Alerts returns the firing and pending alerts, then the recently
// resolved ones, each group sorted by name and labels (resolved: newest
// first).
func (e *Evaluator) Alerts() []Alert {
	out := make([]Alert, 0, len(e.active)+len(e.resolved))
	for _, a := range e.active {
		out = append(out, *a)
	}
	slices.SortFunc(out, compare)
	for i := len(e.resolved) - 1; i >= 0; i-- {
		out = append(out, e.resolved[i])
	}
	return out
}

// stateOrder sorts firing before pending before resolved.
var stateOrder = map[State]int{Firing: 0, Pending: 1, Resolved: 2}

func compare(a, b Alert) int {
	if c := stateOrder[a.State] - stateOrder[b.State]; c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Labels.key(), b.Labels.key())
}

// history holds the recent samples of the series range rules read, by
// metric name and label key, oldest first.
type history map[string][]point

type point struct {
	t time.Time
	v float64
}

// record appends the samples of ranged series at now and drops those
// older than their window.
func (h history) record(v Values, now time.Time) {
	live := map[string]bool{}
	for name, window := range ranged {
		for _, s := range v[name] {
			k := name + "\x00" + Labels(s.Labels).key()
			live[k] = true
			ps := append(h[k], point{now, s.Value})
			i := 0
			for i < len(ps) && now.Sub(ps[i].t) > window {
				i++
			}
			h[k] = slices.Delete(ps, 0, i)
		}
	}
	for k := range h {
		if !live[k] {
			delete(h, k)
		}
	}
}

// increase is how much the counter s of name grew over the samples within
// window before now, a drop counting as a restart from 0 (PromQL's
// increase, without extrapolation to the window's edges). ok is false with
// fewer than two samples.
func (h history) increase(name string, s Sample, now time.Time, window time.Duration) (n float64, ok bool) {
	ps := h[name+"\x00"+Labels(s.Labels).key()]
	var prev *point
	for i := range ps {
		p := &ps[i]
		if now.Sub(p.t) > window {
			continue
		}
		if prev != nil {
			if p.v >= prev.v {
				n += p.v - prev.v
			} else {
				n += p.v
			}
			ok = true
		}
		prev = p
	}
	return n, ok
}
