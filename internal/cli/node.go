package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

func newNodeCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("node", "See the fleet's nodes and what runs on them; drain and resume them (admin)",
		`node shows the machines of the fleet: where each sits (region, cluster,
InfiniBand leaf, rack), its health, its free GPU capacity and its jobs, and
takes a node out of service and back (drain, resume). Nodes are
admin-only: a tenant token gets Forbidden.`, conn)
	cmd.AddCommand(newNodeListCmd(conn), newNodeShowCmd(conn), newNodeDrainCmd(conn), newNodeResumeCmd(conn))
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
	var requeue bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "drain NAME --reason TEXT [--requeue] [--wait D]",
		Short: "Take a node out of service: its work runs on, nothing new is placed there",
		Long: `drain marks a node Draining, as Slurm's drain or kubectl cordon do: the jobs
on it run to their end, and the scheduler places nothing new there until
'allot node resume'. --requeue also empties it, as kubectl drain evicts: each
job on it is requeued ('allot job requeue'): its processes get SIGTERM and
their checkpoint grace, and the job resumes from its last checkpoint on
other nodes. --wait D then waits, at most D, until the node holds no job and
every requeued job's processes stopped, so that the host may be rebooted
(exit status 1 when they have not by then). The reason is required; 'allot
node list' shows it, and the audit log records who drained the node and why.
The drain is kept in the store: it survives restarts of the server and of
the node's agent. Draining a drained node replaces its reason.

The server drains a node itself (by "server") when attempts of several jobs,
of two tenants or more, failed there and on no other node: see 'allot
server --help' (--drain-after-failures).`,
		Example: `  allot node drain eastus-h100-03 --reason "GPU 5 XID 79, RMA ticket 4411"
  allot node drain eastus-h100-03 --reason "firmware 550.54" --requeue --wait 10m && ssh eastus-h100-03 sudo reboot
  allot node list | grep Draining`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wait < 0 {
				return Usage(fmt.Errorf("--wait %s: want a duration, e.g. 10m", wait))
			}
			if !requeue && wait == 0 {
				drain := func(cl *client.Client, ctx context.Context) (client.Node, error) {
					return cl.DrainNode(ctx, args[0], reason)
				}
				return fetchAndShow(cmd, conn, drain, nodeRow)
			}
			return drainAndRequeue(cmd, conn, args[0], reason, requeue, wait)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the node is drained, one line (required)")
	cmd.Flags().BoolVar(&requeue, "requeue", false, "also requeue every job on the node, to resume from its checkpoint elsewhere")
	cmd.Flags().DurationVar(&wait, "wait", 0, "then wait this long at most for the node to hold no job and requeued jobs to stop (0: do not wait)")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

