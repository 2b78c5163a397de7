package spec

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// policiesFile is the layout of a policies file.
type policiesFile struct {
	Policies []policyEntry `yaml:"scheduling_policies"`
	Targets  targetsEntry  `yaml:"targets"`
}

type policyEntry struct {
	Name       string           `yaml:"name"`
	Conditions []conditionEntry `yaml:"conditions"`
	Actions    []actionEntry    `yaml:"actions"`
	Cooldown   *duration        `yaml:"cooldown"`
}

// conditionEntry is a utilisation condition (resource_type,
// utilization_threshold, scope) or a latency one (metric, threshold,
// endpoints); duration applies to both.
type conditionEntry struct {
	ResourceType string   `yaml:"resource_type"`
	Utilization  *percent `yaml:"utilization_threshold"`
	Scope        string   `yaml:"scope"`
	Metric       string   `yaml:"metric"`
	Threshold    duration `yaml:"threshold"`
	Endpoints    []string `yaml:"endpoints"`
	Duration     duration `yaml:"duration"`
}

type actionEntry struct {
	Type        string         `yaml:"type"`
	Target      string         `yaml:"target"`
	MinCapacity *percent       `yaml:"min_capacity"`
	Destination string         `yaml:"destination"`
	Resources   []string       `yaml:"resources"`
	Priority    policyPriority `yaml:"priority"`
	Tenants     tenantNames    `yaml:"tenants"`
}

type targetEntry struct {
	Match map[string]string `yaml:"match"`
	Class string            `yaml:"class"`
}

// targetsEntry is the targets section: a mapping of names to targets.
type targetsEntry struct {
	names   []string
	entries map[string]targetEntry
}

func (t *targetsEntry) decodeNode(d *decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping of target names to {match: …} or {class: …}, got %s", describe(n))
	}
	t.entries = map[string]targetEntry{}
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isMerge(k) {
			return d.errorAt(k, path, "want a target name, got %s", describe(k))
		}
		fp := join(path, k.Value)
		if first, dup := lines[k.Value]; dup {
			return d.errorAt(k, fp, "set twice (first at line %d)", first)
		}
		lines[k.Value] = k.Line
		var e targetEntry
		if err := d.decode(v, fp, reflect.ValueOf(&e).Elem()); err != nil {
			return err
		}
		t.names = append(t.names, k.Value)
		t.entries[k.Value] = e
	}
	return nil
}

// percent is a share written "85%" (or "12.5%"), kept as a fraction.
type percent float64

func (p *percent) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	v, err := parsePercent(n)
	if err != nil {
		return err
	}
	*p = percent(v)
	return nil
}

func parsePercent(n *yaml.Node) (float64, error) {
	bad := fmt.Errorf("want a percentage like 85%%, got %s", describe(n))
	if n.Kind != yaml.ScalarNode {
		return 0, bad
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(n.Value), "%")
	if !ok {
		return 0, bad
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, bad
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("%s is not between 0%% and 100%%", n.Value)
	}
	return v / 100, nil
}

// policyPriority is the priority of a reallocate action: high, normal,
// low, or a class.
type policyPriority struct {
	set bool
	p   model.Priority
}

func (p *policyPriority) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want high, normal, low or a class such as reserved, got %s", describe(n))
	}
	v, err := model.ParsePolicyPriority(n.Value)
	if err != nil {
		return err
	}
	*p = policyPriority{set: true, p: v}
	return nil
}

// tenantNames is the tenants of an action: a list of tenant names (a
// single name stands for a list of one). Each is a string; a number such as
// 3 is refused rather than read as the name "3", which may be quoted.
type tenantNames []string

