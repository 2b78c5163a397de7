package model

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// PolicySet is an operator's policies file: rules that, while their
// conditions hold, change the inputs of the scheduling core (never its
// decisions), and the targets their actions name. docs/policies.md states
// what every condition and action means.
type PolicySet struct {
	// Policies in the order of the file, which is also their precedence:
	// when two act on one job, the earlier one wins.
	Policies []Policy
	// Targets holds every name an action may use: BuiltinTargets, replaced
	// name by name by the targets the file defines.
	Targets map[string]Target
}

// Policy is one rule: when every one of its conditions holds, its actions
// apply, and they keep applying for Cooldown after the conditions clear.
type Policy struct {
	Name       string
	Conditions []Condition
	Actions    []Action
	Cooldown   time.Duration
}

// DefaultCooldown is a policy's Cooldown when its file names none.
const DefaultCooldown = 5 * time.Minute

// ConditionKind tells what a condition measures.
type ConditionKind string

const (
	// ConditionUtilization holds while the share of Ready GPUs that work
	// holds in Scope exceeds Utilization (resource_type: gpu_cluster).
	ConditionUtilization ConditionKind = "utilization"
	// ConditionLatency holds while some endpoint's latency percentile
	// Metric exceeds Latency (metric: p95_latency).
	ConditionLatency ConditionKind = "latency"
)

// ResourceGPUCluster is the one resource_type a utilisation condition knows.
const ResourceGPUCluster = "gpu_cluster"

// LatencyMetrics are the latency percentiles an endpoint reports.
var LatencyMetrics = []string{"p50_latency", "p95_latency", "p99_latency"}

// Condition is one test of a policy. Its value must exceed the threshold
// without a break for For (zero: the latest value at the time of
// evaluation exceeds it).
type Condition struct {
	Kind ConditionKind
	// Utilization conditions.
	Scope       Scope
	Utilization float64 // a fraction in (0, 1]
	// Latency conditions.
	Metric    string        // one of LatencyMetrics
	Latency   time.Duration // the threshold
	Endpoints []string      // the endpoints it watches; empty means all
	For       time.Duration
}

// Scope is where GPUs are counted for utilisation: the whole fleet, one
// region or one cluster. It is written "fleet", "region/NAME" or
// "cluster/NAME".
type Scope struct {
	Kind string // "fleet", "region" or "cluster"
	Name string // of the region or cluster; empty for the fleet
}

// ScopeFleet is the whole fleet, the default scope.
var ScopeFleet = Scope{Kind: "fleet"}

func (s Scope) String() string {
	if s.Kind == "fleet" || s.Kind == "" {
		return "fleet"
	}
	return s.Kind + "/" + s.Name
}

// ParseScope reads "fleet", "region/NAME" or "cluster/NAME".
func ParseScope(s string) (Scope, error) {
	if s == "" || s == "fleet" {
		return ScopeFleet, nil
	}
	kind, name, ok := strings.Cut(s, "/")
	if !ok || (kind != "region" && kind != "cluster") || name == "" {
		return Scope{}, fmt.Errorf("want fleet, region/NAME or cluster/NAME, got %q", printableOrQuoted(s))
	}
	if err := Printable("scope", name); err != nil {
		return Scope{}, err
	}
	return Scope{Kind: kind, Name: name}, nil
}

// ActionKind tells what an action changes.
type ActionKind string

const (
	// ActionScaleDown lets the core evict the work of Targets beyond
	// MinCapacity of what it held when the policy began to apply: that
	// work, and the target's queued work, runs as spot.
	ActionScaleDown ActionKind = "scale_down"
	// ActionMigrate moves the work of Targets, queued and running, to the
	// priority class of Destination.
	ActionMigrate ActionKind = "migrate"
	// ActionReallocate raises the work of Targets to Priority's class, so
	// that the core preempts lower work for it.
	ActionReallocate ActionKind = "reallocate"
)

// Action is one change a policy makes while it applies.
type Action struct {
	Kind ActionKind
	// Targets names the work the action changes: target of scale_down and
	// migrate, resources of reallocate.
	Targets []string
	// Tenants, when not empty, limits the action to the work of these
	// tenants, customers included. When empty, the action takes the
	// matching work of every tenant, except that it never lowers the class
	// of a customer's work (TenantCustomer): a customer's work is lowered
	// only by an action that names its tenant here.
	Tenants     []string
	MinCapacity float64  // scale_down: a fraction in [0, 1]
	Destination string   // migrate: a target with a Class
	Priority    Priority // reallocate: the class (and value, when not zero) to raise to
}

