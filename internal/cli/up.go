package cli

import (
	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/gateway"
)

func newUpCmd() *cobra.Command {
	f := serveFlags{}
	cmd := &cobra.Command{
		Use:   "up [--data DIR] [--listen ADDR]",
		Short: "Start a local control plane with the example fleet",
		Long: `up starts allot's control plane on this machine with the example fleet and
tenants (examples/fleet.yaml and examples/tenants.yaml; run it from the
repository root, or pass --fleet and --tenants), keeping its state in
--data. Every fleet node gets an in-process agent with virtual GPUs of its
SKU, so a submitted job really runs its command on this machine ('allot
job logs ID' shows its output). The agents keep their state in
DATA/agents/NODE; jobs work in allot-work-HASH/NODE/jobs/NAME under
$TMPDIR (NAME a hash of the job's ID), outside DATA, which is made 0700.
--job-pids, --job-log-mib and --stop-timeout bound each job's processes,
its logs and its grace when up stops, as for 'allot agent'. Run as root,
each job runs under a uid of its own and in a cgroup v2 where the host has
one, so it cannot read the admin token or signal the server; not root,
jobs run as your user and can do both (a warning says so). The first start creates an admin token, prints
it and writes it to DATA/admin-token; later starts say where it is. It
runs a gateway (allot gateway) on --gateway-listen, so that every endpoint
has a URL (GATEWAY/NAME/; 'endpoint create' prints it). It
prints the URL, the dashboard's URL (/ui/) and the commands to try next,
and stops on Ctrl-C or 'allot down' (SIGTERM to the PID it writes to
DATA/allot.pid), after stopping every job (SIGKILL at --stop-timeout at
most, whatever the job's grace).`,
		Example: `  go run ./cmd/allot up
  go run ./cmd/allot up & ... ; go run ./cmd/allot down
  allot up --data /tmp/allot --listen 127.0.0.1:0`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, true)
		},
	}
	f.register(cmd, "./allot-data")
	cmd.Flags().StringVar(&f.gatewayListen, "gateway-listen", "", "address of the in-process gateway that routes callers to endpoints' replicas (allot gateway); none: no gateway (default: the --listen host on the next port, 8081 for the default --listen; a free one when --listen's port is 0)")
	cmd.Flags().DurationVar(&f.gatewayReport, "gateway-report-every", gateway.DefaultReportEvery, "interval of the in-process gateway's reports (tests)")
	_ = cmd.Flags().MarkHidden("gateway-report-every")
	cmd.Flags().StringVar(&f.agents, "agents", "virtual", "node layer: virtual (in-process agents with virtual GPUs: submitted jobs run their commands), external or simulated")
	return cmd
}
