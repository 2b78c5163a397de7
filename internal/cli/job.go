package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
)

func newJobCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("job", "Submit, list, explain and cancel jobs",
		`job talks to an allot server about jobs: submit job files, list and show
jobs, ask why a job waits, and cancel it. A tenant token sees only its
tenant's jobs; an admin token sees all of them.`, conn)
	cmd.AddCommand(newJobSubmitCmd(conn), newJobRunCmd(conn), newJobListCmd(conn), newJobShowCmd(conn),
		newJobWhyCmd(conn), newJobCancelCmd(conn), newJobLogsCmd(conn), newJobCheckpointCmd(conn),
		newJobHoldCmd(conn), newJobReleaseCmd(conn), newJobRequeueCmd(conn), newJobUpdateCmd(conn), newJobWaitCmd(conn))
	return cmd
}

func newJobSubmitCmd(conn *connection) *cobra.Command {
	var files []string
	var array, key string
	var sets []string
	var wait waitOption
	cmd := &cobra.Command{
		Use:   "submit [-f] FILE... [--set key=value]... [--array A-B[:STEP]] [--idempotency-key KEY] [--wait]",
		Short: "Submit the jobs in a YAML file",
		Long: `submit reads the jobs in FILE (one or more YAML documents separated by
"---", a list of jobs, JSON, or a directory of such files), checks them
locally, and sends them to the server. It prints the new job's ID, one per
line. Several jobs (several files, a directory, a file of several, an
array) are sent in one request and submitted all or none.

Every problem in the files is reported at once, each with its file, line
and field, before anything is sent, and submit exits with status 2; so does
a job the server rejects (InvalidSpec, or a job that can never run:
SkuNotAvailable, ResidencyForbidden, TopologyUnsatisfiable, QuotaExceeded),
and then no job of the batch is submitted. A job is accepted even when it
cannot start yet: 'allot job why ID' says what it waits for.

--array A-B[:STEP] (or array: in the file) submits each job once per index
of the range, named NAME[IDX], with ALLOT_ARRAY_INDEX=IDX in its
environment; a range is also a list (1,5,9) and holds at most 1000 indices.

A job may list after: [NAME or ID, ...]: the jobs it waits for, by name
within the files submitted with it or by the ID of a job submitted before. Such
a step is Blocked, holding no GPU, until they all succeeded, then queued;
when one fails, is canceled or times out, the step is canceled with reason
PredecessorFailed. Steps that wait for each other in a circle, a step that
waits for itself and a name that is neither a step nor a job ID are refused,
and nothing of the file is submitted.

--wait then follows the jobs until they all ended, as sbatch --wait does
('allot job wait'): their progress on stderr, exit status 0 only when every
one succeeded. --dry-run submits nothing and says, for each job, what would
become of it now, as sbatch --test-only does: refused (the errors a submit
of the file would get), started at once (on which nodes, preempting whom),
or queued with the scheduler's reason and an estimated start (as 'job
why'). The jobs of a file are weighed together, as they would run once
submitted together: two that each fit alone but not both are told so (an
estimated start weighs a job alone). Operator policies are not applied, so
the live cycle may decide otherwise.

--set key=value overrides a field of every job in the file before it is
read; the key is a dotted path as written in the file (priority,
retry.max_retries, env.NAME), or the last part alone where only one
mapping has it (instance_count for resources.instance_count, max_retries),
and the value is read as YAML. Each job names its tenant (or use --set
tenant=NAME).

A submit is sent again when its answer is lost (a dropped connection, a
server failing over, the store briefly unavailable), with the same
idempotency key, so it never makes a job twice. --idempotency-key KEY
extends that to runs of submit: a script that may run twice passes a key
of its own (a build ID, the file's hash), and a second run within 24 h
prints the IDs the first one made; the same key with other jobs is
refused (Conflict).`,
		Example: `  allot job submit -f examples/jobs/train-llama.yaml
  allot job submit -f job.yaml --set priority=spot --set retry.max_retries=5
  ID=$(allot job submit -f job.yaml) && allot job why "$ID"
  allot job submit -f job.yaml -o json     # {"id": "..."}
  allot job submit -f examples/jobs        # every file, all or nothing
  allot job submit prep.yaml train.yaml     # both files, all or nothing
  allot job submit -f sweep.yaml --array 0-99:10   # 10 jobs, sweep[0] … sweep[90]
  allot job submit -f examples/jobs/pipeline.yaml  # pipe-train waits for pipe-prepare
  allot job submit -f job.yaml --idempotency-key "nightly-$(date +%F)"  # at most once a day`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			if array != "" {
				if _, err := model.ParseArray(array); err != nil {
					return Usage(fmt.Errorf("--array: %w", err))
				}
				sets = append(sets, "array="+strconv.Quote(array))
			}
			specs, err := spec.ReadJobFiles(files, sets)
			if err != nil {
				return Usage(err)
			}
			return submitJobs(cmd, cl, f, specs, key, wait)
		},
	}
	filesFlag(cmd, &files, "job file, or a directory of *.yaml, *.yml and *.json job files (repeatable; or give them as arguments)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a field of every job, key=value, e.g. priority=spot (repeatable)")
	cmd.Flags().StringVar(&array, "array", "", "submit each job once per index, A-B[:STEP] or a list (1,5,9), at most 1000")
	cmd.Flags().StringVar(&key, "idempotency-key", "", idempotencyHelp)
	wait.register(cmd)
	return cmd
}

