package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newJobLogsCmd(conn *connection) *cobra.Command {
	var attempt, rank int
	var follow, raw bool
	cmd := &cobra.Command{
		Use:   "logs ID|NAME [--attempt N] [--rank N] [-f] [--raw]",
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
and the agent's own account ends the log ("allot: rank 0 on NODE: ...").

The log of a job of several instances (a gang) labels each line with the
rank that wrote it, "[rank 2] step 10/7200 ...", as srun --label does;
--rank N prints only rank N's lines, without the label, and the agent's
lines about it.

On a terminal, control characters other than newline and tab are shown as
escapes (\x1b[2J, \r, \x1b]52;...): a job's output cannot set the
terminal's title, clear it, write its clipboard or overwrite a line. A pipe
or a file gets the bytes as the job wrote them, and so does a terminal with
--raw.

A job is named by its ID, or by its name when exactly one job the token
sees has that name.`,
		Example: `  allot job logs train-llama-1k8lhkvh808cr
  allot job logs train-llama-1k8lhkvh808cr --attempt 1
  allot job logs train-llama-1k8lhkvh808cr -f --rank 0`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobs(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, _, err := conn.client()
			if err != nil {
				return err
			}
			out, flush := logOutput(cmd.OutOrStdout(), raw)
			defer flush()
			if rank < -1 {
				return Usage(fmt.Errorf("--rank %d: want a rank, 0 or more", rank))
			}
			j, err := jobByRef(cmd.Context(), cl, args[0])
			if err != nil {
				return fromAPI(err)
			}
			id := j.ID
			if rank >= 0 {
				n := instancesOf(j)
				if rank >= n {
					return Usage(fmt.Errorf("--rank %d: job %s has %d instance(s), ranks 0 to %d", rank, j.ID, n, n-1))
				}
				if n > 1 {
					f := &rankFilter{w: out, rank: rank}
					defer f.flush()
					out = f
				}
			}
			if !follow {
				printAttemptEnd(cmd.ErrOrStderr(), j, attempt)
			}
			for {
				err := cl.Logs(cmd.Context(), id, attempt, follow, out)
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
	cmd.Flags().BoolVar(&raw, "raw", false, rawFlagUsage)
	cmd.Flags().IntVar(&rank, "rank", -1, "only this rank's lines of a gang's log (default: every rank's, labeled)")
	return cmd
}

// instancesOf is the most instances an attempt of j has: its spec's
// instance count, an elastic job's max_instances (1 when it does not say).
func instancesOf(j client.Job) int {
	var spec struct {
		Resources struct {
			InstanceCount int `json:"instance_count"`
		} `json:"resources"`
		Elastic struct {
			MaxInstances int `json:"max_instances"`
		} `json:"elastic"`
	}
	if json.Unmarshal(j.Spec, &spec) != nil {
		return 1
	}
	return max(spec.Resources.InstanceCount, spec.Elastic.MaxInstances, 1)
}

// rankFilter passes on, line by line, what one rank wrote to a gang's
// log, without the "[rank N] " label the server puts on each line, and
// the unlabeled lines but the agent's about other ranks ("allot: rank M on
// NODE: ...").
type rankFilter struct {
	w    io.Writer
	rank int
	buf  []byte // an unfinished line
}

func (f *rankFilter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	start := 0
	for {
		i := bytes.IndexByte(f.buf[start:], '\n')
		if i < 0 {
			break
		}
		if err := f.line(f.buf[start : start+i+1]); err != nil {
			return 0, err
		}
		start += i + 1
	}
	f.buf = append(f.buf[:0], f.buf[start:]...)
	return len(p), nil
}

func (f *rankFilter) line(l []byte) error {
	label := fmt.Sprintf("[rank %d] ", f.rank)
	if rest, ok := bytes.CutPrefix(l, []byte(label)); ok {
		_, err := f.w.Write(rest)
		return err
	}
	if bytes.HasPrefix(l, []byte("[rank ")) ||
		bytes.HasPrefix(l, []byte("allot: rank ")) && !bytes.HasPrefix(l, []byte(fmt.Sprintf("allot: rank %d ", f.rank))) {
		return nil
	}
	_, err := f.w.Write(l)
	return err
}

// flush passes on a last line that did not end.
func (f *rankFilter) flush() {
	if len(f.buf) > 0 {
		_ = f.line(f.buf)
		f.buf = nil
	}
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
	var path, node, step string
	var rank int
	cmd := &cobra.Command{
		Use:   "checkpoint [ID] --path P [--node NODE] [--rank R --step S]",
		Short: "Report that a job saved a checkpoint",
		Long: `checkpoint tells the server that the job saved its state at P; its next
attempt (after a preemption, a lost node or a retry) gets P as
ALLOT_RESUME_FROM, and work before it is not counted as lost. A job may call
it on itself: ID defaults to $ALLOT_JOB_ID. It needs the job's tenant token
or the admin token.

P is a URL (s3://bucket/ckpt/step-1000, passed on as it is) or a path inside
the job's checkpoint directory ($ALLOT_CHECKPOINT_DIR). Such a path is on one
node's disk: name that node with --node (one of the nodes the job runs on),
and the job's next attempt prefers it; an attempt on another node starts
without ALLOT_RESUME_FROM, and its log says why. Writing P into
$ALLOT_CHECKPOINT_DIR/CHECKPOINT does all this through the agent, without a
token.

In a gang whose ranks each save their own part, report each part with
--rank R and the save's name with --step S (the same for every rank; by
default P's last element). The save becomes the job's checkpoint once every
rank of the attempt has reported its part, and the next attempt resumes all
ranks from it or, when some rank cannot reach its part, none of them.`,
		Example: `  allot job checkpoint --path s3://bucket/ckpt/step-1000
  allot job checkpoint train-llama-1k8lhkvh808cr --path "$ALLOT_CHECKPOINT_DIR/step-1000" --node eastus-h100-07
  allot job checkpoint --path "$ALLOT_CHECKPOINT_DIR/step-1000" --rank "$ALLOT_RANK" --node eastus-h100-07`,
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
			ck := client.CheckpointRequest{Path: path, Node: node, Step: step}
			if cmd.Flags().Changed("rank") {
				ck.Rank = &rank
			}
			j, err := cl.Checkpoint(cmd.Context(), id, ck)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, j, func() printer { return jobFields(j) })
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "where the checkpoint is: a URL, or a path in $ALLOT_CHECKPOINT_DIR (required)")
	cmd.Flags().StringVar(&node, "node", "", "the node whose disk holds the path (default: none, for a URL)")
	cmd.Flags().IntVar(&rank, "rank", 0, "the rank whose part of a save this is (default: the checkpoint of every rank)")
	cmd.Flags().StringVar(&step, "step", "", "the name of the save a rank's part belongs to, the same for every rank (default: the path's last element)")
	_ = cmd.MarkFlagRequired("path")
	return cmd
}

var errNoJobID = usageText("want a job ID, or ALLOT_JOB_ID in the environment")

type usageText string

func (u usageText) Error() string { return string(u) }
