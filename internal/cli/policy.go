package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/policy"
	"github.com/allot-dev/allot/internal/spec"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check operator policies and replay them against recorded metrics",
		Long: `A policies file holds an operator's rules: when every condition of a policy
holds (GPU utilisation of a scope above a threshold, an endpoint's latency
percentile above a threshold for a duration), its actions apply (scale_down,
migrate, reallocate), and keep applying for its cooldown after the conditions
clear. Actions only change the priority class of the work they target; the
scheduling core still decides every bind and preemption. docs/policies.md
gives the meaning of every field.

validate and test work offline, on files. apply, list and delete manage the
policies of a running server (admin token): it evaluates them at every
scheduling cycle, and 'allot job why' says what they did to a job.`,
	}
	cmd.AddCommand(newPolicyValidateCmd(), newPolicyTestCmd(), newPolicyApplyCmd(), newPolicyListCmd(), newPolicyDeleteCmd())
	return cmd
}

func newPolicyValidateCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "validate [-f] FILE",
		Short: "Check a policies file and print what each policy means",
		Long: `validate reads a policies file, reports the first problem as
file:line:col: field: message (exit status 2), or prints each policy as allot
understands it: its conditions, its actions, and the labels or class every
target resolves to (a name the file does not define comes from the built-in
table: developer_instances, batch_jobs, training_jobs and inference_gpus are
work labelled workload: developer, batch, training or inference;
low_priority_pool is the spot class).`,
		Example: `  allot policy validate -f examples/policies.yaml`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := spec.ReadPolicies(file)
			if err != nil {
				return Usage(err)
			}
			return writePolicies(cmd.OutOrStdout(), file, ps)
		},
	}
	fileFlag(cmd, &file, "policies file (or give it as the argument)")
	return cmd
}

type policyTestFlags struct {
	file, metrics, at string
	every             time.Duration
}

