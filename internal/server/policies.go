package server

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/policy"
	"github.com/allot-dev/allot/internal/sched"
)

// Operator policies in the cycle.
//
// The active policy set is one object in the store (policy_store.go). Each
// cycle, between the facts and the plan, applyPolicies drives package
// policy as its doc says:
//
//  1. record: the fleet's, regions' and clusters' utilisation of the
//     cycle's snapshot, and the p95 latency of every endpoint (the samples
//     its reconciles made, package endpoint's latency.go), into a policy.Metrics kept
//     in memory and trimmed to policy.Window of the set;
//  2. evaluate with the previous cycle's firings (State.Active); every
//     policy that fires, clears or stops is logged and kept as an event;
//  3. adjust: the core plans on the copy of the snapshot that
//     policy.Adjust returns. The overrides are kept in memory until the
//     next cycle, for 'allot job why' and 'allot policy list'; nothing of
//     them is written to the jobs.
//
// Metrics, firings and overrides live in memory: a restarted server takes
// new utilisation samples at its first cycle and reads the endpoints'
// latency windows again, so a policy without a duration fires again at
// once; a policy with a duration waits for its history.

// MaxPolicyEvents is how many policy events the server keeps, the newest.
const MaxPolicyEvents = 200

// Kinds of PolicyEvent, as 'allot policy test' names them.
const (
	PolicyFires  = "fires"  // every condition holds; it did not, or the policy did not apply
	PolicyClears = "clears" // its conditions stopped holding; it applies through its cooldown
	PolicyStops  = "stops"  // it no longer applies
)

// PolicyEvent is a change of a policy at an evaluation.
type PolicyEvent struct {
	At     time.Time
	Policy string
	Kind   string // PolicyFires, PolicyClears or PolicyStops
	// Values are the condition values at that evaluation; empty when the
	// policy stopped because it was deleted.
	Values []policy.Value
	// Text says it for a person: the values, and when a cooling-down
	// policy stops applying.
	Text string
}

// policyBook is the server's memory of operator policies.
type policyBook struct {
	writeMu sync.Mutex // serialises applies and deletes (read, change, write the one record)

	mu        sync.Mutex // guards the fields below
	set       *model.PolicySet
	rec       policyRecord
	modRev    int64 // of the record; 0 when the store has none
	metrics   policy.Metrics
	active    []policy.Firing
	evaluated time.Time                    // time of the last evaluation
	overrides map[string][]policy.Override // by job: the last cycle's overrides
	ignored   map[string][]policy.Override // by job: the last cycle's actions an earlier policy overruled
	events    []PolicyEvent
}

// applyPolicies is step 3 of a cycle: it records the metrics the policies
// read, evaluates them, and returns the snapshot the core plans on — snap
// itself when no policy applies.
func (s *Server) applyPolicies(snap *sched.Snapshot, now time.Time) *sched.Snapshot {
	b := &s.pol
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.set == nil || len(b.set.Policies) == 0 {
		if len(b.active) > 0 || len(b.overrides) > 0 || len(b.ignored) > 0 {
			b.changed(s.log, b.active, nil, now)
			b.active, b.overrides, b.ignored = nil, nil, nil
		}
		return snap
	}
	// 1. Record.
	policy.RecordUtilization(&b.metrics, snap, now)
	s.recordLatency(&b.metrics)
	b.metrics.Trim(now.Add(-policy.Window(b.set)))

	// 2. Evaluate.
	next := policy.Evaluate(b.set, policy.State{World: snap, Active: b.active}, &b.metrics, now)
	b.changed(s.log, b.active, next, now)
	b.active, b.evaluated = next, now

	// 3. Adjust.
	b.overrides, b.ignored = nil, nil
	if len(next) == 0 {
		return snap
	}
	adj := policy.Adjust(snap, b.set, next, now)
	b.overrides, b.ignored = byJob(adj.Overrides), byJob(adj.Ignored)
	return adj.Snapshot
}

// recordLatency adds the p95 samples the endpoints' reconciles made since
// the last ones m holds, one series per endpoint.
func (s *Server) recordLatency(m *policy.Metrics) {
	const metric = "p95_latency"
	s.ep.EachP95(func(endpoint string) time.Time {
		if sm := m.Series(metric, endpoint); len(sm) > 0 {
			return sm[len(sm)-1].At
		}
		return time.Time{}
	}, func(endpoint string, at time.Time, seconds float64) {
		m.Add(metric, endpoint, at, seconds)
	})
}

