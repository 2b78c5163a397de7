package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/policy"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
)

// Stored policies.
//
// The active policy set is one object, /policies: the text of the policies
// file as it was applied (YAML or JSON), a revision that every apply and
// delete raises, and who applied it when. PUT /v1/policies replaces it
// whole; DELETE /v1/policies/{name} removes one policy from the text (the
// rest of the file, comments included, is kept), DELETE /v1/policies all
// of them (the targets stay). Every change is a transaction on the
// record's ModRev, so two concurrent changes cannot lose one another.
//
// allot server --policies FILE (Config.Policies) applies FILE at start
// when it differs from the file applied at the previous start (the record
// keeps its SHA-256): a changed file is newer than anything applied
// through the API, an unchanged one is not, so a set applied through the
// API survives a restart with the same flags, and editing the file and
// restarting applies it.

// keyPolicies is the store key of the active policy set.
const keyPolicies = "/policies"

// MaxPolicyText bounds the text of a policies file the server keeps.
const MaxPolicyText = 256 << 10

// PolicyFile is a policies file to apply when the server starts.
type PolicyFile struct {
	Name string // the file's name, for errors ("policies.yaml:3:5: …")
	Text []byte
}

type policyRecord struct {
	Name      string    `json:"name"`
	Text      string    `json:"text"`
	Revision  int64     `json:"revision"`
	AppliedAt time.Time `json:"applied_at"`
	AppliedBy string    `json:"applied_by"`
	// StartFile is the SHA-256 of the file --policies last applied at a
	// start.
	StartFile string `json:"start_file_sha256,omitempty"`
}

// loadPolicies reads the stored policy set, then applies the start file
// when it is new (see above). A stored set that no longer parses is an
// error unless a start file replaces it.
//
// A file applied (at start or through the API) must name only tenants of
// the server's tenancy in its actions' tenants (spec.ParsePoliciesFor). A
// stored set, and what a delete leaves of it, is not checked again: a
// tenant since removed from the tenants file has no work for the action to
// take, and should not stop the server or a delete.
func (s *Server) loadPolicies(ctx context.Context, start *PolicyFile) error {
	b := &s.pol
	kv, err := s.st.Get(ctx, keyPolicies)
	var rec policyRecord
	var ps *model.PolicySet
	switch {
	case errors.Is(err, store.ErrNotFound):
		kv.ModRev = 0
	case err != nil:
		return fmt.Errorf("server: read policies: %w", err)
	default:
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return fmt.Errorf("server: read policies: %w", err)
		}
		if ps, err = spec.ParsePolicies(rec.Name, []byte(rec.Text)); err != nil && start == nil {
			return fmt.Errorf("server: stored policies (revision %d): %w", rec.Revision, err)
		}
	}
	b.mu.Lock()
	b.set, b.rec, b.modRev = ps, rec, kv.ModRev
	b.mu.Unlock()
	if start == nil {
		return nil
	}
	sum := sha256.Sum256(start.Text)
	sha := hex.EncodeToString(sum[:])
	if ps != nil && rec.StartFile == sha {
		s.log.Info("policies file unchanged since the last start; keeping the stored set",
			"file", start.Name, "revision", rec.Revision, "applied_by", rec.AppliedBy, "applied_at", rec.AppliedAt)
		return nil
	}
	next, err := spec.ParsePoliciesFor(start.Name, start.Text, s.cfg.Tenancy)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	st, err := s.writePolicies(ctx, start.Name, start.Text, next, "--policies "+start.Name, sha)
	if err == nil {
		s.audit(ctx, Principal{}, ActionPolicyApply, "policies", fmt.Sprintf("revision %d: %d policies from --policies %s at start",
			st.Revision, len(next.Policies), start.Name))
	}
	return err
}

// ApplyPolicies replaces the active policy set with the policies file
// text (YAML or JSON); only the administrator may.
func (s *Server) ApplyPolicies(ctx context.Context, p Principal, text []byte) (PolicySetStatus, error) {
	if !p.Admin || p.Endpoint != "" {
		return PolicySetStatus{}, refuse(CodeForbidden, "", "applying policies needs the admin token")
	}
	if len(text) > MaxPolicyText {
		return PolicySetStatus{}, refuse(CodeTooLarge, "", "a policies file is at most %d KiB", MaxPolicyText>>10)
	}
	ps, err := spec.ParsePoliciesFor("policies", text, s.cfg.Tenancy)
	if err != nil {
		var se *spec.Error
		if errors.As(err, &se) {
			return PolicySetStatus{}, refuse(CodeInvalidSpec, se.Field, "%s", err.Error())
		}
		return PolicySetStatus{}, refuse(CodeInvalidSpec, "", "%s", err.Error())
	}
	st, err := s.writePolicies(ctx, "policies", text, ps, p.Name(), "")
	if err == nil {
		s.audit(ctx, p, ActionPolicyApply, "policies", fmt.Sprintf("revision %d: %d policies", st.Revision, len(ps.Policies)))
	}
	return st, err
}