func newPolicyTestCmd() *cobra.Command {
	var f policyTestFlags
	cmd := &cobra.Command{
		Use:   "test [-f] FILE --metrics RECORDING [--at TIME]",
		Short: "Replay recorded metrics and print when each policy would have fired",
		Long: `test evaluates the policies of FILE over a recording of metrics, as the
server would at every scheduling cycle, and prints every change: when a
policy fires (all its conditions hold), when it clears (they stop holding;
its actions still apply during its cooldown) and when it stops applying,
with the values of its conditions at that moment.

The recording is a YAML file of series, one value per step from start:

  start: 2026-03-02T09:00:00Z
  step: 1m
  series:
    - {metric: gpu_utilization, scope: fleet, values: [70%, 86%, ~, 91%]}
    - {metric: p95_latency, endpoint: copilot-chat, values: [90ms, 180ms]}

scope is fleet, region/NAME or cluster/NAME; ~ leaves a gap. A value stays
in force until the next one, for at most 5m. The replay evaluates every
--every (default: the smallest step of the recording) from the first value
until every policy has stopped applying.

With --at, test replays up to TIME and prints the policies that apply then,
each condition with its value, threshold and margin, and each action.
Without a world of jobs, a scale_down's floor is shown as a share of what
its target holds when the policy fires.`,
		Example: `  allot policy test -f examples/policies.yaml --metrics examples/metrics/busy-hour.yaml
  allot policy test -f examples/policies.yaml --metrics examples/metrics/busy-hour.yaml --at 2026-03-02T09:17:00Z`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPolicyTest(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.metrics, "metrics", "", "recorded metrics file (YAML)")
	fl.StringVar(&f.at, "at", "", "show the policies that apply at this time, RFC 3339")
	fl.DurationVar(&f.every, "every", 0, "time between two evaluations (default: the recording's smallest step)")
	fileFlag(cmd, &f.file, "policies file (or give it as the argument)")
	_ = cmd.MarkFlagRequired("metrics")
	return cmd
}

func runPolicyTest(out io.Writer, f policyTestFlags) error {
	ps, err := spec.ReadPolicies(f.file)
	if err != nil {
		return Usage(err)
	}
	rec, err := spec.ReadRecording(f.metrics)
	if err != nil {
		return Usage(err)
	}
	var m policy.Metrics
	var first, last time.Time
	step := f.every
	for _, s := range rec.Series {
		for i, x := range s.Samples {
			m.Add(s.Metric, s.Key, x.At, x.Value)
			if first.IsZero() || x.At.Before(first) {
				first = x.At
			}
			if x.At.After(last) {
				last = x.At
			}
			if f.every == 0 && i > 0 {
				if d := x.At.Sub(s.Samples[i-1].At); step == 0 || d < step {
					step = d
				}
			}
		}
	}
	if first.IsZero() {
		return Usage(fmt.Errorf("%s: the recording has no values", f.metrics))
	}
	if step <= 0 {
		step = time.Minute
	}
	end := last.Add(policy.MaxSampleAge)
	for _, p := range ps.Policies {
		end = maxTime(end, last.Add(policy.MaxSampleAge+p.Cooldown))
	}
	var at time.Time
	if f.at != "" {
		at, err = time.Parse(time.RFC3339, f.at)
		if err != nil {
			return Usage(fmt.Errorf("--at %q: want RFC 3339, e.g. 2026-03-02T09:17:00Z", f.at))
		}
		end = at
	}
	if n := end.Sub(first) / step; n > 1_000_000 {
		return Usage(fmt.Errorf("--every %s: %d evaluations are too many; give a longer step", step, n))
	}
	var active []policy.Firing
	t := table{header: []string{"TIME", "POLICY", "EVENT", "CONDITIONS"}}
	now := first
	for ; !now.After(end); now = now.Add(step) {
		if f.at != "" && now.Add(step).After(at) {
			now = at // the last evaluation is at --at exactly
		}
		next := policy.Evaluate(ps, policy.State{Active: active}, &m, now)
		for _, e := range changes(active, next, now) {
			t.add(now.UTC().Format(time.RFC3339), e.policy, e.event, e.values)
		}
		active = next
		if now.Equal(at) {
			break
		}
	}
	if f.at != "" {
		return writeFirings(out, ps, active, at)
	}
	if len(t.rows) == 0 {
		fmt.Fprintf(out, "No policy fired between %s and %s.\n", first.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
		return nil
	}
	return t.print(out)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

type change struct{ policy, event, values string }

// changes lists what changed between two evaluations: a policy fires, its
// conditions clear (it cools down), it stops applying.
func changes(before, after []policy.Firing, now time.Time) []change {
	was := map[string]policy.Firing{}
	for _, f := range before {
		was[f.Policy] = f
	}
	var out []change
	is := map[string]bool{}
	for _, f := range after {
		is[f.Policy] = true
		prev, ok := was[f.Policy]
		switch {
		case f.Held && (!ok || !prev.Held):
			out = append(out, change{f.Policy, "fires", valuesText(f.Values)})
		case !f.Held && ok && prev.Held:
			out = append(out, change{f.Policy, "clears", fmt.Sprintf("%s; applies until %s", valuesText(f.Values), f.Until.UTC().Format(time.TimeOnly))})
		}
	}
	for _, f := range before {
		if !is[f.Policy] {
			out = append(out, change{f.Policy, "stops", ""})
		}
	}
	return out
}

func valuesText(vs []policy.Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = valueText(v)
	}
	return strings.Join(parts, "; ")
}

// valueText writes one condition's value: "p95_latency copilot-chat 180ms >
// 150ms for 5m (lowest 160ms)".
func valueText(v policy.Value) string {
	num := func(x float64) string {
		if v.Kind == model.ConditionUtilization {
			return fmt.Sprintf("%.1f%%", x*100)
		}
		return time.Duration(x * float64(time.Second)).Round(time.Microsecond).String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s ", v.Metric, v.Key)
	if !v.Seen {
		b.WriteString("no value")
	} else {
		b.WriteString(num(v.Current))
	}
	op := ">"
	if !v.Held {
		op = "not >"
	}
	fmt.Fprintf(&b, " %s %s", op, num(v.Threshold))
	if v.For > 0 {
		fmt.Fprintf(&b, " for %s", v.For)
		if v.Held {
			fmt.Fprintf(&b, " (lowest %s)", num(v.Lowest))
		}
	}
	return b.String()
}

// writeFirings prints the policies that apply at at, in detail.
func writeFirings(out io.Writer, ps *model.PolicySet, fs []policy.Firing, at time.Time) error {
	if len(fs) == 0 {
		fmt.Fprintf(out, "No policy applies at %s.\n", at.UTC().Format(time.RFC3339))
		return nil
	}
	for i, f := range fs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		var fl fields
		fl.add("Policy", f.Policy)
		state := "fires: every condition holds"
		if !f.Held {
			state = "cooling down: its conditions last held at " + f.LastHeld.UTC().Format(time.RFC3339)
		}
		fl.add("State", state)
		fl.add("Since", f.Since.UTC().Format(time.RFC3339))
		fl.add("Applies until", f.Until.UTC().Format(time.RFC3339)+" unless its conditions hold again")
		for j, v := range f.Values {
			fl.add(fmt.Sprintf("Condition %d", j+1), valueText(v))
		}
		for j, a := range f.Actions {
			fl.add(fmt.Sprintf("Action %d", j+1), actionText(ps, a.Action))
		}
		if err := fl.print(out); err != nil {
			return err
		}
	}
	return nil
}

// actionText says what an action does, in the terms of the core's inputs.
func actionText(ps *model.PolicySet, a model.Action) string {
	targets := make([]string, len(a.Targets))
	for i, n := range a.Targets {
		targets[i] = n + " (" + targetText(ps.Targets[n]) + ")"
	}
	work := strings.Join(targets, ", ")
	switch a.Kind {
	case model.ActionScaleDown:
		return fmt.Sprintf("scale_down %s: keep %.0f%% of what it held when the policy fired, the work that would lose the most first; the rest and its queued work run as spot",
			work, a.MinCapacity*100)
	case model.ActionMigrate:
		return fmt.Sprintf("migrate %s: queued and running work runs as %s (%s)", work, a.Destination, targetText(ps.Targets[a.Destination]))
	case model.ActionReallocate:
		return fmt.Sprintf("reallocate %s: work below %s is raised to it", work, a.Priority)
	}
	return string(a.Kind)
}

func targetText(t model.Target) string {
	var s string
	if t.Class != nil {
		s = "class " + t.Class.String()
	} else {
		keys := make([]string, 0, len(t.Match))
		for k := range t.Match {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + ": " + t.Match[k]
		}
		s = "work labelled " + strings.Join(keys, ", ")
	}
	if t.Builtin {
		s += ", built-in"
	}
	return s
}

// writePolicies prints a validated policies file as allot reads it.
func writePolicies(out io.Writer, file string, ps *model.PolicySet) error {
	fmt.Fprintf(out, "%s: %d policies, valid.\n", file, len(ps.Policies))
	for _, p := range ps.Policies {
		fmt.Fprintln(out)
		var fl fields
		fl.add("Policy", p.Name)
		for j, c := range p.Conditions {
			fl.add(fmt.Sprintf("Condition %d", j+1), conditionText(c))
		}
		for j, a := range p.Actions {
			fl.add(fmt.Sprintf("Action %d", j+1), actionText(ps, a))
		}
		fl.add("Cooldown", p.Cooldown.String())
		if err := fl.print(out); err != nil {
			return err
		}
	}
	return nil
}

func conditionText(c model.Condition) string {
	var s string
	if c.Kind == model.ConditionUtilization {
		s = fmt.Sprintf("GPU utilisation of %s (allocated over Ready GPUs) above %.1f%%", c.Scope, c.Utilization*100)
	} else {
		who := "some endpoint's"
		if len(c.Endpoints) > 0 {
			who = "the " + c.Metric + " of one of " + strings.Join(c.Endpoints, ", ") + ":"
		}
		s = fmt.Sprintf("%s %s above %s", who, c.Metric, c.Latency)
		if len(c.Endpoints) > 0 {
			s = fmt.Sprintf("%s above %s", who, c.Latency)
		}
	}
	if c.For > 0 {
		s += fmt.Sprintf(", without a break for %s", c.For)
	}
	return s
}
