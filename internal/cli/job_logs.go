package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newJobLogsCmd(conn *connection) *cobra.Command {
	var attempt int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs ID [--attempt N] [-f]",
		Short: "Print a job's log (the latest attempt by default)",
		Long: `logs prints what the job's processes wrote, as their agents shipped it: the
latest attempt, or --attempt N. The server keeps the last MiB of each
attempt, in memory. With -f it keeps printing, each line within a second of
the job writing it, until the attempt ends or Ctrl-C; a job that has not
started yet is waited for.

An attempt that ended otherwise than by completing (its command could not
start, exited non-zero, was killed, preempted, timed out) is headed by a
line on stderr saying how, e.g.
  # attempt 1: Failed: attempt 1, rank 0 on eastus-t4x1-01 could not start: exec: "torchrun": executable file not found in $PATH
and the agent's own account ends the log ("allot: rank 0 on NODE: ...").`,
		Example: `  allot job logs train-llama-1k8lhkvh808cr
  allot job logs train-llama-1k8lhkvh808cr --attempt 1
  allot job logs train-llama-1k8lhkvh808cr -f`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, _, err := conn.client()
			if err != nil {
				return err
			}
			if !follow {
				if j, err := cl.GetJob(cmd.Context(), args[0]); err == nil {
					printAttemptEnd(cmd.ErrOrStderr(), j, attempt)
				}
			}
			for {
				err := cl.Logs(cmd.Context(), args[0], attempt, follow, cmd.OutOrStdout())
				// Following a job that has not started yet waits for its
				// first attempt.
				var e *client.APIError
				if !follow || attempt != 0 || !errors.As(err, &e) || e.Status != 404 || e.Field != "attempt" {
					return fromAPI(err)
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(500 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "attempt number (default: the latest)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing until the attempt ends")
	return cmd
}

// printAttemptEnd heads the log of attempt n of j (0: the latest) with how
// it ended, when it ended otherwise than by completing.
func printAttemptEnd(w io.Writer, j client.Job, n int) {
	h := j.AttemptHistory
	if len(h) == 0 {
		return
	}
	a := h[len(h)-1]
	if n > 0 {
		if n > len(h) {
			return
		}
		a = h[n-1]
	}
	if a.Ended.IsZero() || a.Reason == "" || a.Reason == "Completed" {
		return
	}
	fmt.Fprintf(w, "# attempt %d: %s: %s\n", a.Number, a.Reason, a.Detail)
}

func newJobCheckpointCmd(conn *connection) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "checkpoint [ID] --path P",
		Short: "Report that a job saved a checkpoint",
		Long: `checkpoint tells the server that the job saved its state at P; its next
attempt (after a preemption, a lost node or a retry) gets P as
ALLOT_RESUME_FROM, and work before it is not counted as lost. A job may call
it on itself: ID defaults to $ALLOT_JOB_ID. It needs the job's tenant token
or the admin token. (Writing P into $ALLOT_CHECKPOINT_DIR/CHECKPOINT does the
same through the agent, without a token.)`,
		Example: `  allot job checkpoint --path /ckpt/step-1000
  allot job checkpoint train-llama-1k8lhkvh808cr --path s3://bucket/ckpt/step-1000`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			id := os.Getenv("ALLOT_JOB_ID")
			if len(args) == 1 {
				id = args[0]
			}
			if id == "" {
				return Usage(errNoJobID)
			}
			j, err := cl.Checkpoint(cmd.Context(), id, path)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, j, func() printer { return jobFields(j) })
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "where the checkpoint is (required)")
	_ = cmd.MarkFlagRequired("path")
	return cmd
}

var errNoJobID = usageText("want a job ID, or ALLOT_JOB_ID in the environment")

type usageText string

func (u usageText) Error() string { return string(u) }
