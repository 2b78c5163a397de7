package cli

import (
	"encoding/csv"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newCostCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("cost", "What work cost, by tenant, region, SKU or job, and budgets",
		`cost reports what the fleet's work cost at the prices of how it ran
(docs/cost.md): every running second of a job's attempts, endpoint replicas
and instances accrues to its tenant the node's price per hour in its region
times the share of the node the instance holds (GPUs held over the node's
GPUs; a quarter of a GPU pays a quarter of one GPU's price). Work inside a
reservation pays the reserved rate (1- or 3-year by the reservation's
length), spot-class work the spot price (a floor that rises with the
region's GPU utilisation), anything else on-demand. The price of each
attempt is fixed when it starts, so a report does not change when prices
do. Prices per SKU and region come from the fleet file (prices:, or the
SKU's catalog rates). Tenants may have a monthly budget (tenants file
budget:): alerts at 80 % and 100 %, and with hard_stop new work outside
reservations is refused with BudgetExceeded once it is spent.`, conn)
	cmd.AddCommand(newCostReportCmd(conn))
	return cmd
}

func newCostReportCmd(conn *connection) *cobra.Command {
	var q client.CostQuery
	cmd := &cobra.Command{
		Use:   "report [--tenant T] [--since 30d] [--until TIME] [--by tenant|region|sku|job] [-o table|json|yaml|csv]",
		Short: "Cost over a period, grouped by tenant, region, SKU or job, with budgets",
		Long: `report adds up what work cost over a period from the job records: for
every attempt, the part of its run inside the period times the rate fixed
when it started. --by tenant (the default) sums each tenant, --by region
and --by sku the nodes the work ran on, --by job lists each job. Columns
split the cost by how it ran: on-demand, reserved and spot. --since and
--until take a time (RFC 3339), a date or a duration back from now (30d,
12h); the default is the last 30 days. Amounts are USD to the cent. -o csv
writes the rows alone, as CSV, for a spreadsheet.

Below the rows come the reservations whose windows overlap the period: the
GPU-hours each bought in it (up to now) at its reserved rate, COMMITTED, of
which work naming it USED (in the rows above) and the rest IDLE (in no row:
a reservation is paid for whether used or not). Then the budgets of the
tenants you see: this month's cost (UTC calendar month) against the budget,
the highest alert reached (80 or 100 %) and whether new work is stopped; -o
json adds the month's budget alerts with when each was reached. A tenant token sees only its own cost
and budget; an admin token sees every tenant.`,
		Example: `  allot cost report
  allot cost report --by job --since 7d
  allot cost report --by region -o json | jq '.rows[] | {region, usd}'
  allot cost report --tenant acme --since 2026-11-01 --until 2026-12-01 -o csv > acme-nov.csv`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			csvOut := conn.output == "csv"
			if csvOut {
				conn.output = string(formatTable)
			}
			switch q.By {
			case "tenant", "region", "sku", "job":
			default:
				return Usage(fmt.Errorf("--by %q: want tenant, region, sku or job", q.By))
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			rep, err := cl.Cost(cmd.Context(), q)
			if err != nil {
				return fromAPI(err)
			}
			header, key := costColumns(rep.By)
			header = append(header, "ATTEMPTS", "GPU-HOURS", "CPU-HOURS", "ON-DEMAND", "RESERVED", "SPOT", "USD")
			row := func(r client.CostRow) []string {
				money := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
				return append(key(r), strconv.Itoa(r.Attempts), strconv.FormatFloat(r.GPUHours, 'f', 2, 64),
					strconv.FormatFloat(r.CPUHours, 'f', 2, 64), money(r.OnDemandUSD), money(r.ReservedUSD), money(r.SpotUSD), money(r.USD))
			}
			if csvOut {
				w := csv.NewWriter(cmd.OutOrStdout())
				_ = w.Write(header)
				for _, r := range rep.Rows {
					_ = w.Write(row(r))
				}
				w.Flush()
				return w.Error()
			}
			return show(cmd.OutOrStdout(), f, rep, func() printer {
				fmt.Fprintf(cmd.ErrOrStderr(), "Cost from %s to %s: $%.2f\n", timestamp(client.Time{Time: rep.Since}),
					timestamp(client.Time{Time: rep.Until}), rep.USD)
				t := table{header: header}
				for _, r := range rep.Rows {
					t.add(row(r)...)
				}
				out := sections{t}
				if len(rep.Reservations) > 0 {
					// The idle part of a commitment is in no row above.
					r := table{header: []string{"RESERVATION", "OWNER", "SKU", "REGION", "BOUGHT GPU-H", "USED GPU-H", "COMMITTED", "USED", "IDLE"}}
					for _, x := range rep.Reservations {
						r.add(x.Name, x.Owner, x.SKU, x.Region, fmt.Sprintf("%.2f", x.BoughtGPUHours), fmt.Sprintf("%.2f", x.UsedGPUHours),
							fmt.Sprintf("%.2f", x.CommittedUSD), fmt.Sprintf("%.2f", x.UsedUSD), fmt.Sprintf("%.2f", x.IdleUSD))
					}
					out = append(out, r)
				}
				if len(rep.Budgets) == 0 {
					return out
				}
				b := table{header: []string{"BUDGET", "MONTH", "SPENT", "USD/MONTH", "USED", "ALERT", "NEW WORK"}}
				for _, x := range rep.Budgets {
					alert, work := "-", "allowed"
					if x.Alert > 0 {
						alert = strconv.Itoa(x.Alert) + "%"
					}
					if x.HardStop && x.Alert >= 100 {
						work = "stopped (BudgetExceeded)"
					}
					b.add(x.Tenant, x.Month.Format("2006-01"), fmt.Sprintf("%.2f", x.SpentUSD), fmt.Sprintf("%.2f", x.USDPerMonth),
						fmt.Sprintf("%.1f%%", x.Percent), alert, work)
				}
				return append(out, b)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&q.Tenant, "tenant", "", "only this tenant's work")
	fl.StringVar(&q.Since, "since", "", "start of the period: a time, a date or a duration back from now (default 30d)")
	fl.StringVar(&q.Until, "until", "", "end of the period (default now)")
	fl.StringVar(&q.By, "by", "tenant", "group by tenant, region, sku or job")
	_ = cmd.RegisterFlagCompletionFunc("by", cobra.FixedCompletions([]string{"tenant", "region", "sku", "job"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// costColumns are the leading columns of a cost report grouped by by, and
// the cells of a row in them.
func costColumns(by string) ([]string, func(client.CostRow) []string) {
	switch by {
	case "region":
		return []string{"REGION"}, func(r client.CostRow) []string { return []string{orDash(r.Region)} }
	case "sku":
		return []string{"SKU"}, func(r client.CostRow) []string { return []string{orDash(r.SKU)} }
	case "job":
		return []string{"JOB", "NAME", "TENANT"}, func(r client.CostRow) []string { return []string{r.Job, r.Name, r.Tenant} }
	}
	return []string{"TENANT"}, func(r client.CostRow) []string { return []string{r.Tenant} }
}