// DeletePolicy removes policy name from the active set; name "" removes
// every policy. Only the administrator may.
func (s *Server) DeletePolicy(ctx context.Context, p Principal, name string) (PolicySetStatus, error) {
	if !p.Admin || p.Endpoint != "" {
		return PolicySetStatus{}, refuse(CodeForbidden, "", "deleting policies needs the admin token")
	}
	b := &s.pol
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	b.mu.Lock()
	rec, set := b.rec, b.set
	b.mu.Unlock()
	if name != "" && findPolicy(set, name) == nil {
		return PolicySetStatus{}, refuse(CodeNotFound, "", "no policy %q", name)
	}
	if set == nil {
		return s.Policies(p)
	}
	text, err := withoutPolicy([]byte(rec.Text), name)
	if err != nil {
		return PolicySetStatus{}, refuse(CodeConflict, "", "cannot remove %q from the stored file (%v); apply an edited file instead", name, err)
	}
	ps, err := spec.ParsePolicies(rec.Name, text)
	if err != nil {
		return PolicySetStatus{}, refuse(CodeConflict, "", "the file without %q does not load (%v); apply an edited file instead", name, err)
	}
	st, err := s.writePoliciesLocked(ctx, rec.Name, text, ps, p.Name(), "")
	if err == nil {
		what := "every policy"
		if name != "" {
			what = "policy " + name
		}
		s.audit(ctx, p, ActionPolicyDelete, "policies", fmt.Sprintf("revision %d: removed %s", st.Revision, what))
	}
	return st, err
}

func (s *Server) writePolicies(ctx context.Context, name string, text []byte, ps *model.PolicySet, by, startFile string) (PolicySetStatus, error) {
	s.pol.writeMu.Lock()
	defer s.pol.writeMu.Unlock()
	return s.writePoliciesLocked(ctx, name, text, ps, by, startFile)
}

// writePoliciesLocked stores ps with its text as the next revision and
// makes it the set the next cycle evaluates. startFile is kept from the
// stored record when empty. The caller holds writeMu.
func (s *Server) writePoliciesLocked(ctx context.Context, name string, text []byte, ps *model.PolicySet, by, startFile string) (PolicySetStatus, error) {
	b := &s.pol
	b.mu.Lock()
	old, modRev := b.rec, b.modRev
	b.mu.Unlock()
	if startFile == "" {
		startFile = old.StartFile
	}
	rec := policyRecord{Name: name, Text: string(text), Revision: old.Revision + 1, AppliedAt: s.clock.Now(),
		AppliedBy: by, StartFile: startFile}
	v, err := json.Marshal(rec)
	if err != nil {
		return PolicySetStatus{}, fmt.Errorf("encode policies: %w", err)
	}
	rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(keyPolicies, modRev)}, Then: []store.Op{store.PutOp(keyPolicies, v)}})
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		return PolicySetStatus{}, refuse(CodeConflict, "", "the policies changed in the store meanwhile; restart the server")
	}
	if err != nil {
		return PolicySetStatus{}, fmt.Errorf("write policies: %w", err)
	}
	b.mu.Lock()
	b.set, b.rec, b.modRev = ps, rec, rev
	b.mu.Unlock()
	s.log.Info("policies applied", "revision", rec.Revision, "policies", len(ps.Policies), "by", by, "rev", rev)
	s.Kick()
	return s.Policies(Principal{Admin: true})
}

