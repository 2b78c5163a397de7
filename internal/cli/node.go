package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newNodeCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("node", "See the fleet's nodes and what runs on them (admin)",
		`node shows the machines of the fleet: where each sits (region, cluster,
InfiniBand leaf, rack), its health, its free GPU capacity and its jobs.
Nodes are admin-only: a tenant token gets Forbidden.`, conn)
	cmd.AddCommand(newNodeListCmd(conn))
	return cmd
}

func newNodeListCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List nodes with health, free GPUs and jobs",
		Long: `list shows every node: SKU, region, cluster, leaf and rack, health (Ready,
NotReady, ...), GPUs and GPU model, free GPUs (fractions when jobs share a
GPU), and the IDs of the jobs on it.`,
		Example: `  allot node list
  allot node list -o json | jq '.nodes[] | select(.health != "Ready") | .name'`,
		Aliases: []string{"ls"},
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fetchAndList(cmd, conn, "nodes", (*client.Client).Nodes, func(nodes []client.Node) printer {
				t := table{header: []string{"NAME", "SKU", "REGION", "CLUSTER", "LEAF", "RACK", "HEALTH", "GPUS", "FREE", "JOBS"}}
				for _, n := range nodes {
					t.add(n.Name, n.SKU, n.Region, orDash(n.Cluster), orDash(n.Leaf), orDash(n.Rack), n.Health,
						strconv.Itoa(n.GPUs)+" "+n.GPUModel, gpus(float64(n.FreeGPUMilli)/1000), orDash(strings.Join(n.Jobs, ",")))
				}
				return t
			})
		},
	}
}