// jobStates are the states a job can be in, for --state and completion.
var jobStates = func() []string {
	out := make([]string, len(model.States))
	for i, s := range model.States {
		out[i] = string(s)
	}
	return out
}()

// completeJobs completes job IDs, described by name and state.
func completeJobs(conn *connection) cobra.CompletionFunc {
	return completeWith(conn, func(ctx context.Context, cl *client.Client) ([]string, error) {
		jobs, err := cl.ListJobs(ctx, client.JobFilter{})
		out := make([]string, 0, len(jobs))
		for _, j := range jobs {
			out = append(out, j.ID+"\t"+j.Name+" "+j.State)
		}
		return out, err
	})
}

func newJobShowCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID|NAME",
		Short: "Show one job: its state, reason, and where it runs",
		Long: `show prints a job: its state and the reason for it, the detail a person
needs to act on the reason, its priority and times, and the GPUs each
instance holds. With -o json or -o yaml it prints the API's Job object,
including the job document as submitted (spec).

A job is named by its ID, or by its name when exactly one job the token
sees has that name (several are listed, to pick one's ID).`,
		Example: `  allot job show j-0001
  allot job show j-0001 -o json | jq -r .state`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := func(cl *client.Client, ctx context.Context) (client.Job, error) { return jobByRef(ctx, cl, args[0]) }
			return fetchAndShow(cmd, conn, get, func(j client.Job) printer { return jobFields(j) })
		},
	}
}

func jobFields(j client.Job) fields {
	var f fields
	f.add("ID", j.ID)
	f.add("Name", j.Name)
	f.add("Tenant", j.Tenant)
	f.add("State", j.State)
	f.add("Reason", orDash(j.Reason))
	f.add("Detail", orDash(j.Detail))
	f.add("Priority", orDash(string(j.Priority)))
	f.add("Submitted", timestamp(j.SubmittedAt))
	f.add("Started", timestamp(j.StartedAt))
	f.add("Ended", timestamp(j.EndedAt))
	f.add("Attempts", strconv.Itoa(int(j.Attempts)))
	f.add("Preemptions", strconv.Itoa(j.Preemptions))
	lists := jobSpecLists(j)
	if e := lists.Elastic; e != nil {
		f.add("Instances", elasticText(j, *e))
		var resized []string
		for _, a := range j.AttemptHistory {
			if a.Reason == server.ReasonResized {
				resized = append(resized, fmt.Sprintf("#%d→#%d %s", a.Number, a.Number+1, a.Detail))
			}
		}
		f.addLines("Resizes", resized)
	}
	if len(lists.After) > 0 {
		after := strings.Join(lists.After, ", ")
		if lists.AfterCond != "" {
			after += " (after_condition: " + lists.AfterCond + ")"
		}
		f.add("After", after)
	}
	if only := lists.Placement.Nodes; len(only) > 0 {
		f.add("Only on", strings.Join(only, ", "))
	}
	if ex := lists.Placement.ExcludeNodes; len(ex) > 0 {
		f.add("Excluded", strings.Join(ex, ", "))
	}
	var pulls []string
	for _, p := range j.Preparing {
		pulls = append(pulls, pullText(p))
	}
	f.addLines("Preparing", pulls)
	if len(j.Allocations) == 0 {
		f.add("Allocations", "-")
	}
	var lines []string
	for _, a := range j.Allocations {
		lines = append(lines, allocationText(a))
	}
	f.addLines("Allocations", lines)
	switch {
	case len(j.CheckpointParts) > 0:
		lines = []string{fmt.Sprintf("%s, every rank's part (%d):", j.CheckpointParts[0].Step, len(j.CheckpointParts))}
		for _, p := range j.CheckpointParts {
			lines = append(lines, fmt.Sprintf("  rank %d: %s%s", p.Rank, p.Path, onNode(p.Node)))
		}
		f.addLines("Checkpoint", lines)
	case j.CheckpointPath != "":
		f.add("Checkpoint", j.CheckpointPath+onNode(j.CheckpointNode))
	}
	lines = lines[:0]
	for _, a := range j.AttemptHistory {
		lines = append(lines, attemptText(a))
	}
	f.addLines("History", lines)
	return f
}

// elasticRange is the elastic block of a job document.
type elasticRange struct {
	Min  int `json:"min_instances"`
	Max  int `json:"max_instances"`
	Step int `json:"step"`
}