// Names reports whether a names tenant in Tenants.
func (a Action) Names(tenant string) bool { return slices.Contains(a.Tenants, tenant) }

// Target is a name an action uses: work (jobs whose labels match Match) or
// a destination (the priority Class work moves to). Exactly one is set.
type Target struct {
	Name  string
	Match map[string]string
	Class *Class
	// Builtin is true for a target of BuiltinTargets the file left alone.
	Builtin bool
}

// Work reports whether the target selects work.
func (t Target) Work() bool { return t.Class == nil }

// BuiltinTargets is the table that gives the names of the first policies
// files a meaning without a targets section: work is selected by the
// label workload, the low-priority pool is the spot class.
func BuiltinTargets() map[string]Target {
	spot := ClassSpot
	return map[string]Target{
		"developer_instances": {Name: "developer_instances", Match: map[string]string{"workload": "developer"}, Builtin: true},
		"batch_jobs":          {Name: "batch_jobs", Match: map[string]string{"workload": "batch"}, Builtin: true},
		"training_jobs":       {Name: "training_jobs", Match: map[string]string{"workload": "training"}, Builtin: true},
		"inference_gpus":      {Name: "inference_gpus", Match: map[string]string{"workload": "inference"}, Builtin: true},
		"low_priority_pool":   {Name: "low_priority_pool", Class: &spot, Builtin: true},
	}
}

// ParsePolicyPriority reads the priority of a reallocate action: high
// (reserved), normal (standard), low (spot), or a class as ParsePriority
// reads it ("reserved:10").
func ParsePolicyPriority(s string) (Priority, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "high":
		return Priority{Class: ClassReserved}, nil
	case "normal":
		return Priority{Class: ClassStandard}, nil
	case "low":
		return Priority{Class: ClassSpot}, nil
	case "":
		return Priority{}, fmt.Errorf("want high, normal, low or a class such as reserved:10")
	}
	p, err := ParsePriority(s)
	if err != nil {
		return p, fmt.Errorf("%w; or high, normal, low", err)
	}
	return p, nil
}

