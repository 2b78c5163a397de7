package cli

import (
	"os"

	"github.com/spf13/cobra"
)

func newJobLogsCmd(conn *connection) *cobra.Command {
	var attempt int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs ID [--attempt N] [-f]",
		Short: "Print a job's log (the latest attempt by default)",
		Long: `logs prints what the job's processes wrote, as their agents shipped it: the
latest attempt, or --attempt N. The server keeps the last MiB of each
attempt, in memory. With -f it keeps printing until the attempt ends.`,
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
			return fromAPI(cl.Logs(cmd.Context(), args[0], attempt, follow, cmd.OutOrStdout()))
		},
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "attempt number (default: the latest)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing until the attempt ends")
	return cmd
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