func (t *tenantNames) decodeNode(d *decoder, n *yaml.Node, path string) error {
	const want = "want a list of tenant names such as [acme, globex]"
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		*t = tenantNames{n.Value}
		return nil
	case n.Kind != yaml.SequenceNode:
		return fmt.Errorf("%s, got %s", want, describe(n))
	case len(n.Content) == 0:
		return fmt.Errorf("names no tenant: leave tenants out to act on the work of every tenant but customers")
	}
	names := make(tenantNames, len(n.Content))
	for i, c := range n.Content {
		fp := fmt.Sprintf("%s[%d]", path, i)
		if c.Kind == yaml.AliasNode {
			if c = resolve(c); c == nil {
				return d.errorAt(n, fp, "alias refers to nothing")
			}
		}
		if err := d.visit(c, fp); err != nil {
			return err
		}
		if c.Kind != yaml.ScalarNode || c.ShortTag() != "!!str" {
			return d.errorAt(c, fp, "want a tenant name (a string; quote a name such as \"3\"), got %s", describe(c))
		}
		names[i] = c.Value
	}
	*t = names
	return nil
}

// ReadPolicies reads the policies file at path. See ParsePolicies.
func ReadPolicies(path string) (*model.PolicySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policies: %w", err)
	}
	return ParsePolicies(path, data)
}

// ParsePolicies reads a policies file named name: scheduling_policies, a
// list of {name, conditions, actions, cooldown}, and targets, a mapping of
// names to {match: labels} (work) or {class: spot} (a destination) that
// add to and replace model.BuiltinTargets. The set it returns has passed
// model.PolicySet.Validate; any error is an *Error. The tenants its actions
// name are not checked: ParsePoliciesFor checks them against a tenancy.
func ParsePolicies(name string, data []byte) (*model.PolicySet, error) {
	ps, _, _, err := parsePolicies(name, data)
	return ps, err
}

// ParsePoliciesFor reads a policies file as ParsePolicies does, then checks
// that every tenant its actions name under tenants is a tenant of t
// (model.PolicySet.ValidateTenants), reporting an unknown one at its line.
func ParsePoliciesFor(name string, data []byte, t *model.Tenancy) (*model.PolicySet, error) {
	ps, d, root, err := parsePolicies(name, data)
	if err != nil {
		return nil, err
	}
	if err := ps.ValidateTenants(t); err != nil {
		return nil, d.fromModel(root, err, nil)
	}
	return ps, nil
}

func parsePolicies(name string, data []byte) (*model.PolicySet, *decoder, *yaml.Node, error) {
	docs, err := parseDocuments(name, data)
	if err != nil {
		return nil, nil, nil, err
	}
	root, err := single(name, docs, "policies (scheduling_policies: …)")
	if err != nil {
		return nil, nil, nil, err
	}
	d := newDecoder(name)
	var pf policiesFile
	if err := d.decode(root, "", reflect.ValueOf(&pf).Elem()); err != nil {
		return nil, nil, nil, err
	}
	ps := &model.PolicySet{Targets: model.BuiltinTargets()}
	for _, tn := range pf.Targets.names {
		e := pf.Targets.entries[tn]
		t := model.Target{Name: tn, Match: e.Match}
		if e.Class != "" {
			c, err := model.ParsePriority(e.Class)
			if err != nil || c.Value != 0 || strings.Contains(e.Class, ":") {
				return nil, nil, nil, d.errorAtPath(root, "targets."+tn+".class", "want spot, standard or reserved, got %q", e.Class)
			}
			t.Class = &c.Class
		}
		ps.Targets[tn] = t
	}
	for i, pe := range pf.Policies {
		fp := fmt.Sprintf("scheduling_policies[%d]", i)
		p := model.Policy{Name: pe.Name, Cooldown: model.DefaultCooldown}
		if pe.Cooldown != nil {
			p.Cooldown = time.Duration(*pe.Cooldown)
		}
		for j, ce := range pe.Conditions {
			c, err := condition(ce)
			if err != nil {
				return nil, nil, nil, d.fromModel(root, model.Prefix(fmt.Sprintf("%s.conditions[%d]", fp, j), err), nil)
			}
			p.Conditions = append(p.Conditions, c)
		}
		for j, ae := range pe.Actions {
			a, err := action(ae)
			if err != nil {
				return nil, nil, nil, d.fromModel(root, model.Prefix(fmt.Sprintf("%s.actions[%d]", fp, j), err), nil)
			}
			p.Actions = append(p.Actions, a)
		}
		ps.Policies = append(ps.Policies, p)
	}
	if err := ps.Validate(); err != nil {
		return nil, nil, nil, d.fromModel(root, err, nil)
	}
	return ps, d, root, nil
}