// withoutPolicy returns the policies file text without the policy called
// name under scheduling_policies, or without any policy when name is "".
// The rest of the document is kept as it was parsed.
func withoutPolicy(text []byte, name string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping")
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "scheduling_policies" || root.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		seq := root.Content[i+1]
		seq.Content = slices.DeleteFunc(seq.Content, func(n *yaml.Node) bool {
			if name == "" {
				return true
			}
			for k := 0; n.Kind == yaml.MappingNode && k+1 < len(n.Content); k += 2 {
				if n.Content[k].Value == "name" && n.Content[k+1].Value == name {
					return true
				}
			}
			return false
		})
		if len(seq.Content) == 0 {
			seq.Style = yaml.FlowStyle // scheduling_policies: []
		}
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// PolicySetStatus is the active policy set with what each policy does now.
type PolicySetStatus struct {
	Revision  int64 // 0: no policies were ever applied
	AppliedAt time.Time
	AppliedBy string
	Text      string // the file as applied
	// EvaluatedAt is the last cycle that evaluated the policies.
	EvaluatedAt time.Time
	Policies    []PolicyStatus
	// Events are the newest MaxPolicyEvents changes, oldest first.
	Events []PolicyEvent
}

// PolicyStatus is one policy of the active set.
type PolicyStatus struct {
	Policy model.Policy
	// Firing is true while the policy applies: Since is when it began,
	// Held whether its conditions hold now (false while it cools down),
	// Until when it stops unless they hold again.
	Firing             bool
	Held               bool
	Since, Until       time.Time
	Values             []policy.Value
	Overrides, Ignored []policy.Override // of the last cycle
	// Actions say each action and its targets ("scale_down
	// developer_instances to 30%").
	Actions []string
}

// Policies returns the active policy set; only the administrator may read
// it.
func (s *Server) Policies(p Principal) (PolicySetStatus, error) {
	if !p.Admin || p.Endpoint != "" {
		return PolicySetStatus{}, refuse(CodeForbidden, "", "reading policies needs the admin token")
	}
	b := &s.pol
	b.mu.Lock()
	defer b.mu.Unlock()
	out := PolicySetStatus{Revision: b.rec.Revision, AppliedAt: b.rec.AppliedAt, AppliedBy: b.rec.AppliedBy,
		Text: b.rec.Text, EvaluatedAt: b.evaluated, Events: slices.Clone(b.events)}
	if b.set == nil {
		return out, nil
	}
	firing := map[string]policy.Firing{}
	for _, f := range b.active {
		firing[f.Policy] = f
	}
	byPolicy := map[string]*PolicyStatus{}
	for _, pol := range b.set.Policies {
		st := PolicyStatus{Policy: pol}
		for _, a := range pol.Actions {
			st.Actions = append(st.Actions, actionSummary(a))
		}
		if f, ok := firing[pol.Name]; ok {
			st.Firing, st.Held, st.Since, st.Until, st.Values = true, f.Held, f.Since, f.Until, f.Values
		} else {
			st.Values = latestValues(pol, &b.metrics, b.evaluated)
		}
		out.Policies = append(out.Policies, st)
	}
	for i := range out.Policies {
		byPolicy[out.Policies[i].Policy.Name] = &out.Policies[i]
	}
	for _, os := range b.overrides {
		for _, o := range os {
			if st := byPolicy[o.Policy]; st != nil {
				st.Overrides = append(st.Overrides, o)
			}
		}
	}
	for _, os := range b.ignored {
		for _, o := range os {
			if st := byPolicy[o.Policy]; st != nil {
				st.Ignored = append(st.Ignored, o)
			}
		}
	}
	for i := range out.Policies {
		sortOverrides(out.Policies[i].Overrides)
		sortOverrides(out.Policies[i].Ignored)
	}
	return out, nil
}

func sortOverrides(os []policy.Override) {
	slices.SortFunc(os, func(a, b policy.Override) int {
		if a.Job < b.Job {
			return -1
		}
		if a.Job > b.Job {
			return 1
		}
		return 0
	})
}

// latestValues reports, for a policy that does not apply, the value of
// each of its conditions in force at the last evaluation (policy.Evaluate
// reports values only for the policies that apply): the scope's
// utilisation, or the highest latency among the endpoints it watches.
func latestValues(p model.Policy, m *policy.Metrics, at time.Time) []policy.Value {
	out := make([]policy.Value, len(p.Conditions))
	for i, c := range p.Conditions {
		v := policy.Value{Kind: c.Kind, For: c.For}
		keys := []string{c.Scope.String()}
		v.Metric, v.Threshold = policy.MetricUtilization, c.Utilization
		if c.Kind == model.ConditionLatency {
			v.Metric, v.Threshold, keys = c.Metric, c.Latency.Seconds(), c.Endpoints
			if len(keys) == 0 {
				keys = m.Keys(c.Metric)
			}
		}
		for _, k := range keys {
			s := m.Series(v.Metric, k)
			if len(s) == 0 || at.IsZero() {
				continue
			}
			last := s[len(s)-1]
			if last.At.After(at) || at.Sub(last.At) > policy.MaxSampleAge {
				continue
			}
			if !v.Seen || last.Value > v.Current {
				v.Key, v.Current, v.Seen = k, last.Value, true
			}
		}
		if v.Key == "" && len(keys) == 1 {
			v.Key = keys[0]
		}
		out[i] = v
	}
	return out
}
