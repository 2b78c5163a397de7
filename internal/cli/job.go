package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

func newJobCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("job", "Submit, list, explain and cancel jobs",
		`job talks to an allot server about jobs: submit job files, list and show
jobs, ask why a job waits, and cancel it. A tenant token sees only its
tenant's jobs; an admin token sees all of them.`, conn)
	cmd.AddCommand(newJobSubmitCmd(conn), newJobListCmd(conn), newJobShowCmd(conn),
		newJobWhyCmd(conn), newJobCancelCmd(conn), newJobLogsCmd(conn), newJobCheckpointCmd(conn))
	return cmd
}

func newJobSubmitCmd(conn *connection) *cobra.Command {
	var file string
	var sets []string
	cmd := &cobra.Command{
		Use:   "submit -f FILE [--set key=value]...",
		Short: "Submit the jobs in a YAML file",
		Long: `submit reads the jobs in FILE (one or more YAML documents separated by
"---", a list of jobs, JSON, or a directory of such files), checks them
locally, and sends each to the server. It prints the new job's ID, one per
line.

A problem in the file is reported with its file, line and field before
anything is sent, and submit exits with status 2; so does a job the server
rejects (InvalidSpec, SkuNotAvailable, QuotaExceeded). A job is accepted
even when it cannot start yet: 'allot job why ID' says what it waits for.

--set key=value overrides a field of every job in the file before it is
read; the key is a dotted path as written in the file (priority,
retry.max_retries, env.NAME) and the value is read as YAML. Each job names
its tenant (or use --set tenant=NAME).`,
		Example: `  allot job submit -f examples/jobs/train-llama.yaml
  allot job submit -f job.yaml --set priority=spot --set retry.max_retries=5
  ID=$(allot job submit -f job.yaml) && allot job why "$ID"
  allot job submit -f job.yaml -o json     # {"id": "..."}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			specs, err := spec.ReadJobs(file, sets)
			if err != nil {
				return Usage(err)
			}
			return submitJobs(cmd, cl, f, specs)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "job file, or a directory of *.yaml, *.yml and *.json job files (required)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a field of every job, key=value, e.g. priority=spot (repeatable)")
	_ = cmd.MarkFlagRequired("file")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return cmd
}

// submitJobs sends each spec as a job document and prints the new IDs. A
// job the server rejects for what it asks is reported and the rest are
// still sent; any other failure stops the run.
func submitJobs(cmd *cobra.Command, cl *client.Client, f format, specs []model.JobSpec) error {
	type submitted struct {
		ID string `json:"id"`
	}
	var ids []submitted
	var failed []error
	for _, s := range specs {
		doc, err := client.JobDocument(s)
		if err != nil {
			return err
		}
		j, err := cl.Submit(cmd.Context(), doc, "application/json")
		if err != nil {
			failed = append(failed, fromAPI(err))
			var ue usageError
			if len(specs) == 1 || !errors.As(failed[len(failed)-1], &ue) {
				break // the server or the token is at fault: the next job fares no better
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "allot: job %s: %v\n", s.Name, err)
			continue
		}
		ids = append(ids, submitted{j.ID})
	}
	var v any = ids
	if len(specs) == 1 && len(ids) == 1 {
		v = ids[0]
	}
	if len(ids) > 0 {
		err := show(cmd.OutOrStdout(), f, v, func() printer {
			t := table{}
			for _, id := range ids {
				t.add(id.ID)
			}
			return t
		})
		if err != nil {
			return err
		}
	}
	return submitErr(failed, len(ids), len(specs))
}

// submitErr sums up the jobs that were not submitted: the error itself for
// one job, else a count, which exits with status 2 only when every failure
// was the jobs' fault.
func submitErr(failed []error, done, total int) error {
	if len(failed) == 0 {
		return nil
	}
	if total == 1 {
		return failed[0]
	}
	last := failed[len(failed)-1]
	var ue usageError
	if !errors.As(last, &ue) {
		return fmt.Errorf("%w (%d of %d jobs submitted)", last, done, total)
	}
	return Usage(fmt.Errorf("%d of %d jobs not submitted", total-done, total))
}

// jobStates are the states a job can be in, for --state and completion.
var jobStates = []string{string(model.StateQueued), string(model.StatePreparing), string(model.StateRunning),
	string(model.StatePreempted), string(model.StateSucceeded), string(model.StateFailed), string(model.StateCanceled),
	string(model.StateTimedOut)}

func newJobListCmd(conn *connection) *cobra.Command {
	var filter client.JobFilter
	cmd := &cobra.Command{
		Use:   "list [--state S] [--tenant T]",
		Short: "List jobs, newest first",
		Long: `list shows the jobs the token may see, newest first: a tenant's own, or all
jobs for an admin. --state keeps jobs in one state (` + strings.Join(jobStates, ", ") + `);
--tenant keeps one tenant's jobs (admin). REASON is why a queued job waits
or why an ended one ended.`,
		Example: `  allot job list
  allot job list --state Queued
  allot job list --tenant acme -o json`,
		Aliases: []string{"ls"},
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			jobs, err := cl.ListJobs(cmd.Context(), filter)
			if err != nil {
				return fromAPI(err)
			}
			if jobs == nil {
				jobs = []client.Job{}
			}
			v := struct {
				Jobs []client.Job `json:"jobs"`
			}{jobs}
			return show(cmd.OutOrStdout(), f, v, func() printer {
				now := time.Now()
				t := table{header: []string{"ID", "NAME", "TENANT", "STATE", "REASON", "PRIORITY", "AGE"}}
				for _, j := range jobs {
					t.add(j.ID, j.Name, j.Tenant, j.State, orDash(j.Reason), orDash(string(j.Priority)), age(j.SubmittedAt, now))
				}
				return t
			})
		},
	}
	cmd.Flags().StringVar(&filter.State, "state", "", "only jobs in this state, e.g. Queued or Running")
	cmd.Flags().StringVar(&filter.Tenant, "tenant", "", "only this tenant's jobs")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(jobStates, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

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
		Use:   "show ID",
		Short: "Show one job: its state, reason, and where it runs",
		Long: `show prints a job: its state and the reason for it, the detail a person
needs to act on the reason, its priority and times, and the GPUs each
instance holds. With -o json or -o yaml it prints the API's Job object,
including the job document as submitted (spec).`,
		Example: `  allot job show j-0001
  allot job show j-0001 -o json | jq -r .state`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := func(cl *client.Client, ctx context.Context) (client.Job, error) { return cl.GetJob(ctx, args[0]) }
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
	if len(j.Allocations) == 0 {
		f.add("Allocations", "-")
	}
	for i, a := range j.Allocations {
		name := ""
		if i == 0 {
			name = "Allocations"
		}
		f.add(name, allocationText(a))
	}
	if j.CheckpointPath != "" {
		f.add("Checkpoint", j.CheckpointPath)
	}
	for i, a := range j.AttemptHistory {
		name := ""
		if i == 0 {
			name = "History"
		}
		f.add(name, attemptText(a))
	}
	return f
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
		Use:   "why ID",
		Short: "Explain why a job is in its state, and when it may start",
		Long: `why asks the scheduler why a job is where it is: the reason code
(InsufficientCapacity, QuotaExceeded, TopologyUnsatisfiable,
AwaitingPreemption, ReservationNotActive, ...), the detail a person needs to
act on it ("eastus: largest free IB leaf block is 5 nodes, job needs 8"),
and an estimated start when the scheduler can give one.`,
		Example: `  allot job why j-0001
  allot job why j-0001 -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			w, err := cl.Why(cmd.Context(), args[0])
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, w, func() printer {
				var fs fields
				fs.add("Job", w.ID)
				fs.add("State", w.State)
				fs.add("Reason", orDash(w.Reason))
				fs.add("Detail", orDash(w.Detail))
				for _, p := range w.Policies {
					fs.add("Policy", p)
				}
				start := "unknown"
				if !w.EstimatedStart.IsZero() {
					start = timestamp(w.EstimatedStart)
					if d := time.Until(w.EstimatedStart.Time); d > 0 {
						start += " (in " + span(d) + ")"
					}
				}
				fs.add("Estimated start", start)
				return fs
			})
		},
	}
}

func newJobCancelCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job",
		Long: `cancel stops a job: a queued job leaves the queue, a running one is told to
stop (it gets its checkpoint grace period) and its GPUs are freed. A job
that has already ended cannot be cancelled (Conflict, exit status 2).`,
		Example:           `  allot job cancel j-0001`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			j, err := cl.Cancel(cmd.Context(), args[0])
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, j, func() printer {
				t := table{header: []string{"ID", "NAME", "STATE", "REASON"}}
				t.add(j.ID, j.Name, j.State, orDash(j.Reason))
				return t
			})
		},
	}
}