// Validate checks the policies and that every target they name exists
// and fits its use. Field paths are those of the file:
// "scheduling_policies[1].actions[0].target".
func (ps *PolicySet) Validate() error {
	for _, name := range targetNames(ps.Targets) {
		t, fp := ps.Targets[name], "targets."+name
		if err := Printable(fp, name); err != nil {
			return err
		}
		switch {
		case name == "":
			return fieldErr("targets", "a target needs a name")
		case t.Class == nil && len(t.Match) == 0:
			return fieldErr(fp, "give match (labels of the work) or class (a destination)")
		case t.Class != nil && len(t.Match) > 0:
			return fieldErr(fp, "give match or class, not both: a target is work or a destination")
		case t.Class != nil && (*t.Class < ClassSpot || *t.Class > ClassReserved):
			return fieldErr(fp+".class", "unknown class %d", *t.Class)
		}
		if err := ValidateLabels(fp+".match", t.Match); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	for i := range ps.Policies {
		fp := fmt.Sprintf("scheduling_policies[%d]", i)
		p := &ps.Policies[i]
		switch {
		case p.Name == "":
			return fieldErr(fp+".name", "must not be empty")
		case len(p.Name) > 253:
			return fieldErr(fp+".name", "must be at most 253 characters")
		case names[p.Name]:
			return fieldErr(fp+".name", "policy %q is defined twice", p.Name)
		case len(p.Conditions) == 0:
			return fieldErr(fp+".conditions", "a policy needs at least one condition")
		case len(p.Actions) == 0:
			return fieldErr(fp+".actions", "a policy needs at least one action")
		case p.Cooldown < 0:
			return fieldErr(fp+".cooldown", "must not be negative")
		}
		if err := Printable(fp+".name", p.Name); err != nil {
			return err
		}
		names[p.Name] = true
		for j, c := range p.Conditions {
			if err := c.validate(); err != nil {
				return Prefix(fmt.Sprintf("%s.conditions[%d]", fp, j), err)
			}
		}
		for j, a := range p.Actions {
			if err := a.validate(ps.Targets); err != nil {
				return Prefix(fmt.Sprintf("%s.actions[%d]", fp, j), err)
			}
		}
	}
	return nil
}

func (c Condition) validate() error {
	if c.For < 0 {
		return fieldErr("duration", "must not be negative")
	}
	switch c.Kind {
	case ConditionUtilization:
		if c.Utilization <= 0 || c.Utilization > 1 || math.IsNaN(c.Utilization) {
			return fieldErr("utilization_threshold", "must be above 0%% and at most 100%%")
		}
		if c.Scope.Kind != "fleet" && c.Scope.Kind != "region" && c.Scope.Kind != "cluster" {
			return fieldErr("scope", "want fleet, region/NAME or cluster/NAME")
		}
		return nil
	case ConditionLatency:
		known := false
		for _, m := range LatencyMetrics {
			known = known || m == c.Metric
		}
		if !known {
			return fieldErr("metric", "unknown metric %q (known: %s)", printableOrQuoted(c.Metric), strings.Join(LatencyMetrics, ", "))
		}
		if c.Latency <= 0 {
			return fieldErr("threshold", "must be a positive latency such as 150ms")
		}
		for i, e := range c.Endpoints {
			if e == "" {
				return fieldErr(fmt.Sprintf("endpoints[%d]", i), "must not be empty")
			}
			if err := Printable(fmt.Sprintf("endpoints[%d]", i), e); err != nil {
				return err
			}
		}
		return nil
	}
	return fieldErr("", "give resource_type (utilisation) or metric (latency)")
}

func (a Action) validate(targets map[string]Target) error {
	named := map[string]bool{}
	for i, name := range a.Tenants {
		f := fmt.Sprintf("tenants[%d]", i)
		switch {
		case name == "":
			return fieldErr(f, "must not be empty: name a tenant of the tenants file")
		case len(name) > 253:
			return fieldErr(f, "must be at most 253 characters")
		case named[name]:
			return fieldErr(f, "tenant %q is named twice", printableOrQuoted(name))
		}
		if err := Printable(f, name); err != nil {
			return err
		}
		named[name] = true
	}
	work := func(field string) error {
		if len(a.Targets) == 0 {
			return fieldErr(field, "must name the work to act on")
		}
		for i, name := range a.Targets {
			f := field
			if field == "resources" {
				f = fmt.Sprintf("%s[%d]", field, i)
			}
			t, ok := targets[name]
			switch {
			case !ok:
				return fieldErr(f, "unknown target %q (define it under targets:, or use one of %s)",
					printableOrQuoted(name), strings.Join(targetNames(targets), ", "))
			case !t.Work():
				return fieldErr(f, "target %q is a destination (class %s), not work", name, *t.Class)
			}
		}
		return nil
	}
	switch a.Kind {
	case ActionScaleDown:
		if a.MinCapacity < 0 || a.MinCapacity > 1 || math.IsNaN(a.MinCapacity) {
			return fieldErr("min_capacity", "must be between 0%% and 100%%")
		}
		return work("target")
	case ActionMigrate:
		if err := work("target"); err != nil {
			return err
		}
		t, ok := targets[a.Destination]
		switch {
		case a.Destination == "":
			return fieldErr("destination", "must name where the work goes, e.g. low_priority_pool")
		case !ok:
			return fieldErr("destination", "unknown destination %q (define it under targets: with a class)", printableOrQuoted(a.Destination))
		case t.Work():
			return fieldErr("destination", "target %q selects work; a destination needs a class", a.Destination)
		}
		return nil
	case ActionReallocate:
		if a.Priority.Class <= ClassSpot || a.Priority.Class > ClassReserved {
			return fieldErr("priority", "want high, normal or a class above spot: reallocate only raises work (migrate lowers it)")
		}
		return work("resources")
	}
	return fieldErr("type", "unknown action %q (known: scale_down, migrate, reallocate)", printableOrQuoted(string(a.Kind)))
}

// ValidateTenants checks that every tenant an action names under tenants
// is a tenant of t. Validate cannot: a policies file is read without the
// tenancy it will meet. Field paths are those of the file:
// "scheduling_policies[0].actions[1].tenants[0]".
func (ps *PolicySet) ValidateTenants(t *Tenancy) error {
	known := map[string]bool{}
	var names []string
	if t != nil {
		for _, x := range t.Tenants {
			known[x.Name] = true
			names = append(names, x.Name)
		}
	}
	for i, p := range ps.Policies {
		for j, a := range p.Actions {
			for k, name := range a.Tenants {
				if !known[name] {
					return fieldErr(fmt.Sprintf("scheduling_policies[%d].actions[%d].tenants[%d]", i, j, k),
						"unknown tenant %q (not in the tenants file)%s", printableOrQuoted(name), DidYouMean(name, names))
				}
			}
		}
	}
	return nil
}

func targetNames(targets map[string]Target) []string {
	out := make([]string, 0, len(targets))
	for n := range targets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
