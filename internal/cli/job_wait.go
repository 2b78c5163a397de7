package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

// jobPoll is how often waiting for jobs asks for their state.
var jobPoll = time.Second

var errInterrupted = errors.New("interrupted; the jobs go on ('allot job wait ID' waits again, 'allot job logs ID -f' follows)")

// waitOption is what a command that submits jobs does next: --wait (with
// --wait-timeout) or --attach; --dry-run submits nothing.
type waitOption struct {
	on      bool
	timeout time.Duration
	dryRun  bool
	attach  bool
	raw     bool // with attach: the log's bytes, even to a terminal
}

func (w *waitOption) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.on, "wait", false, "then wait until the jobs end, as 'allot job wait' does: exit status 0 only when every one succeeded")
	waitTimeoutFlag(cmd, &w.timeout, "wait-timeout")
	cmd.Flags().BoolVar(&w.dryRun, "dry-run", false, "submit nothing: say what would become of each job now, as 'job why' would (sbatch --test-only)")
	cmd.Flags().BoolVar(&w.attach, "attach", false, "then print the job's log as it runs, attempt after attempt, as srun does, and exit with its program's exit status (0 when it succeeded, 1 when it ended without one; one job)")
	cmd.Flags().BoolVar(&w.raw, "raw", false, "with --attach: "+rawFlagUsage)
	cmd.MarkFlagsMutuallyExclusive("dry-run", "wait", "attach")
}

func newJobWaitCmd(conn *connection) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait ID|NAME... [--timeout D]",
		Short: "Wait until jobs end; exit 0 when every one succeeded",
		Long: `wait follows jobs until every one has ended, as sbatch --wait or kubectl
wait do, writing to stderr each change of a job's state and reason, then
prints the jobs as they ended. It exits with status 0 when every job
Succeeded and 1 when one ended otherwise (Failed, Canceled, TimedOut: the
error names it and why) or --timeout passed first (the jobs go on). A script
runs the next step only when the last one worked:

  allot job wait prepare-1k8nseucf6brd && allot job submit -f train.yaml

'job run --wait' and 'job submit --wait' submit and then wait the same way.
A job is named by its ID, or by its name when exactly one job has it.`,
		Example: `  allot job wait train-llama-1k8lhkvh808cr
  allot job wait j-1 j-2 --timeout 2h
  allot job run --wait --gpus 1 -- python eval.py`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			if timeout < 0 {
				return Usage(fmt.Errorf("--timeout %s: want 0 (no limit) or more", timeout))
			}
			jobs := make([]client.Job, len(args))
			for i, ref := range args {
				if jobs[i], err = jobByRef(cmd.Context(), cl, ref); err != nil {
					return fromAPI(err)
				}
			}
			jobs, werr := waitJobs(cmd.Context(), cl, jobs, timeout, cmd.ErrOrStderr())
			if werr != nil && jobs == nil {
				return werr
			}
			err = show(cmd.OutOrStdout(), f, map[string][]client.Job{"jobs": jobs}, func() printer {
				t := table{header: []string{"ID", "NAME", "STATE", "REASON"}}
				for _, j := range jobs {
					t.add(j.ID, j.Name, j.State, orDash(j.Reason))
				}
				return t
			})
			if werr != nil {
				return werr
			}
			return err
		},
	}
	waitTimeoutFlag(cmd, &timeout, "timeout")
	return cmd
}

// waitTimeoutFlag adds the flag that bounds a wait for jobs.
func waitTimeoutFlag(cmd *cobra.Command, timeout *time.Duration, name string) {
	cmd.Flags().DurationVar(timeout, name, 0, "give up waiting after this long, with exit status 1 (the jobs go on) (0: no limit)")
}