// drainAndRequeue drains node and, with requeue, requeues the jobs on it:
// it prints the node, then one line per job, and fails with exit status 1
// when a job could not be requeued. The drain comes first, so that nothing
// new lands on the node meanwhile. With wait it then waits until the node
// is empty (waitEmpty).
func drainAndRequeue(cmd *cobra.Command, conn *connection, node, reason string, requeue bool, wait time.Duration) error {
	cl, f, err := conn.client()
	if err != nil {
		return err
	}
	n, err := cl.DrainNode(cmd.Context(), node, reason)
	if err != nil {
		return fromAPI(err)
	}
	outs := []outcome{}
	failed := 0
	var requeued []string
	for _, id := range n.Jobs {
		if !requeue {
			break
		}
		j, err := cl.Requeue(cmd.Context(), id)
		if err != nil {
			failed++
			outs = append(outs, outcome{ID: id, Error: err.Error()})
			continue
		}
		requeued = append(requeued, j.ID)
		outs = append(outs, outcome{ID: j.ID, Name: j.Name, State: j.State})
	}
	err = show(cmd.OutOrStdout(), f, struct {
		Node client.Node `json:"node"`
		Jobs []outcome   `json:"jobs"`
	}{n, outs}, func() printer {
		if len(outs) == 0 {
			return nodeRow(n)
		}
		t := table{header: []string{"ID", "NAME", "STATE", "ERROR"}}
		for _, o := range outs {
			t.add(o.ID, orDash(o.Name), orDash(o.State), orDash(o.Error))
		}
		return sections{nodeRow(n), t}
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		return exitError{code: ExitFailure, err: fmt.Errorf("%s drained; %d of %d jobs on it could not be requeued", node, failed, len(outs))}
	}
	if wait > 0 {
		return waitEmpty(cmd.Context(), cl, node, requeued, wait, cmd.ErrOrStderr())
	}
	return nil
}

// waitEmpty waits, at most limit, until node holds no job and none of the
// requeued jobs is still stopping (Preempted), saying on log what it waits
// for whenever that changes.
func waitEmpty(ctx context.Context, cl *client.Client, node string, requeued []string, limit time.Duration, log io.Writer) error {
	deadline := time.Now().Add(limit)
	last := ""
	for {
		d, err := cl.GetNode(ctx, node)
		if err != nil {
			return fromAPI(err)
		}
		waiting := d.Jobs
		for _, id := range requeued {
			j, err := cl.GetJob(ctx, id)
			if err != nil {
				return fromAPI(err)
			}
			if j.State == string(model.StatePreempted) {
				waiting = append(waiting, id+" (stopping)")
			}
		}
		if len(waiting) == 0 {
			fmt.Fprintf(log, "%s: empty\n", node)
			return nil
		}
		if line := strings.Join(waiting, ", "); line != last {
			last = line
			fmt.Fprintf(log, "%s: waiting for %s\n", node, line)
		}
		if !time.Now().Before(deadline) {
			return exitError{code: ExitFailure, err: fmt.Errorf("%s is not empty after %s: %s", node, limit, last)}
		}
		select {
		case <-ctx.Done():
			return errInterrupted
		case <-time.After(min(jobPoll, time.Until(deadline))):
		}
	}
}

func newNodeResumeCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "resume NAME",
		Short: "Put a drained node back in service",
		Long: `resume ends a node's drain, an administrator's or the server's own: the
scheduler places work on it again (a node whose agent is away stays NotReady
until it is back), and the jobs that failed there before no longer count
toward draining it again. A node that is not drained is left as it is.`,
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

func newNodeShowCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Describe one node: its health, drain, agent and what runs on each GPU",
		Long: `show describes a node, as kubectl describe node does: where it sits (SKU,
region, cluster, leaf, rack), its health and since when, its drain, the
reservation that holds it (or keeps it for its start), the address its
agent registered and its last heartbeat (as the leader saw it),
then one line per GPU: its UUID and memory as the agent found them, how
much of it is held, and by which jobs ('allot job show JOB' says more);
last, the latest attempts that failed there (at most 5): those the leader
saw, and, from before it led, those of jobs that have not ended or ended in
the last 10 minutes (read back from the stored jobs).`,
		Example: `  allot node show eastus-h100-03
  allot node show eastus-t4x4-01 -o json | jq '.gpu_list[] | select(.used_milli > 0)'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := func(cl *client.Client, ctx context.Context) (client.NodeDetail, error) {
				return cl.GetNode(ctx, args[0])
			}
			return fetchAndShow(cmd, conn, get, func(d client.NodeDetail) printer { return nodeSections(d, time.Now()) })
		},
	}
}

// nodeSections is what node show prints: the node's fields, then its GPUs.
func nodeSections(d client.NodeDetail, now time.Time) printer {
	var f fields
	f.add("Name", d.Name)
	f.add("SKU", fmt.Sprintf("%s (%d %s)", d.SKU, d.GPUs, d.GPUModel))
	f.add("Where", fmt.Sprintf("region %s, cluster %s, leaf %s, rack %s", d.Region, orDash(d.Cluster), orDash(d.Leaf), orDash(d.Rack)))
	health := d.Health
	if d.HealthSince != nil {
		health += " since " + d.HealthSince.UTC().Format(time.RFC3339)
	}
	f.add("Health", health)
	if dr := d.Drain; dr != nil {
		f.add("Drained", fmt.Sprintf("%s (%s, %s)", dr.Reason, dr.By, dr.At.UTC().Format(time.RFC3339)))
	}
	switch {
	case d.Reservation != "" && d.ReservationAhead:
		f.add("Reserved", d.Reservation+" (kept for its start)")
	case d.Reservation != "":
		f.add("Reserved", d.Reservation)
	}
	f.add("Agent", orDash(d.Address))
	beat := "-"
	if d.LastHeartbeat != nil {
		beat = fmt.Sprintf("%s (%s ago)", d.LastHeartbeat.UTC().Format(time.RFC3339), now.Sub(*d.LastHeartbeat).Round(time.Second))
	}
	f.add("Last heartbeat", beat)
	f.add("Free", gpus(float64(d.FreeGPUMilli)/1000)+" GPUs")
	if len(d.Images) > 0 {
		f.add("Images", strings.Join(d.Images, ", "))
	}
	f.add("Jobs", orDash(strings.Join(d.Jobs, ", ")))
	if len(d.FailedAttempts) == 0 {
		f.add("Failures", "none known")
	}
	var failures []string
	for _, x := range d.FailedAttempts {
		failures = append(failures, fmt.Sprintf("%s %s #%d exit %d (%s ago): %s", x.At.UTC().Format(time.RFC3339), x.Job,
			x.Attempt, x.ExitCode, now.Sub(x.At).Round(time.Second), x.Detail))
	}
	f.addLines("Failures", failures)
	t := table{header: []string{"GPU", "MODEL", "UUID", "MEMORY", "USED", "JOBS"}}
	for _, g := range d.GPUList {
		mem := "-"
		if g.MemoryMiB > 0 {
			mem = fmt.Sprintf("%d MiB", g.MemoryMiB)
		}
		t.add(strconv.Itoa(g.Index), g.Model, orDash(g.UUID), mem, gpus(float64(g.UsedMilli)/1000), orDash(strings.Join(g.Jobs, ",")))
	}
	return sections{f, t}
}
