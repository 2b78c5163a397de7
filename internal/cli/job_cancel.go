package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

// activeStates are the states of a job that has not ended: what a bulk
// action by filter acts on unless --state says otherwise.
var activeStates = []string{string(model.StateQueued), string(model.StatePreparing), string(model.StateRunning),
	string(model.StatePreempted), string(model.StateBlocked)}

// jobSelection is the jobs a bulk command acts on: IDs, or a filter.
type jobSelection struct {
	states []string
	name   string
	tenant string
}

func (s *jobSelection) register(cmd *cobra.Command, verb string) {
	cmd.Flags().StringSliceVar(&s.states, "state", nil, verb+" the jobs in these states (default: every job that has not ended)")
	cmd.Flags().StringVar(&s.name, "name", "", verb+" the jobs whose name contains this, or matches this glob (* ? [)")
	cmd.Flags().StringVar(&s.tenant, "tenant", "", verb+" this tenant's jobs (admin)")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(jobStates, cobra.ShellCompDirectiveNoFileComp))
}

func (s jobSelection) any() bool { return len(s.states) > 0 || s.name != "" || s.tenant != "" }

// ids returns args, or the IDs of the jobs the filter selects; it refuses
// both or neither.
func (s jobSelection) ids(cmd *cobra.Command, cl *client.Client, args []string) ([]string, error) {
	switch {
	case len(args) > 0 && s.any():
		return nil, Usage(errors.New("give job IDs or --state/--name/--tenant, not both"))
	case len(args) > 0:
		return args, nil
	case !s.any():
		return nil, Usage(errors.New("want job IDs, or --state, --name or --tenant to select jobs"))
	}
	states := s.states
	if len(states) == 0 {
		states = activeStates
	}
	jobs, err := cl.ListJobs(cmd.Context(), client.JobFilter{States: states, Name: s.name, Tenant: s.tenant})
	if err != nil {
		return nil, fromAPI(err)
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids, nil
}

// byRefs makes act, an action on a job by ID, take a job's name too, as
// byJobRef does: for jobs named on the command line. An ID costs one
// request, as before; a name several jobs have is refused, listing them.
func byRefs(ctx context.Context, cl *client.Client, act func(id string) (client.Job, error)) func(ref string) (client.Job, error) {
	return func(ref string) (client.Job, error) { return byJobRef(ctx, cl, ref, act) }
}

// outcome is what a bulk action did to one job.
type outcome struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
}

// eachJob applies act to every ID, prints one outcome per job, and fails
// with exit status 1 when any did. One ID given on the command line keeps
// the single-job behaviour: the job as it is afterwards, or the error as
// the command's (status 2 for what the server refused).
func eachJob(cmd *cobra.Command, f format, ids []string, single bool, act func(id string) (client.Job, error)) error {
	if single {
		j, err := act(ids[0])
		if err != nil {
			return fromAPI(err)
		}
		return show(cmd.OutOrStdout(), f, j, func() printer {
			t := table{header: []string{"ID", "NAME", "STATE", "REASON"}}
			t.add(j.ID, j.Name, j.State, orDash(j.Reason))
			return t
		})
	}
	var outs []outcome
	failed := 0
	for _, id := range ids {
		j, err := act(id)
		if err != nil {
			failed++
			outs = append(outs, outcome{ID: id, Error: err.Error()})
			continue
		}
		outs = append(outs, outcome{ID: j.ID, Name: j.Name, State: j.State})
	}
	return printOutcomes(cmd, f, outs, failed, "jobs")
}

// printOutcomes prints one line per object of a bulk action (under key
// in JSON) and fails with exit status 1 when any failed.
func printOutcomes(cmd *cobra.Command, f format, outs []outcome, failed int, key string) error {
	if outs == nil {
		outs = []outcome{}
	}
	err := show(cmd.OutOrStdout(), f, map[string][]outcome{key: outs}, func() printer {
		t := table{header: []string{"ID", "NAME", "STATE", "ERROR"}}
		for _, o := range outs {
			t.add(o.ID, orDash(o.Name), orDash(o.State), orDash(o.Error))
		}
		return t
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		return exitError{code: ExitFailure, err: fmt.Errorf("%d of %d %s failed", failed, len(outs), key)}
	}
	return nil
}

func newJobCancelCmd(conn *connection) *cobra.Command {
	var sel jobSelection
	var force bool
	cmd := &cobra.Command{
		Use:   "cancel ID... | --state S --name N --tenant T",
		Short: "Cancel jobs, by ID or by filter",
		Long: `cancel stops jobs: a queued job leaves the queue, a running one is told to
stop (SIGTERM; it gets its checkpoint grace, at most the server's
--max-grace, to save a checkpoint) and its GPUs are freed for other work.
On real nodes the job shows Preempted (reason Canceling) until its
processes are gone, then Canceled; it is billed until then. Cancel it
again, or cancel with --force, to have them killed (SIGKILL) at once.

Give job IDs (or names: a name one job has stands for it, as in 'job
logs' and 'job why'; a name several jobs have is refused, listing them),
or select jobs with --state, --name and --tenant (as in 'job
list'; without --state, every job that has not ended). It prints each job's
outcome and exits with status 1 if any could not be cancelled. With one ID,
a job that has already ended is an error (Conflict, exit status 2).`,
		Example: `  allot job cancel j-0001
  allot job cancel j-0001 j-0002 j-0003
  allot job cancel --force j-0001             # kill its processes now, no grace
  allot job cancel --name 'sweep-*' --state Queued
  allot job cancel --tenant research          # admin: every job of research that has not ended`,
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			ids, err := sel.ids(cmd, cl, args)
			if err != nil {
				return err
			}
			cancel := cl.Cancel
			if force {
				cancel = cl.ForceCancel
			}
			act := func(id string) (client.Job, error) { return cancel(cmd.Context(), id) }
			if len(args) > 0 {
				act = byRefs(cmd.Context(), cl, act)
			}
			return eachJob(cmd, f, ids, len(args) == 1, act)
		},
	}
	sel.register(cmd, "cancel")
	cmd.Flags().BoolVar(&force, "force", false, "kill the jobs' processes at once (SIGKILL) instead of giving them their checkpoint grace")
	return cmd
}