// waitJobs follows jobs until each has ended, at most limit (0: no limit),
// writing each change of a job's state or reason to log; a job given with
// its state is not asked for the first time. It returns the jobs as they
// last were, and an error with exit status 1 when one ended otherwise than
// Succeeded or the limit passed; nil jobs with an error when the server
// could not be asked.
func waitJobs(ctx context.Context, cl *client.Client, jobs []client.Job, limit time.Duration, log io.Writer) ([]client.Job, error) {
	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	jobs = slices.Clone(jobs)
	last := make([]string, len(jobs))
	for round := 0; ; round++ {
		pending := 0
		for i := range jobs {
			j := jobs[i]
			if round > 0 && model.State(j.State).Terminal() {
				continue
			}
			if round > 0 || j.State == "" {
				var err error
				if j, err = cl.GetJob(ctx, j.ID); err != nil {
					if ctx.Err() != nil {
						return nil, errInterrupted
					}
					return nil, fromAPI(err)
				}
				jobs[i] = j
			}
			if line := progressLine(j); line != last[i] {
				last[i] = line
				fmt.Fprintf(log, "%s %s: %s\n", time.Now().Format(time.TimeOnly), j.ID, line)
			}
			if !model.State(j.State).Terminal() {
				pending++
			}
		}
		if pending == 0 {
			var bad []string
			for _, j := range jobs {
				if j.State != string(model.StateSucceeded) {
					bad = append(bad, fmt.Sprintf("%s %s (%s)", j.ID, j.State, orDash(j.Detail)))
				}
			}
			if len(bad) == 1 && len(jobs) == 1 {
				return jobs, exitError{code: ExitFailure, err: fmt.Errorf("job %s did not succeed: %s", jobs[0].ID, strings.TrimPrefix(bad[0], jobs[0].ID+" "))}
			}
			if len(bad) > 0 {
				return jobs, exitError{code: ExitFailure, err: fmt.Errorf("%d of %d jobs did not succeed: %s", len(bad), len(jobs), strings.Join(bad, "; "))}
			}
			return jobs, nil
		}
		pause := jobPoll
		if !deadline.IsZero() {
			if !time.Now().Before(deadline) {
				var open []string
				for _, j := range jobs {
					if !model.State(j.State).Terminal() {
						open = append(open, j.ID+" "+j.State)
					}
				}
				return jobs, exitError{code: ExitFailure, err: fmt.Errorf("%d of %d jobs have not ended after %s, and go on: %s",
					len(open), len(jobs), limit, strings.Join(open, ", "))}
			}
			pause = min(pause, time.Until(deadline))
		}
		select {
		case <-ctx.Done():
			return nil, errInterrupted
		case <-time.After(pause):
		}
	}
}

// progressLine is what waitJobs says of a job: its state and reason, and
// where it runs.
func progressLine(j client.Job) string {
	s := j.State
	if j.Reason != "" && j.Reason != j.State {
		s += " (" + j.Reason + ")"
	}
	if nodes := allocationNodes(j.Allocations); len(nodes) > 0 {
		s += " on " + jobsCell(nodes)
	}
	return s
}

// passExitCode gives err, the end of attached job j that did not succeed,
// the exit status of j's last attempt when its program exited with one
// (1 to 255), as srun passes a program's status through; else err as it is.
func passExitCode(j client.Job, err error) error {
	n := len(j.AttemptHistory)
	if err == nil || n == 0 {
		return err
	}
	if code := j.AttemptHistory[n-1].ExitCode; code > 0 && code < 256 {
		return exitError{code: code, err: err}
	}
	return err
}

// attachJob prints the log of job id as it runs, attempt after attempt,
// as srun does, and returns as waitJobs does once the job ended: nil when
// it Succeeded, else an error naming how it ended, with the exit status of
// the job's program where it exited with one (passExitCode), else 1. An
// attempt that ended otherwise than by completing is followed on stderr by
// how ('# attempt 1: Failed: ...'), before the next attempt's log.
func attachJob(ctx context.Context, cl *client.Client, id string, out, errOut io.Writer) error {
	for n := 1; ; {
		err := cl.Logs(ctx, id, n, true, out)
		if ctx.Err() != nil {
			return errInterrupted
		}
		var e *client.APIError
		started := !(errors.As(err, &e) && e.Status == 404 && e.Field == "attempt")
		if err != nil && started {
			return fromAPI(err)
		}
		j, err := cl.GetJob(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return errInterrupted
			}
			return fromAPI(err)
		}
		if started {
			printAttemptEnd(errOut, j, n)
			n++
		}
		if model.State(j.State).Terminal() {
			// Attempts that ran and ended between two looks: their whole
			// logs (one that is no longer kept is passed over).
			for ; n <= len(j.AttemptHistory); n++ {
				if cl.Logs(ctx, id, n, false, out) == nil {
					printAttemptEnd(errOut, j, n)
				}
			}
			_, err := waitJobs(ctx, cl, []client.Job{j}, 0, io.Discard)
			return passExitCode(j, err)
		}
		if !started {
			select {
			case <-ctx.Done():
				return errInterrupted
			case <-time.After(jobPoll):
			}
		}
	}
}