// elasticText writes an elastic job's size and range: "4 of 2-6
// (elastic, step 2), resized 3 times".
func elasticText(j client.Job, e elasticRange) string {
	s := fmt.Sprintf("%d of %d-%d (elastic", j.Instances, e.Min, e.Max)
	if e.Step > 1 {
		s += fmt.Sprintf(", step %d", e.Step)
	}
	s += ")"
	switch j.Resizes {
	case 0:
		return s + ", never resized"
	case 1:
		return s + ", resized once"
	}
	return s + fmt.Sprintf(", resized %d times", j.Resizes)
}

// attemptText writes "#2 h100-01,h100-02 Failed exit 3: detail".
func attemptText(a client.Attempt) string {
	s := fmt.Sprintf("#%d %s", a.Number, strings.Join(a.Nodes, ","))
	if a.Reason == "" {
		return s + " running"
	}
	s += " " + a.Reason
	if a.ExitCode != 0 {
		s += fmt.Sprintf(" exit %d", a.ExitCode)
	}
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	return s
}

// pullText writes "pulling IMG, 120 of 340 MB (rank 0 on h100-01)": the
// pull of an instance's image, in MB (10^6 bytes, as registries count),
// with what the agent's runtime could tell of it.
func pullText(p client.Pull) string {
	s := "pulling " + p.Image
	mb := func(n int64) string { return strconv.FormatInt((n+500_000)/1_000_000, 10) }
	switch {
	case p.Total > 0:
		s += ", " + mb(p.Pulled) + " of " + mb(p.Total) + " MB"
	case p.Pulled > 0:
		s += ", " + mb(p.Pulled) + " MB so far"
	}
	return s + fmt.Sprintf(" (rank %d on %s)", p.Rank, p.Node)
}

// allocationText writes "node GPUs 0,1" or "node GPU 3 (250m)" for a fraction.
func allocationText(a client.Allocation) string {
	idx := make([]string, len(a.GPUs))
	for i, g := range a.GPUs {
		idx[i] = strconv.Itoa(g)
	}
	s := a.Node + " GPU"
	if len(a.GPUs) != 1 {
		s += "s"
	}
	s += " " + strings.Join(idx, ",")
	if a.GPUMilli > 0 && a.GPUMilli < 1000 {
		s += fmt.Sprintf(" (%dm each)", a.GPUMilli)
	}
	return s
}

func newJobWhyCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "why ID|NAME",
		Short: "Explain why a job is in its state, and when it may start",
		Long: `why asks the scheduler why a job is where it is: the reason code
(InsufficientCapacity, QuotaExceeded, TopologyUnsatisfiable,
AwaitingPreemption, ReservationNotActive, ...), the detail a person needs to
act on it ("eastus: largest free IB leaf block is 5 nodes, job needs 8"),
and, for a queued job, its estimated start with how it was estimated (the
scheduling core run forward over the ends of running work, reservation
windows and the queue ahead). A job allowed in several regions also gets a
table of them: estimated start, price per GPU-hour, distance from its data
and the score that ranks them; "chosen" marks the region the server placed
it in. With an administrator's token, a job waiting on drained nodes
(NoReadyNodes names the first of them) also gets each drain's reason, who
drained the node and when ("Drained:"); a tenant's token does not (nodes
are the administrator's).

A step of a pipeline (a job with after:) is Blocked, reason
WaitsForPredecessor, while a job it waits for has not succeeded; the detail
names each such job and its state ("waits for prepare-0ldq8e1k2a7c (Running)").
It is queued once they all succeeded, and canceled with reason
PredecessorFailed, naming the step and how it ended, when one did not.

A job is named by its ID, or by its name when exactly one job the token
sees has that name.`,
		Example: `  allot job why j-0001
  allot job why j-0001 -o json
  allot job why train-llama          # the one job of that name`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			w, err := byJobRef(cmd.Context(), cl, args[0], func(id string) (client.Why, error) { return cl.Why(cmd.Context(), id) })
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, w, func() printer { return whyPrinter(w, time.Now()) })
		},
	}
}

// specLists are the lists of a job's spec that 'job show' prints, and an
// elastic job's range.
type specLists struct {
	Elastic   *elasticRange `json:"elastic"`
	After     []string      `json:"after"`
	AfterCond string        `json:"after_condition"`
	Placement struct {
		Nodes        []string `json:"nodes"`
		ExcludeNodes []string `json:"exclude_nodes"`
	} `json:"placement"`
}

// jobSpecLists reads them from j's document (the jobs it waits for, the
// nodes it excludes); empty when it has none.
func jobSpecLists(j client.Job) specLists {
	var d specLists
	if len(j.Spec) > 0 {
		_ = json.Unmarshal(j.Spec, &d) // a document the server wrote; nothing to print if it does not read
	}
	return d
}

// onNode says on whose disk a checkpoint lies, "" when every host reaches
// it.
func onNode(node string) string {
	if node == "" {
		return ""
	}
	return " (on " + node + ")"
}
