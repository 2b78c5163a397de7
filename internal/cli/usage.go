package cli

import (
	"encoding/csv"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newUsageCmd() *cobra.Command {
	conn := &connection{}
	var q client.AccountingQuery
	cmd := &cobra.Command{
		Use:   "usage [--tenant T] [--since 30d] [--until TIME] [--by job|tenant] [-o table|json|yaml|csv]",
		Short: "GPU-hours per tenant or job over a period (the sacct view)",
		Long: `usage adds up the GPU time jobs held over a period, from the job records:
every attempt's running time (from its start to its end, or to now while it
runs) inside the period, times the GPUs the job holds; a quarter of a GPU
counts a quarter. --by tenant (the default) sums each tenant's jobs; --by
job lists each job. --since and --until take a time (RFC 3339), a date or a
duration back from now (30d, 12h); the default is the last 30 days. A
tenant token sees only its own jobs. 'allot quota usage' shows the GPUs in
use now against quotas instead.` + "\n" + connectionHelp,
		Example: `  allot usage
  allot usage --since 7d --by job
  allot usage --tenant acme --since 2026-11-01 --until 2026-12-01 -o csv > acme-nov.csv`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			csvOut := conn.output == "csv"
			if csvOut {
				conn.output = string(formatTable)
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			if q.By != "" && q.By != "job" && q.By != "tenant" {
				return Usage(fmt.Errorf("--by %q: want job or tenant", q.By))
			}
			a, err := cl.Accounting(cmd.Context(), q)
			if err != nil {
				return fromAPI(err)
			}
			if a.Rows == nil {
				a.Rows = []client.AccountingRow{}
			}
			byJob := a.By == "job"
			header := []string{"TENANT", "JOBS", "ATTEMPTS", "GPU-HOURS"}
			if byJob {
				header = []string{"JOB", "NAME", "TENANT", "STATE", "ATTEMPTS", "GPU-HOURS"}
			}
			row := func(r client.AccountingRow) []string {
				h := strconv.FormatFloat(r.GPUHours, 'f', 2, 64)
				if byJob {
					return []string{r.Job, r.Name, r.Tenant, r.State, strconv.Itoa(r.Attempts), h}
				}
				return []string{r.Tenant, strconv.Itoa(r.Jobs), strconv.Itoa(r.Attempts), h}
			}
			if csvOut {
				w := csv.NewWriter(cmd.OutOrStdout())
				_ = w.Write(header)
				for _, r := range a.Rows {
					c := row(r)
					c[len(c)-1] = strconv.FormatFloat(r.GPUHours, 'f', -1, 64)
					_ = w.Write(c)
				}
				w.Flush()
				return w.Error()
			}
			return show(cmd.OutOrStdout(), f, a, func() printer {
				fmt.Fprintf(cmd.ErrOrStderr(), "GPU-hours from %s to %s: %.2f\n", timestamp(a.Since), timestamp(a.Until), a.GPUHours)
				t := table{header: header}
				for _, r := range a.Rows {
					t.add(row(r)...)
				}
				return t
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&conn.server, "server", "", "API server URL (default $ALLOT_SERVER, the config file's server:, else "+DefaultServer+")")
	fl.StringVar(&conn.token, "token", "", "API token (default $ALLOT_TOKEN, else the config file's token:)")
	fl.StringVarP(&conn.output, "output", "o", "table", "output format: table, json, yaml or csv")
	fl.StringVar(&q.Tenant, "tenant", "", "only this tenant's jobs")
	fl.StringVar(&q.Since, "since", "", "start of the period: a time, a date or a duration back from now (default 30d)")
	fl.StringVar(&q.Until, "until", "", "end of the period (default now)")
	fl.StringVar(&q.By, "by", "tenant", "group by job or tenant")
	_ = cmd.RegisterFlagCompletionFunc("by", cobra.FixedCompletions([]string{"job", "tenant"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
