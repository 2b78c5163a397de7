package policy

import (
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// State is what a driver knows when it evaluates.
type State struct {
	// World is the fleet, tenancy and jobs as the coming cycle will see
	// them. It gives scale_down its baseline when a policy begins to
	// apply; nil when the caller knows no jobs (a replay of metrics), and
	// then no baseline is recorded.
	World *sched.Snapshot
	// Active is what the previous Evaluate returned.
	Active []Firing
}

// Firing is a policy that applies at an evaluation.
type Firing struct {
	Policy string
	// Since is when the policy began to apply, this time.
	Since time.Time
	// LastHeld is the last evaluation at which every condition held.
	LastHeld time.Time
	// Held is true when every condition holds now. When false, the policy
	// is cooling down: it applies until Until.
	Held bool
	// Until is LastHeld plus the policy's cooldown: when it stops
	// applying unless its conditions hold again.
	Until time.Time
	// Values are the condition values, one per condition, in order.
	Values []Value
	// Actions are the policy's actions with what they remember.
	Actions []Action
}

// Action is an action of a firing policy.
type Action struct {
	model.Action
	// Baseline is, for scale_down, the milli-GPUs the target's work held
	// when the policy began to apply; BaselineKnown is false when no World
	// was given then.
	Baseline      int64
	BaselineKnown bool
}

// Value is what a condition found.
type Value struct {
	Kind   model.ConditionKind
	Metric string // MetricUtilization or a latency metric
	// Key is the scope, or the endpoint that decided: the worst one that
	// holds, or the worst one now when none holds.
	Key string
	// Held reports whether the condition holds.
	Held bool
	// Seen is false when the series has no value in force now.
	Seen bool
	// Current is the value in force now; utilisation as a fraction,
	// latency in seconds.
	Current float64
	// Lowest is, when Held, the lowest value over the duration: how far
	// above the threshold the value stayed.
	Lowest    float64
	Threshold float64
	For       time.Duration
}

// Evaluate returns the policies of ps that apply at now, in the order of
// the file. A policy applies when every one of its conditions holds at now
// (Held), or when it applied at the previous evaluation (view.Active) and
// its conditions last held less than its cooldown ago. Its Since and the
// baselines of its scale_down actions carry over while it keeps applying;
// a policy that stops applying starts afresh when it applies again.
// Samples after now are not read, so a recording can be replayed.
func Evaluate(ps *model.PolicySet, view State, windows *Metrics, now time.Time) []Firing {
	if windows == nil {
		windows = &Metrics{}
	}
	prev := map[string]*Firing{}
	for i := range view.Active {
		prev[view.Active[i].Policy] = &view.Active[i]
	}
	var out []Firing
	for _, p := range ps.Policies {
		values := make([]Value, len(p.Conditions))
		all := true
		for i, c := range p.Conditions {
			values[i] = condition(c, windows, now)
			all = all && values[i].Held
		}
		last := prev[p.Name]
		if last != nil && !all && !now.Before(last.Until) {
			last = nil // it cooled down
		}
		if !all && last == nil {
			continue
		}
		f := Firing{Policy: p.Name, Since: now, LastHeld: now, Held: all, Values: values}
		if last != nil {
			f.Since = last.Since
			if !all {
				f.LastHeld = last.LastHeld
			}
		}
		f.Until = f.LastHeld.Add(p.Cooldown)
		if !f.Held && !now.Before(f.Until) {
			continue
		}
		f.Actions = actions(ps, p, last, view.World)
		out = append(out, f)
	}
	return out
}

// actions carries the actions' memory over from last, or takes it from
// world when the policy begins to apply (or its actions changed).
func actions(ps *model.PolicySet, p model.Policy, last *Firing, world *sched.Snapshot) []Action {
	out := make([]Action, len(p.Actions))
	for i, a := range p.Actions {
		out[i] = Action{Action: a}
		if a.Kind != model.ActionScaleDown {
			continue
		}
		if last != nil && i < len(last.Actions) && sameAction(last.Actions[i].Action, a) {
			out[i].Baseline, out[i].BaselineKnown = last.Actions[i].Baseline, last.Actions[i].BaselineKnown
			continue
		}
		if world != nil {
			w := newWork(world)
			targets, memo := workTargets(ps, a.Targets), w.memo()
			for _, j := range world.Jobs {
				if !j.Status.State.Holds() {
					continue
				}
				if f := w.factsOf(j); w.actsOn(j, f, a, targets, memo) && !spares(w.tenant(f), j, ps, a) {
					out[i].Baseline += heldMilli(j)
				}
			}
			out[i].BaselineKnown = true
		}
	}
	return out
}

// sameAction reports whether a and b act on the same work with the same
// floor, so that a scale_down's baseline carries over.
func sameAction(a, b model.Action) bool {
	return a.Kind == b.Kind && a.MinCapacity == b.MinCapacity &&
		slices.Equal(a.Targets, b.Targets) && slices.Equal(a.Tenants, b.Tenants)
}

// condition evaluates c at now.
func condition(c model.Condition, m *Metrics, now time.Time) Value {
	switch c.Kind {
	case model.ConditionUtilization:
		key := c.Scope.String()
		v := Value{Kind: c.Kind, Metric: MetricUtilization, Key: key, Threshold: c.Utilization, For: c.For}
		v.Held, v.Lowest = exceeds(m.Series(MetricUtilization, key), c.Utilization, c.For, now)
		v.Current, v.Seen = inForce(m.Series(MetricUtilization, key), now)
		return v
	}
	// Latency: the condition holds when one endpoint's series does; it
	// reports the worst endpoint.
	v := Value{Kind: c.Kind, Metric: c.Metric, Threshold: c.Latency.Seconds(), For: c.For}
	endpoints := c.Endpoints
	if len(endpoints) == 0 {
		endpoints = m.Keys(c.Metric)
	}
	for _, e := range endpoints {
		s := m.Series(c.Metric, e)
		held, lowest := exceeds(s, v.Threshold, c.For, now)
		cur, seen := inForce(s, now)
		worse := false
		switch {
		case held != v.Held:
			worse = held
		case held:
			worse = lowest > v.Lowest
		case seen != v.Seen:
			worse = seen
		default:
			worse = seen && cur > v.Current
		}
		if worse || v.Key == "" {
			v.Key, v.Held, v.Lowest, v.Current, v.Seen = e, held, lowest, cur, seen
		}
	}
	return v
}

// inForce returns the value of s in force at t: that of the last sample at
// or before t, unless it is older than MaxSampleAge.
func inForce(s []Sample, t time.Time) (float64, bool) {
	i := lastAtOrBefore(s, t)
	if i < 0 || t.Sub(s[i].At) > MaxSampleAge {
		return 0, false
	}
	return s[i].Value, true
}

// exceeds reports whether s stayed strictly above threshold for all of
// [now-d, now]: the sample in force at now-d and every later one up to now
// are above it, none more than MaxSampleAge apart, the last no older than
// that. It also returns the lowest of those values.
func exceeds(s []Sample, threshold float64, d time.Duration, now time.Time) (bool, float64) {
	start := now.Add(-d)
	i := lastAtOrBefore(s, start)
	end := lastAtOrBefore(s, now)
	if i < 0 || start.Sub(s[i].At) > MaxSampleAge || now.Sub(s[end].At) > MaxSampleAge {
		return false, 0
	}
	lowest := s[i].Value
	for k := i; k <= end; k++ {
		if s[k].Value <= threshold {
			return false, 0
		}
		if k > i && s[k].At.Sub(s[k-1].At) > MaxSampleAge {
			return false, 0
		}
		lowest = min(lowest, s[k].Value)
	}
	return true, lowest
}

// lastAtOrBefore returns the index of the last sample at or before t, or -1.
func lastAtOrBefore(s []Sample, t time.Time) int {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi) / 2
		if s[mid].At.After(t) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo - 1
}