// changed logs and keeps an event for every policy that fires, clears or
// stops between two evaluations.
func (b *policyBook) changed(log *slog.Logger, before, after []policy.Firing, now time.Time) {
	was := make(map[string]policy.Firing, len(before))
	for _, f := range before {
		was[f.Policy] = f
	}
	is := make(map[string]bool, len(after))
	for _, f := range after {
		is[f.Policy] = true
		prev, ok := was[f.Policy]
		switch {
		case f.Held && (!ok || !prev.Held):
			b.event(log, PolicyEvent{At: now, Policy: f.Policy, Kind: PolicyFires, Values: f.Values,
				Text: valuesText(f.Values)}, "since", f.Since)
		case !f.Held && ok && prev.Held:
			b.event(log, PolicyEvent{At: now, Policy: f.Policy, Kind: PolicyClears, Values: f.Values,
				Text: fmt.Sprintf("%s; applies until %s", valuesText(f.Values), f.Until.UTC().Format(time.RFC3339))}, "until", f.Until)
		}
	}
	for _, f := range before {
		if is[f.Policy] {
			continue
		}
		ev := PolicyEvent{At: now, Policy: f.Policy, Kind: PolicyStops, Text: "deleted from the policy set"}
		if findPolicy(b.set, f.Policy) != nil {
			ev.Text = fmt.Sprintf("its conditions last held at %s; its cooldown is over", f.LastHeld.UTC().Format(time.RFC3339))
		}
		b.event(log, ev, "applied_since", f.Since)
	}
}

func (b *policyBook) event(log *slog.Logger, ev PolicyEvent, args ...any) {
	log.Info("policy "+ev.Kind, append([]any{"policy", ev.Policy, "conditions", ev.Text}, args...)...)
	b.events = append(b.events, ev)
	if n := len(b.events) - MaxPolicyEvents; n > 0 {
		b.events = append(b.events[:0:0], b.events[n:]...)
	}
}

// valuesText writes condition values: "gpu_utilization fleet 87.5% > 85.0%;
// p95_latency chat 210ms > 150ms for 5m0s (lowest 180ms)".
func valuesText(vs []policy.Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = valueText(v)
	}
	return strings.Join(parts, "; ")
}

// PolicyValueText says one condition value for a person: "p95_latency
// chat 210ms above 150ms for 5m0s (lowest 180ms)".
func PolicyValueText(v policy.Value) string { return valueText(v) }

func valueText(v policy.Value) string {
	amount := func(x float64) string {
		if v.Kind == model.ConditionUtilization {
			return fmt.Sprintf("%.1f%%", 100*x)
		}
		return time.Duration(x * float64(time.Second)).Round(time.Microsecond).String()
	}
	key := v.Key
	if key == "" {
		key = "(no endpoint)"
	}
	now := "no value"
	if v.Seen {
		now = amount(v.Current)
	}
	cmp := "not above"
	if v.Held {
		cmp = "above"
	}
	s := fmt.Sprintf("%s %s %s %s %s", v.Metric, key, now, cmp, amount(v.Threshold))
	if v.For > 0 {
		s += " for " + v.For.String()
		if v.Held {
			s += " (lowest " + amount(v.Lowest) + ")"
		}
	}
	return s
}

// overrideText says what a policy did to one job, for 'allot job why':
// "policy ai_training_priority: scale_down developer_instances to 30%:
// beyond the 30% floor of 56 GPUs: standard → spot".
func overrideText(ps *model.PolicySet, o policy.Override) string {
	what := string(o.Action)
	if ps != nil {
		if p := findPolicy(ps, o.Policy); p != nil {
			var matching []model.Action
			for _, a := range p.Actions {
				if a.Kind == o.Action {
					matching = append(matching, a)
				}
			}
			if len(matching) == 1 {
				what = actionSummary(matching[0])
			}
		}
	}
	if o.From == o.To {
		return fmt.Sprintf("policy %s: %s: %s", o.Policy, what, o.Detail)
	}
	return fmt.Sprintf("policy %s: %s: %s: %s → %s", o.Policy, what, o.Detail, o.From, o.To)
}

// actionSummary names an action and its targets: "scale_down
// developer_instances to 30%", "migrate batch_jobs to low_priority_pool",
// "reallocate inference_gpus to reserved".
func actionSummary(a model.Action) string {
	t := strings.Join(a.Targets, ", ")
	switch a.Kind {
	case model.ActionScaleDown:
		return fmt.Sprintf("scale_down %s to %.0f%%", t, 100*a.MinCapacity)
	case model.ActionMigrate:
		return fmt.Sprintf("migrate %s to %s", t, a.Destination)
	case model.ActionReallocate:
		return fmt.Sprintf("reallocate %s to %s", t, a.Priority)
	}
	return string(a.Kind) + " " + t
}

// jobPolicies returns what the last cycle's policies did to job id, for
// Explain.
func (s *Server) jobPolicies(id string) []string {
	b := &s.pol
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, o := range b.overrides[id] {
		out = append(out, overrideText(b.set, o))
	}
	for _, o := range b.ignored[id] {
		out = append(out, overrideText(b.set, o))
	}
	return out
}

func byJob(os []policy.Override) map[string][]policy.Override {
	out := make(map[string][]policy.Override, len(os))
	for _, o := range os {
		out[o.Job] = append(out[o.Job], o)
	}
	return out
}

// findPolicy returns the policy of ps called name, or nil.
func findPolicy(ps *model.PolicySet, name string) *model.Policy {
	if ps == nil {
		return nil
	}
	for i := range ps.Policies {
		if ps.Policies[i].Name == name {
			return &ps.Policies[i]
		}
	}
	return nil
}
