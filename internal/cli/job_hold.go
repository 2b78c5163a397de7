package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

func newJobHoldCmd(conn *connection) *cobra.Command {
	var sel jobSelection
	cmd := &cobra.Command{
		Use:   "hold ID... | --state S --name N --tenant T",
		Short: "Keep queued jobs from being scheduled until released",
		Long: `hold keeps queued jobs out of scheduling: the scheduler does not consider
them, and their reason is Held ('job list', 'job why') until 'job release'.
Only a queued job can be held. Give IDs, or select jobs as 'job cancel'
does (without --state, the queued ones). It prints each job's outcome and
exits with status 1 if any could not be held.`,
		Example: `  allot job hold train-llama-1k8lhkvh808cr
  allot job hold --name 'sweep-*'`,
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			return actOnJobs(cmd, conn, sel, args, queuedOnly, func(cl *client.Client, id string) (client.Job, error) {
				return cl.Hold(cmd.Context(), id)
			})
		},
	}
	sel.register(cmd, "hold")
	return cmd
}

func newJobReleaseCmd(conn *connection) *cobra.Command {
	var sel jobSelection
	cmd := &cobra.Command{
		Use:   "release ID... | --state S --name N --tenant T",
		Short: "Let held jobs be scheduled again",
		Long: `release undoes 'job hold': the next scheduling cycle considers the jobs
again and gives them their reason. Releasing a job that is not held changes
nothing. It prints each job's outcome and exits with status 1 if any
failed.`,
		Example: `  allot job release train-llama-1k8lhkvh808cr
  allot job release --name 'sweep-*'`,
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			return actOnJobs(cmd, conn, sel, args, queuedOnly, func(cl *client.Client, id string) (client.Job, error) {
				return cl.Release(cmd.Context(), id)
			})
		},
	}
	sel.register(cmd, "release")
	return cmd
}

func newJobRequeueCmd(conn *connection) *cobra.Command {
	var sel jobSelection
	cmd := &cobra.Command{
		Use:   "requeue ID... | --state S --name N --tenant T",
		Short: "Stop running jobs and queue them again, to resume from their checkpoints",
		Long: `requeue stops the attempt of running jobs and queues them again, as Slurm's
scontrol requeue does: their processes get the eviction notice a preemption
gives (SIGTERM, then the job's checkpoint grace, default 30s, to save a
checkpoint), and each job's next attempt resumes from its last checkpoint
wherever the scheduler places it. Neither a retry nor a preemption is
counted. The job is Preempted while its processes stop, then Queued, reason
Requeued.

An operator empties a node before maintenance with 'allot node drain NAME
--reason R --requeue' (or drain, then requeue the jobs 'node list' shows on
it); a tenant restarts a job that hangs. Only a Preparing or Running job can
be requeued. Give IDs, or select jobs as 'job cancel' does (without
--state, the running ones). It prints each job's outcome and exits with
status 1 if any could not be requeued.`,
		Example: `  allot job requeue train-llama-1k8lhkvh808cr
  allot job requeue --name 'sweep-*' --tenant research`,
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			return actOnJobs(cmd, conn, sel, args, runningOnly, func(cl *client.Client, id string) (client.Job, error) {
				return cl.Requeue(cmd.Context(), id)
			})
		},
	}
	sel.register(cmd, "requeue")
	return cmd
}

// The states a bulk action's filter selects without --state: the only
// ones the action applies to.
var (
	queuedOnly  = []string{string(model.StateQueued)}
	runningOnly = []string{string(model.StatePreparing), string(model.StateRunning)}
)

// actOnJobs runs a bulk action on the jobs named or selected; a filter
// without --state selects the jobs in the states given (those the action
// applies to).
func actOnJobs(cmd *cobra.Command, conn *connection, sel jobSelection, args []string, states []string,
	act func(*client.Client, string) (client.Job, error)) error {
	cl, f, err := conn.client()
	if err != nil {
		return err
	}
	if len(sel.states) == 0 && sel.any() {
		sel.states = states
	}
	ids, err := sel.ids(cmd, cl, args)
	if err != nil {
		return err
	}
	do := func(id string) (client.Job, error) { return act(cl, id) }
	if len(args) > 0 {
		do = byRefs(cmd.Context(), cl, do)
	}
	return eachJob(cmd, f, ids, len(args) == 1, do)
}

