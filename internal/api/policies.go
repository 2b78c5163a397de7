package api

import (
	"net/http"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/policy"
	"github.com/allot-dev/allot/internal/server"
)

// PolicySet is the active operator policy set (docs/api.md,
// docs/policies.md).
type PolicySet struct {
	// Revision rises with every apply and delete; 0 when none was applied.
	Revision  int64      `json:"revision"`
	AppliedAt *time.Time `json:"applied_at"`
	AppliedBy string     `json:"applied_by"`
	// Text is the policies file as applied.
	Text        string        `json:"text"`
	EvaluatedAt *time.Time    `json:"evaluated_at"`
	Policies    []Policy      `json:"policies"`
	Events      []PolicyEvent `json:"events"`
}

// Policy is one policy of the set with what it does now.
type Policy struct {
	Name string `json:"name"`
	// Firing is true while the policy applies; held is whether its
	// conditions hold now (false while it cools down until until).
	Firing     bool              `json:"firing"`
	Held       bool              `json:"held"`
	Since      *time.Time        `json:"since"`
	Until      *time.Time        `json:"until"`
	Cooldown   string            `json:"cooldown"`
	Actions    []string          `json:"actions"`
	Conditions []PolicyCondition `json:"conditions"`
	Overrides  []PolicyOverride  `json:"overrides"`
	Ignored    []PolicyOverride  `json:"ignored"`
}

// PolicyCondition and PolicyOverride are shared with the other side of
// the API (package wire).
type (
	PolicyCondition = wire.PolicyCondition
	PolicyOverride  = wire.PolicyOverride
)

// PolicyEvent is a policy that fired, cleared or stopped.
type PolicyEvent struct {
	At         *time.Time        `json:"at"`
	Policy     string            `json:"policy"`
	Event      string            `json:"event"`
	Text       string            `json:"text"`
	Conditions []PolicyCondition `json:"conditions"`
}

func newPolicySet(st server.PolicySetStatus) PolicySet {
	out := PolicySet{Revision: st.Revision, AppliedAt: timePtr(st.AppliedAt), AppliedBy: st.AppliedBy, Text: st.Text,
		EvaluatedAt: timePtr(st.EvaluatedAt), Policies: make([]Policy, len(st.Policies)), Events: make([]PolicyEvent, len(st.Events))}
	for i, p := range st.Policies {
		out.Policies[i] = Policy{Name: p.Policy.Name, Firing: p.Firing, Held: p.Held, Since: timePtr(p.Since), Until: timePtr(p.Until),
			Cooldown: p.Policy.Cooldown.String(), Actions: p.Actions, Conditions: newConditions(p.Values),
			Overrides: newOverrides(p.Overrides), Ignored: newOverrides(p.Ignored)}
		if out.Policies[i].Actions == nil {
			out.Policies[i].Actions = []string{}
		}
	}
	for i, e := range st.Events {
		out.Events[i] = PolicyEvent{At: timePtr(e.At), Policy: e.Policy, Event: e.Kind, Text: e.Text, Conditions: newConditions(e.Values)}
	}
	return out
}

func newConditions(vs []policy.Value) []PolicyCondition {
	out := make([]PolicyCondition, len(vs))
	for i, v := range vs {
		out[i] = PolicyCondition{Metric: v.Metric, Key: v.Key, Held: v.Held, Seen: v.Seen, Current: v.Current,
			Lowest: v.Lowest, Threshold: v.Threshold, For: v.For.String(), Text: server.PolicyValueText(v)}
	}
	return out
}

func newOverrides(os []policy.Override) []PolicyOverride {
	out := make([]PolicyOverride, len(os))
	for i, o := range os {
		out[i] = PolicyOverride{Job: o.Job, Action: string(o.Action), From: o.From.String(), To: o.To.String(), Detail: o.Detail}
	}
	return out
}

func (h *handler) applyPolicies(w http.ResponseWriter, r *http.Request, p server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	st, err := h.srv.ApplyPolicies(r.Context(), p, body)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newPolicySet(st))
}

func (h *handler) listPolicies(w http.ResponseWriter, r *http.Request, p server.Principal) {
	st, err := h.srv.Policies(p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newPolicySet(st))
}

func (h *handler) deletePolicy(w http.ResponseWriter, r *http.Request, p server.Principal) {
	st, err := h.srv.DeletePolicy(r.Context(), p, r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newPolicySet(st))
}

func (h *handler) deletePolicies(w http.ResponseWriter, r *http.Request, p server.Principal) {
	st, err := h.srv.DeletePolicy(r.Context(), p, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newPolicySet(st))
}
