package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/spec"
)

// The policy commands that talk to a server: apply, list, delete. They
// need the admin token.

// withConnection adds the connection flags of a client group to one
// command of the offline policy group.
func withConnection(cmd *cobra.Command, conn *connection) *cobra.Command {
	fl := cmd.Flags()
	fl.StringVar(&conn.server, "server", "", "API server URL (default $ALLOT_SERVER, the config file's server:, else "+DefaultServer+")")
	fl.StringVar(&conn.token, "token", "", "API token, the admin's (default $ALLOT_TOKEN, else the config file's token:)")
	fl.StringVarP(&conn.output, "output", "o", "table", "output format: table, wide (more columns, e.g. job list's nodes), json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newPolicyApplyCmd() *cobra.Command {
	conn := &connection{}
	var file string
	cmd := &cobra.Command{
		Use:   "apply [-f] FILE",
		Short: "Replace the server's policies with a policies file (admin)",
		Long: `apply checks FILE as 'allot policy validate' does, then sends it to the
server, where it replaces the active policy set whole (a new revision) and is
evaluated from the next scheduling cycle on. A policy left out of FILE stops
applying at once. The server keeps the file's text: 'allot policy list --text'
prints it.`,
		Example: `  allot policy apply -f examples/policies.yaml --token "$ADMIN"`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := os.ReadFile(file)
			if err != nil {
				return Usage(fmt.Errorf("read policies: %w", err))
			}
			if _, err := spec.ParsePolicies(file, data); err != nil {
				return Usage(err)
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			ps, err := cl.ApplyPolicies(cmd.Context(), data)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, ps, func() printer { return policySetView{ps: ps} })
		},
	}
	fileFlag(cmd, &file, "policies file (or give it as the argument)")
	return withConnection(cmd, conn)
}

func newPolicyListCmd() *cobra.Command {
	conn := &connection{}
	var text bool
	cmd := &cobra.Command{
		Use:   "list [--text]",
		Short: "Show the server's policies: firing or not, since when, their values and overrides (admin)",
		Long: `list shows the server's active policy set: its revision, who applied it and
when; for each policy whether it applies now (fires: every condition holds;
cooling down: it applies until its cooldown ends), since when, the value of
each condition at the last cycle, and the jobs whose priority class it
changed in that cycle; then the latest events (fires, clears, stops).
--text prints the policies file as applied instead.`,
		Example: `  allot policy list
  allot policy list --text > policies.yaml
  allot policy list -o json`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			ps, err := cl.Policies(cmd.Context())
			if err != nil {
				return fromAPI(err)
			}
			if text {
				_, err := io.WriteString(cmd.OutOrStdout(), ps.Text)
				return err
			}
			return show(cmd.OutOrStdout(), f, ps, func() printer { return policySetView{ps: ps, events: true} })
		},
	}
	cmd.Flags().BoolVar(&text, "text", false, "print the policies file as applied")
	return withConnection(cmd, conn)
}

func newPolicyDeleteCmd() *cobra.Command {
	conn := &connection{}
	var all bool
	cmd := &cobra.Command{
		Use:   "delete NAME | --all",
		Short: "Remove a policy, or all of them, from the server (admin)",
		Long: `delete removes policy NAME from the server's policy set (the rest of the
applied file, its targets and comments included, is kept), or with --all every
policy. A removed policy stops applying at the next scheduling cycle, cooldown
or not.`,
		Example: `  allot policy delete customer_sla_protection
  allot policy delete --all`,
		Aliases: []string{"rm"},
		Args: func(cmd *cobra.Command, args []string) error {
			if all != (len(args) == 0) || len(args) > 1 {
				return Usage(fmt.Errorf("give one policy NAME or --all"))
			}
			return nil
		},
		ValidArgsFunction: completeWith(conn, func(ctx context.Context, cl *client.Client) ([]string, error) {
			ps, err := cl.Policies(ctx)
			out := make([]string, 0, len(ps.Policies))
			for _, p := range ps.Policies {
				out = append(out, p.Name)
			}
			return out, err
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			var ps client.PolicySet
			if all {
				ps, err = cl.DeletePolicies(cmd.Context())
			} else {
				ps, err = cl.DeletePolicy(cmd.Context(), args[0])
			}
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, ps, func() printer { return policySetView{ps: ps} })
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "remove every policy")
	return withConnection(cmd, conn)
}

// policySetView prints a policy set: a summary line, one row per policy,
// the overrides of the last cycle and, for list, the events.
type policySetView struct {
	ps     client.PolicySet
	events bool
}

func (v policySetView) print(w io.Writer) error {
	ps := v.ps
	if ps.Revision == 0 {
		_, err := fmt.Fprintln(w, "No policies applied.")
		return err
	}
	fmt.Fprintf(w, "Revision %d, applied %s by %s; %d policies; last evaluated %s.\n\n", ps.Revision, timestamp(ps.AppliedAt),
		orDash(ps.AppliedBy), len(ps.Policies), timestamp(ps.EvaluatedAt))
	if len(ps.Policies) == 0 {
		return nil
	}
	t := table{header: []string{"POLICY", "STATE", "SINCE", "CONDITIONS", "OVERRIDES"}}
	var overrides table
	overrides.header = []string{"POLICY", "JOB", "ACTION", "FROM", "TO", "DETAIL"}
	for _, p := range ps.Policies {
		state := "idle"
		switch {
		case p.Firing && p.Held:
			state = "fires"
		case p.Firing:
			state = "cooling down until " + timestamp(p.Until)
		}
		conds := make([]string, len(p.Conditions))
		for i, c := range p.Conditions {
			conds[i] = c.Text
		}
		n := strconv.Itoa(len(p.Overrides))
		if len(p.Ignored) > 0 {
			n += fmt.Sprintf(" (%d ignored)", len(p.Ignored))
		}
		t.add(p.Name, state, timestamp(p.Since), orDash(strings.Join(conds, "; ")), n)
		for _, o := range p.Overrides {
			overrides.add(p.Name, o.Job, o.Action, o.From, o.To, o.Detail)
		}
	}
	if err := t.print(w); err != nil {
		return err
	}
	if len(overrides.rows) > 0 {
		fmt.Fprintln(w)
		if err := overrides.print(w); err != nil {
			return err
		}
	}
	if v.events && len(ps.Events) > 0 {
		ev := table{header: []string{"TIME", "POLICY", "EVENT", "CONDITIONS"}}
		for _, e := range ps.Events {
			ev.add(timestamp(e.At), e.Policy, e.Event, e.Text)
		}
		fmt.Fprintln(w)
		return ev.print(w)
	}
	return nil
}