func newJobUpdateCmd(conn *connection) *cobra.Command {
	var priority, begin string
	var nodes, exclude []string
	cmd := &cobra.Command{
		Use:   "update ID... [--priority CLASS[:VALUE]] [--begin T|DATE|DURATION|none] [--node NODE,...|none] [--exclude NODE,...|none]",
		Short: "Change the priority, begin time or nodes of queued jobs",
		Long: `update changes what can change of a queued job: its priority, a class
(spot, standard, reserved) and optionally a value inside it (higher first),
and its begin time, as scontrol update StartTime= does: a time, a date, a
duration from now (6h), or none to let it start as soon as it can; the
only nodes it may run on (placement.nodes); and the nodes it must not run
on (placement.exclude_nodes, as scontrol update ExcNodeList=). A list
replaces the one the job had; none removes it. The next scheduling
cycle orders the queue by the priority; a begin time later than now keeps
the job Queued until then (reason BeginTime). A job waiting to be retried
is queued too: exclude the node its attempts failed on ('allot job why'
names it) to keep the retry off it for sure. A job that has started keeps
them all: changing them is refused (Conflict), as its placement and any
preemption were decided by them. It prints each job's outcome and
exits with status 1 if any failed (status 2 for one job the server refused).`,
		Example: `  allot job update train-llama-1k8lhkvh808cr --priority standard:50
  allot job update j-1 j-2 --priority spot
  allot job update nightly-1k8lhkvh808cr --begin 2026-12-24T02:00:00Z
  allot job update nightly-1k8lhkvh808cr --begin none
  allot job update train-llama-1k8lhkvh808cr --exclude eastus-h100-03,eastus-h100-04`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			var u client.JobUpdate
			u.Priority = priority
			if cmd.Flags().Changed("begin") {
				t, err := beginTime(begin, time.Now())
				if err != nil {
					return Usage(err)
				}
				u.Begin = &t
			}
			u.Nodes = nodesFlag(cmd, "node", nodes)
			u.ExcludeNodes = nodesFlag(cmd, "exclude", exclude)
			if u.Priority == "" && u.Begin == nil && u.Nodes == nil && u.ExcludeNodes == nil {
				return Usage(fmt.Errorf("--priority, --begin, --node or --exclude: say what to change (priority: spot, standard, reserved, optionally :VALUE)"))
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			return eachJob(cmd, f, args, len(args) == 1, func(id string) (client.Job, error) {
				return cl.UpdateJob(cmd.Context(), id, u)
			})
		},
	}
	cmd.Flags().StringVar(&priority, "priority", "", "the new priority: spot, standard or reserved, optionally :VALUE")
	cmd.Flags().StringVar(&begin, "begin", "", "the new begin time: a time (2026-12-24T02:00:00Z), a date, a duration from now (6h), or none")
	cmd.Flags().StringSliceVar(&nodes, "node", nil, "the only nodes the job may run on, replacing those it had (a list, or none)")
	cmd.Flags().StringSliceVar(&exclude, "exclude", nil, "the nodes the job must not run on, replacing those it had (a list, or none)")
	return cmd
}

// nodesFlag is the list of nodes flag name gives, nil when it was not
// given, empty for none.
func nodesFlag(cmd *cobra.Command, name string, list []string) *[]string {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	nodes := []string{}
	if len(list) != 1 || strings.TrimSpace(list[0]) != "none" {
		nodes = list
	}
	return &nodes
}

// beginTime reads a --begin as parseWhen does, "none" as no begin time
// (""); the answer is RFC 3339.
func beginTime(s string, now time.Time) (string, error) {
	if strings.TrimSpace(s) == "none" {
		return "", nil
	}
	t, err := parseWhen("--begin", s, now)
	if err != nil || t.IsZero() {
		return "", err
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}
