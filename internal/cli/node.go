package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newNodeCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("node", "See the fleet's nodes and what runs on them; drain and resume them (admin)",
		`node shows the machines of the fleet: where each sits (region, cluster,
InfiniBand leaf, rack), its health, its free GPU capacity and its jobs, and
takes a node out of service and back (drain, resume). Nodes are
admin-only: a tenant token gets Forbidden.`, conn)
	cmd.AddCommand(newNodeListCmd(conn), newNodeDrainCmd(conn), newNodeResumeCmd(conn))
	return cmd
}

func newNodeListCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List nodes with health, free GPUs and jobs",
		Long: `list shows every node: SKU, region, cluster, leaf and rack, health (Ready,
NotReady, Draining), GPUs and GPU model, free GPUs (fractions when jobs share
a GPU), the jobs on it (the first three IDs and how many more: -o json
lists them all), and why it is drained.`,
		Example: `  allot node list
  allot node list -o json | jq '.nodes[] | select(.health != "Ready") | .name'`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fetchAndList(cmd, conn, "nodes", (*client.Client).Nodes, nodeTable)
		},
	}
}

func newNodeDrainCmd(conn *connection) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "drain NAME --reason TEXT",
		Short: "Take a node out of service: its work runs on, nothing new is placed there",
		Long: `drain marks a node Draining, as Slurm's drain or kubectl cordon do: the jobs
on it run to their end (cancel or preempt them to empty it sooner), and the
scheduler places nothing new there until 'allot node resume'. The reason is
required; 'allot node list' shows it, and the audit log records who drained
the node and why. The drain is kept in the store: it survives restarts of
the server and of the node's agent. Draining a drained node replaces its
reason.`,
		Example: `  allot node drain eastus-h100-03 --reason "GPU 5 XID 79, RMA ticket 4411"
  allot node list | grep Draining`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			drain := func(cl *client.Client, ctx context.Context) (client.Node, error) {
				return cl.DrainNode(ctx, args[0], reason)
			}
			return fetchAndShow(cmd, conn, drain, nodeRow)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the node is drained, one line (required)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

func newNodeResumeCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "resume NAME",
		Short: "Put a drained node back in service",
		Long: `resume ends a node's drain: the scheduler places work on it again (a node
whose agent is away stays NotReady until it is back). A node that is not
drained is left as it is.`,
		Example: `  allot node resume eastus-h100-03`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resume := func(cl *client.Client, ctx context.Context) (client.Node, error) { return cl.ResumeNode(ctx, args[0]) }
			return fetchAndShow(cmd, conn, resume, nodeRow)
		},
	}
}

// nodeRow shows one node as list does.
func nodeRow(n client.Node) printer { return nodeTable([]client.Node{n}) }

func nodeTable(nodes []client.Node) printer {
	t := table{header: []string{"NAME", "SKU", "REGION", "CLUSTER", "LEAF", "RACK", "HEALTH", "GPUS", "FREE", "JOBS", "DRAINED"}}
	for _, n := range nodes {
		drained := "-"
		if d := n.Drain; d != nil {
			drained = d.Reason + " (" + d.By + ", " + d.At.UTC().Format(time.RFC3339) + ")"
		}
		t.add(n.Name, n.SKU, n.Region, orDash(n.Cluster), orDash(n.Leaf), orDash(n.Rack), n.Health,
			strconv.Itoa(n.GPUs)+" "+n.GPUModel, gpus(float64(n.FreeGPUMilli)/1000), jobsCell(n.Jobs), drained)
	}
	return t
}

// jobsCell is the JOBS cell of a node: its first three jobs' IDs and how
// many more, so that a node shared by dozens of fractions keeps to a line.
func jobsCell(ids []string) string {
	const shown = 3
	if len(ids) <= shown {
		return orDash(strings.Join(ids, ","))
	}
	return fmt.Sprintf("%s +%d more", strings.Join(ids[:shown], ","), len(ids)-shown)
}
