package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func quotaRequestTable(rs []client.QuotaRequest) table {
	t := table{header: []string{"ID", "TENANT", "REGION", "SERIES", "NOW", "WANTED", "STATE", "CREATED", "BY", "DECIDED BY", "REASON", "NOTE"}}
	for _, r := range rs {
		now := "-"
		if r.CurrentGPUs != nil {
			now = strconv.Itoa(*r.CurrentGPUs)
		}
		t.add(r.ID, r.Tenant, r.Region, r.Series, now, strconv.Itoa(r.GPUs), r.State, r.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"),
			r.CreatedBy, orDash(r.DecidedBy), r.Reason, orDash(r.Note))
	}
	return t
}

func newQuotaRequestCmd(conn *connection) *cobra.Command {
	var r client.QuotaRequestNew
	cmd := &cobra.Command{
		Use:   "request --region R --series S --gpus N --reason TEXT",
		Short: "Ask an administrator for a different quota",
		Long: `request asks for a quota of --gpus GPUs of SKU series --series (ND, NC, …;
see 'allot sku list') in --region. --gpus is the quota wanted: the new total
the tenant may hold at once there, not an increase over today's. --reason
says why, for the administrator who decides (at most 500 bytes).

The request waits, pending, until an administrator approves it (the quota
becomes --gpus at once and stays so across restarts) or denies it; a tenant
cannot decide its own. The request, and its approval or denial, are
recorded in the audit log. A tenant token asks for its own tenant; an admin
token must name --tenant. Unknown regions or series, and negative counts,
are refused with the field at fault (exit status 2).`,
		Example: `  allot quota request --region eastus --series ND --gpus 32 \
      --reason "pretraining run in January needs 4 nodes"
  allot quota requests --state pending`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usage(fmt.Errorf("quota request takes flags, not %q; to list requests: allot quota requests", args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			out, err := cl.RequestQuota(cmd.Context(), r)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, out, func() printer { return quotaRequestTable([]client.QuotaRequest{out}) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&r.Region, "region", "", "region, e.g. eastus (required)")
	fl.StringVar(&r.Series, "series", "", "SKU series, e.g. ND or NC (required)")
	fl.IntVar(&r.GPUs, "gpus", 0, "the quota wanted, in GPUs: the new total, not an increase (required)")
	fl.StringVar(&r.Reason, "reason", "", "why the tenant needs it (required)")
	fl.StringVar(&r.Tenant, "tenant", "", "tenant to ask for (admin token only; a tenant token asks for itself)")
	for _, name := range []string{"region", "series", "gpus", "reason"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func newQuotaRequestsCmd(conn *connection) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "requests [--state pending|approved|denied]",
		Short: "List quota requests",
		Long: `requests lists quota requests, oldest first: a tenant token sees its own,
an admin token every tenant's. Each shows the quota when it was made (NOW),
the quota wanted, its state, who made and who decided it, the reason and
the note of the decision. --state keeps one state.`,
		Example: `  allot quota requests
  allot quota requests --state pending --token "$ADMIN"
  allot quota requests -o json | jq -r '.quota_requests[] | select(.state == "denied") | .note'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch state {
			case "", "pending", "approved", "denied":
			default:
				return Usage(fmt.Errorf("--state %q: want pending, approved or denied", state))
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			rs, err := cl.QuotaRequests(cmd.Context(), state)
			if err != nil {
				return fromAPI(err)
			}
			if rs == nil {
				rs = []client.QuotaRequest{}
			}
			v := struct {
				QuotaRequests []client.QuotaRequest `json:"quota_requests"`
			}{rs}
			return show(cmd.OutOrStdout(), f, v, func() printer { return quotaRequestTable(rs) })
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only requests in this state: pending, approved or denied")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions([]string{"pending", "approved", "denied"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newQuotaDecideCmd(conn *connection, approve bool) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "approve ID [--reason TEXT]",
		Short: "Approve a pending quota request (admin)",
		Long: `approve grants a pending quota request: the tenant's quota of that series in
that region becomes the GPUs it asked for, at once, and stays so across
restarts. Only an admin token may; a tenant token, even for its own
request, gets Forbidden. The approval is recorded in the audit log ('allot
audit list'), with --reason as its note when given.`,
		Example: `  allot quota requests --state pending
  allot quota approve qr-3f9a0c12de --reason "approved for the January run"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			out, err := cl.DecideQuotaRequest(cmd.Context(), args[0], approve, reason)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, out, func() printer { return quotaRequestTable([]client.QuotaRequest{out}) })
		},
	}
	help := "note recorded with the approval"
	if !approve {
		cmd.Use = "deny ID --reason TEXT"
		cmd.Short = "Deny a pending quota request (admin)"
		cmd.Long = `deny refuses a pending quota request; the quota stays as it is. --reason
says why, for the tenant (required). Only an admin token may; the denial
is recorded in the audit log.`
		cmd.Example = `  allot quota deny qr-3f9a0c12de --reason "eastus ND is sold out until March; ask for westus"`
		help = "why the request is denied (required)"
	}
	cmd.Flags().StringVar(&reason, "reason", "", help)
	if !approve {
		_ = cmd.MarkFlagRequired("reason")
	}
	return cmd
}

func newQuotaSetCmd(conn *connection) *cobra.Command {
	var q client.QuotaSet
	cmd := &cobra.Command{
		Use:   "set --tenant T --region R --series S --gpus N [--reason TEXT]",
		Short: "Set a tenant's quota (admin)",
		Long: `set is the administrator's edit of a quota: tenant --tenant may hold at most
--gpus GPUs of series --series in --region at once (0 forbids that series
there). It replaces the tenants file's quota of that tenant, region and
series, takes effect at once and survives restarts (the file's value
applies again only if the stored one is removed from the store). The edit
is recorded in the audit log with --reason.`,
		Example: `  allot quota set --tenant acme --region eastus --series ND --gpus 24 \
      --reason "contract amendment 7" --token "$ADMIN"
  allot quota usage --region eastus`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			out, err := cl.SetQuota(cmd.Context(), q)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, out, func() printer {
				t := table{header: []string{"TENANT", "REGION", "SERIES", "QUOTA GPUS"}}
				t.add(out.Tenant, out.Region, out.Series, strconv.Itoa(out.GPUs))
				return t
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&q.Tenant, "tenant", "", "tenant (required)")
	fl.StringVar(&q.Region, "region", "", "region, e.g. eastus (required)")
	fl.StringVar(&q.Series, "series", "", "SKU series, e.g. ND or NC (required)")
	fl.IntVar(&q.GPUs, "gpus", 0, "the quota, in GPUs (required)")
	fl.StringVar(&q.Reason, "reason", "", "why, for the audit log")
	for _, name := range []string{"tenant", "region", "series", "gpus"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}
