package cli

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newInstanceCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("instance", "Lease whole nodes of a SKU, the way a cloud sells VMs",
		`instance manages instances: leases of whole nodes of one SKU in one region
(every GPU, all CPU and memory of the node), held until deleted. An
instance is a job to the scheduler, so it counts against the tenant's
quotas and partition, runs inside reservations and is preempted exactly
like a job; a spot instance gets an eviction notice (its grace) before its
nodes are taken back. See docs/instances.md.`, conn)
	cmd.Aliases = []string{"instances", "vm"}
	cmd.AddCommand(newInstanceCreateCmd(conn), newInstanceListCmd(conn), newInstanceShowCmd(conn), newInstanceDeleteCmd(conn))
	return cmd
}

func newInstanceCreateCmd(conn *connection) *cobra.Command {
	var req client.InstanceRequest
	var count int
	var grace time.Duration
	var key string
	cmd := &cobra.Command{
		Use:   "create --sku S --region R [--count N] [--priority spot] [--wait] [--name N] [--idempotency-key KEY]",
		Short: "Lease whole nodes of a SKU in a region",
		Long: `create asks for --count whole nodes of SKU --sku in --region and answers
at once with what the scheduler decided:

  Running            placed; the nodes are yours until 'allot instance delete'
  AllocationFailed   the SKU is sold there but nothing is free now; the
                     message names the soonest alternative: another region
                     where it is free now, or the estimated time here
  SkuNotAvailable    the SKU is unknown or not sold in that region
  QuotaExceeded      the nodes would take the tenant past its quota

With --wait a request that cannot be placed now is queued instead (state
Queued) and placed when capacity frees up. --priority spot asks for spot
capacity: cheaper, and evicted when its nodes are needed (a reservation's
owner, higher-priority work), after an eviction notice of --grace during
which 'allot instance show' prints the deadline. Refusals exit with status 2.

A request is sent again when its answer is lost (a dropped connection, a
server failing over), with the same idempotency key, so it never leases
twice. --idempotency-key KEY extends that to runs of create: a script that
may run twice passes a key of its own, and a second run within 24 h prints
the instance the first one leased (or its refusal); the same key with
another request is refused (Conflict).`,
		Example: `  allot instance create --sku ND96-H100x8-IB --region eastus
  allot instance create --sku NC24-A100x1 --region westus --count 2 --priority spot --grace 2m
  allot instance create --sku ND96-H100x8-IB --region westeurope --wait --name big-box
  allot instance create --sku NC24-A100x1 --region westus --idempotency-key "ci-$BUILD_ID"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			req.Count = &count
			if cmd.Flags().Changed("grace") {
				req.Grace = grace.String()
			}
			if key == "" {
				key = client.NewIdempotencyKey()
			}
			out, err := cl.CreateInstanceKeyed(cmd.Context(), key, req)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, out, func() printer { return instanceFields(out) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.SKU, "sku", "", "SKU of the nodes, e.g. ND96-H100x8-IB (required; see 'allot sku list')")
	fl.StringVar(&req.Region, "region", "", "region of the nodes, e.g. eastus (required)")
	fl.IntVar(&count, "count", 1, "number of nodes, placed all or none")
	fl.StringVar(&req.Priority, "priority", "standard", "spot, standard or reserved")
	fl.DurationVar(&grace, "grace", 30*time.Second, "eviction notice: how long the instance keeps its nodes once told it is evicted")
	fl.BoolVar(&req.Wait, "wait", false, "queue the instance when nothing is free now instead of refusing it")
	fl.StringVar(&req.Name, "name", "", "name of the instance (default SKU-REGION)")
	fl.StringVar(&req.Tenant, "tenant", "", "tenant the instance is for (required with an admin token)")
	fl.StringVar(&key, "idempotency-key", "", "key that makes a repeat of this request within 24 h lease nothing more (default: a random key per run)")
	for _, name := range []string{"sku", "region"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func newInstanceListCmd(conn *connection) *cobra.Command {
	var tenant string
	var all bool
	cmd := &cobra.Command{
		Use:   "list [--tenant T] [--all]",
		Short: "List instances",
		Long: `list shows the instances the token may see (a tenant's own, or everyone's
for an admin), newest first, with their SKU, region, node count, state and
nodes. Deleted and refused instances are left out unless --all.`,
		Example: `  allot instance list
  allot instance list --all -o json | jq -r '.instances[] | .id + " " + .state'`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list := func(cl *client.Client, ctx context.Context) ([]client.Instance, error) {
				return cl.Instances(ctx, tenant, all)
			}
			return fetchAndList(cmd, conn, "instances", list, func(is []client.Instance) printer { return instanceTable(is) })
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's instances")
	cmd.Flags().BoolVar(&all, "all", false, "include deleted and refused instances")
	return cmd
}

func newInstanceShowCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID|NAME",
		Short: "Show one instance: its state, reason, nodes and any eviction deadline",
		Long: `show prints an instance: its SKU, region and node count, its state and the
reason for it, the nodes it holds, and, while it is being evicted
(Preempted), the deadline of its eviction notice. An evicted instance waits
(Queued) until it can be placed again, or until it is deleted. An instance
not ended also answers to its --name while no other of yours has it.`,
		Example: `  allot instance show nd96-h100x8-ib-eastus-1k2m3n4p5q7x3z
  allot instance show big-box
  allot instance show ID -o json | jq -r .eviction_deadline`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := func(cl *client.Client, ctx context.Context) (client.Instance, error) {
				return cl.Instance(ctx, args[0])
			}
			return fetchAndShow(cmd, conn, get, func(i client.Instance) printer { return instanceFields(i) })
		},
	}
}

func newInstanceDeleteCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID|NAME",
		Short: "Delete an instance and free its nodes",
		Long: `delete ends an instance: its nodes are free for the next scheduling cycle
(where agents run it, its processes get the instance's grace to stop).
Only its tenant or an admin may delete it; deleting one that already ended
is a Conflict (exit status 2). An instance not ended also answers to its
--name while no other of yours has it (two of one name: give the ID).`,
		Example: `  allot instance delete nd96-h100x8-ib-eastus-1k2m3n4p5q7x3z
  allot instance delete big-box`,
		Aliases: []string{"rm"},
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := func(cl *client.Client, ctx context.Context) (client.Instance, error) {
				return cl.DeleteInstance(ctx, args[0])
			}
			return fetchAndShow(cmd, conn, get, func(i client.Instance) printer { return instanceFields(i) })
		},
	}
}

func instanceTable(is []client.Instance) table {
	t := table{header: []string{"ID", "TENANT", "SKU", "REGION", "COUNT", "PRIORITY", "STATE", "REASON", "NODES"}}
	for _, i := range is {
		t.add(i.ID, i.Tenant, i.SKU, i.Region, strconv.Itoa(i.Count), i.Priority, i.State, orDash(i.Reason),
			orDash(strings.Join(i.Nodes, ",")))
	}
	return t
}

func instanceFields(i client.Instance) fields {
	var f fields
	f.add("ID", i.ID)
	f.add("Name", i.Name)
	f.add("Tenant", i.Tenant)
	f.add("SKU", i.SKU)
	f.add("Region", i.Region)
	f.add("Count", strconv.Itoa(i.Count))
	f.add("Priority", i.Priority)
	f.add("State", i.State)
	f.add("Reason", orDash(i.Reason))
	f.add("Detail", orDash(i.Detail))
	f.add("Nodes", orDash(strings.Join(i.Nodes, ",")))
	f.add("Grace", i.Grace)
	if !i.EvictionDeadline.IsZero() {
		f.add("Eviction deadline", timestamp(i.EvictionDeadline))
	}
	f.add("Evictions", strconv.Itoa(i.Evictions))
	f.add("Created", timestamp(i.CreatedAt))
	f.add("Started", timestamp(i.StartedAt))
	f.add("Ended", timestamp(i.EndedAt))
	return f
}
