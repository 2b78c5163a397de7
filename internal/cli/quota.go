package cli

import (
	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newQuotaCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("quota", "See GPUs in use against quotas; request, approve and set quotas",
		`quota shows how many GPUs tenants use against their hard quotas. A job
that alone exceeds a quota is rejected at submit (QuotaExceeded); one that
would exceed it with the tenant's other work waits.

Quotas come from the tenants file at start; after that they change only
through a tenant's request that an administrator approves ('quota
request', 'quota requests', 'quota approve', 'quota deny') or an
administrator's edit ('quota set'). Both are recorded in the audit log
('allot audit list') and survive restarts.`, conn)
	cmd.AddCommand(newQuotaUsageCmd(conn), newQuotaRequestCmd(conn), newQuotaRequestsCmd(conn), newQuotaDecideCmd(conn, true),
		newQuotaDecideCmd(conn, false), newQuotaSetCmd(conn))
	return cmd
}

func newQuotaUsageCmd(conn *connection) *cobra.Command {
	var region string
	cmd := &cobra.Command{
		Use:     "usage [--region R]",
		Aliases: []string{"list"},
		Short:   "Show GPUs in use per tenant and series, against quota",
		Long: `usage shows, for each tenant, region and SKU series, the GPUs its
running jobs hold and its quota there ("-" when no quota applies), in every
region or in --region's alone. A tenant token sees its own usage; an admin
token sees every tenant's.`,
		Example: `  allot quota usage
  allot quota usage --region westus -o yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			usage, err := cl.Usage(cmd.Context(), region)
			if err != nil {
				return fromAPI(err)
			}
			if usage == nil {
				usage = []client.Usage{}
			}
			v := struct {
				Usage []client.Usage `json:"usage"`
			}{usage}
			return show(cmd.OutOrStdout(), f, v, func() printer {
				t := table{header: []string{"TENANT", "REGION", "SERIES", "USED GPUS", "QUOTA GPUS"}}
				for _, u := range usage {
					quota := "-"
					if u.QuotaGPUs != nil {
						quota = gpus(*u.QuotaGPUs)
					}
					t.add(u.Tenant, u.Region, u.Series, gpus(u.UsedGPUs), quota)
				}
				return t
			})
		},
	}
	cmd.Flags().StringVar(&region, "region", "", "only this region, e.g. eastus (default: every region)")
	return cmd
}