// condition reads one condition entry; which fields it sets decides its
// kind.
func condition(ce conditionEntry) (model.Condition, error) {
	c := model.Condition{For: time.Duration(ce.Duration), Endpoints: ce.Endpoints}
	util := ce.ResourceType != "" || ce.Utilization != nil || ce.Scope != ""
	lat := ce.Metric != "" || ce.Threshold != 0 || len(ce.Endpoints) > 0
	switch {
	case util && lat:
		return c, &model.FieldError{Msg: "a condition is on utilisation (resource_type, utilization_threshold, scope) " +
			"or on latency (metric, threshold, endpoints), not both: write two conditions"}
	case util:
		c.Kind = model.ConditionUtilization
		if ce.ResourceType != model.ResourceGPUCluster {
			return c, &model.FieldError{Field: "resource_type", Msg: fmt.Sprintf("want %s, got %q", model.ResourceGPUCluster, ce.ResourceType)}
		}
		if ce.Utilization == nil {
			return c, &model.FieldError{Field: "utilization_threshold", Msg: "must be set, e.g. 85%"}
		}
		c.Utilization = float64(*ce.Utilization)
		s, err := model.ParseScope(ce.Scope)
		if err != nil {
			return c, &model.FieldError{Field: "scope", Msg: err.Error()}
		}
		c.Scope = s
	case lat:
		c.Kind = model.ConditionLatency
		c.Metric, c.Latency = ce.Metric, time.Duration(ce.Threshold)
		if c.Metric == "" {
			return c, &model.FieldError{Field: "metric", Msg: "must be set, e.g. p95_latency"}
		}
	}
	return c, nil
}

// action reads one action entry, rejecting the fields its type does not
// use so that a misplaced field is not silently ignored.
func action(ae actionEntry) (model.Action, error) {
	a := model.Action{Kind: model.ActionKind(ae.Type), Destination: ae.Destination, Priority: ae.Priority.p, Tenants: ae.Tenants}
	if ae.MinCapacity != nil {
		a.MinCapacity = float64(*ae.MinCapacity)
	}
	if ae.Target != "" {
		a.Targets = []string{ae.Target}
	}
	a.Targets = append(a.Targets, ae.Resources...)
	unused := func(field string, set bool) error {
		if set {
			return &model.FieldError{Field: field, Msg: fmt.Sprintf("is not a field of a %s action", ae.Type)}
		}
		return nil
	}
	var errs []error
	switch a.Kind {
	case model.ActionScaleDown:
		if ae.MinCapacity == nil {
			return a, &model.FieldError{Field: "min_capacity", Msg: "must be set, e.g. 30% (of what the target held when the policy began to apply)"}
		}
		errs = append(errs, unused("destination", ae.Destination != ""), unused("resources", ae.Resources != nil), unused("priority", ae.Priority.set))
	case model.ActionMigrate:
		errs = append(errs, unused("min_capacity", ae.MinCapacity != nil), unused("resources", ae.Resources != nil), unused("priority", ae.Priority.set))
	case model.ActionReallocate:
		if !ae.Priority.set {
			return a, &model.FieldError{Field: "priority", Msg: "must be set, e.g. high"}
		}
		errs = append(errs, unused("target", ae.Target != ""), unused("min_capacity", ae.MinCapacity != nil), unused("destination", ae.Destination != ""))
	}
	for _, err := range errs {
		if err != nil {
			return a, err
		}
	}
	return a, nil
}
