package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

// jobListFlags are the filters and paging of 'job list'.
type jobListFlags struct {
	states   []string
	tenant   string
	name     string
	limit    int
	cont     string
	watch    bool
	interval time.Duration
	all      bool
}

func (fl jobListFlags) filter() client.JobFilter {
	states := fl.states
	if len(states) == 0 && !fl.all {
		states = liveStates // as squeue: what has not ended
	}
	return client.JobFilter{States: states, Tenant: fl.tenant, Name: fl.name, Limit: fl.limit, Continue: fl.cont}
}

// liveStates are the states of a job that has not ended.
var liveStates = func() []string {
	var out []string
	for _, s := range model.States {
		if !s.Terminal() {
			out = append(out, string(s))
		}
	}
	return out
}()

func newJobListCmd(conn *connection) *cobra.Command {
	var fl jobListFlags
	cmd := &cobra.Command{
		Use:   "list [--state S,...] [--name N] [--tenant T] [--limit N [--continue TOKEN]] [--watch]",
		Short: "List jobs, newest first",
		Long: `list shows the jobs the token may see, newest first: a tenant's own, or all
jobs for an admin. REASON is why a queued job waits or why an ended one ended;
for a Blocked step of a pipeline it also names the jobs it waits for and
their states ("WaitsForPredecessor: prepare-1k8nseucf6brd (Running)").

Without --state it lists the jobs that have not ended, as squeue does;
--all lists the ended ones too (kept for --job-retention).
--state keeps jobs in any of the states given (` + strings.Join(jobStates, ", ") + `;
repeat it or separate them with commas); --name keeps jobs whose name
contains the text, or matches it whole when it has a glob character
(* ? [); --tenant keeps one tenant's jobs (admin).

--limit N prints one page of at most N jobs in ID order (by name, then
submit time), all read at one store revision; when more may follow, the
token that continues the listing is printed on stderr: pass it to
--continue. Pages of one listing neither repeat nor skip a job, whatever
changes meanwhile.

--watch prints the list again whenever it changes, checking every
--interval, until interrupted (Ctrl-C). On a terminal it redraws the
screen; piped, it prints each new list after a line with the time.

The table has fixed columns and no colour, for pagers and scripts: ID NAME
TENANT STATE REASON PRIORITY AGE; -o wide adds, before AGE, the GPUs a job
holds (GPUS) and its nodes (NODES), as squeue's NODELIST.`,
		Example: `  allot job list
  allot job list --all                           # ended jobs too
  allot job list --state Queued,Running --name llama
  allot job list --state Blocked                 # pipeline steps and what they wait for
  allot job list --state Running -o wide         # with the GPUs and nodes each holds
  allot job list --name 'train-*' -o json
  allot job list --limit 50                      # then --limit 50 --continue TOKEN
  allot job list --state Queued --watch --interval 5s
  allot job list | less -S`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			if fl.cont != "" && fl.limit == 0 {
				return Usage(fmt.Errorf("--continue needs --limit (the page size)"))
			}
			if fl.all && len(fl.states) > 0 {
				return Usage(fmt.Errorf("--all lists jobs in every state; --state picks some: give one of them"))
			}
			if fl.limit < 0 {
				return Usage(fmt.Errorf("--limit %d: want a positive number", fl.limit))
			}
			if !fl.watch {
				text, next, err := renderJobList(cmd.Context(), cl, f, fl)
				if err != nil {
					return err
				}
				_, err = io.WriteString(cmd.OutOrStdout(), text)
				if next != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "more jobs: --limit %d --continue %s\n", fl.limit, next)
				}
				return err
			}
			if fl.interval < 100*time.Millisecond {
				return Usage(fmt.Errorf("--interval %v: want at least 100ms", fl.interval))
			}
			return watchJobList(cmd.Context(), cmd.OutOrStdout(), cl, f, fl)
		},
	}
	cmd.Flags().StringSliceVar(&fl.states, "state", nil, "only jobs in these states, e.g. Queued,Running (repeatable)")
	cmd.Flags().BoolVarP(&fl.all, "all", "a", false, "ended jobs too (without it, and without --state, only jobs that have not ended)")
	cmd.Flags().StringVar(&fl.tenant, "tenant", "", "only this tenant's jobs")
	cmd.Flags().StringVar(&fl.name, "name", "", "only jobs whose name contains this, or matches this glob (* ? [)")
	cmd.Flags().IntVar(&fl.limit, "limit", 0, fmt.Sprintf("print one page of at most this many jobs, in ID order (1 to %d)", 1000))
	cmd.Flags().StringVar(&fl.cont, "continue", "", "continue a paged listing with the token the previous page printed")
	cmd.Flags().BoolVarP(&fl.watch, "watch", "w", false, "print the list again whenever it changes, until interrupted")
	cmd.Flags().DurationVar(&fl.interval, "interval", 2*time.Second, "how often --watch checks")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(jobStates, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// renderJobList fetches the list and returns it as f prints it, with the
// continue token of a paged listing.
func renderJobList(ctx context.Context, cl *client.Client, f format, fl jobListFlags) (string, string, error) {
	l, err := cl.ListJobPage(ctx, fl.filter())
	if err != nil {
		return "", "", fromAPI(err)
	}
	if l.Jobs == nil {
		l.Jobs = []client.Job{}
	}
	var buf bytes.Buffer
	err = show(&buf, f, l, func() printer {
		now := time.Now()
		if f == formatWide {
			t := table{header: []string{"ID", "NAME", "TENANT", "STATE", "REASON", "PRIORITY", "GPUS", "NODES", "AGE"}}
			for _, j := range l.Jobs {
				t.add(j.ID, j.Name, j.Tenant, j.State, listReason(j), orDash(string(j.Priority)), heldGPUs(j.Allocations),
					jobsCell(allocationNodes(j.Allocations)), age(j.SubmittedAt, now))
			}
			return t
		}
		t := table{header: []string{"ID", "NAME", "TENANT", "STATE", "REASON", "PRIORITY", "AGE"}}
		for _, j := range l.Jobs {
			t.add(j.ID, j.Name, j.Tenant, j.State, listReason(j), orDash(string(j.Priority)), age(j.SubmittedAt, now))
		}
		return t
	})
	return buf.String(), l.Continue, err
}

// watchJobList prints the list, then again each time it changes, until
// ctx ends; that ending is a normal exit. A failed check is reported and
// retried at the next interval.
func watchJobList(ctx context.Context, out io.Writer, cl *client.Client, f format, fl jobListFlags) error {
	tty := isTerminal(out)
	last := ""
	t := time.NewTicker(fl.interval)
	defer t.Stop()
	for {
		text, _, err := renderJobList(ctx, cl, f, fl)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			text = "allot: " + err.Error() + "\n"
		}
		// AGE changes every second: compare the lists without it.
		if key := withoutAge(text, f); key != last {
			last = key
			if tty {
				fmt.Fprint(out, "\x1b[H\x1b[2J")
			}
			fmt.Fprintf(out, "# %s\n%s", time.Now().Format(time.TimeOnly), text)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// withoutAge drops the AGE column (the last) of a table, so that a list
// is printed again only when a job changed.
func withoutAge(text string, f format) string {
	if !f.human() {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if j := strings.LastIndexByte(l, ' '); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// listReason is the REASON cell of a job: its reason, and for a Blocked
// step of a pipeline also what it waits for, from its detail
// ("WaitsForPredecessor: prepare-1k8n… (Running)").
func listReason(j client.Job) string {
	if w, ok := strings.CutPrefix(j.Detail, "waits for "); ok && j.State == "Blocked" {
		return j.Reason + ": " + w
	}
	return orDash(j.Reason)
}

// heldGPUs is the GPUs a job's allocations hold: "16", "0.25", "-" when none.
func heldGPUs(as []client.Allocation) string {
	var milli int64
	for _, a := range as {
		milli += int64(len(a.GPUs)) * a.GPUMilli
	}
	if milli == 0 {
		return "-"
	}
	return gpus(float64(milli) / 1000)
}

// allocationNodes is the nodes of a job's allocations, in rank order.
func allocationNodes(as []client.Allocation) []string {
	nodes := make([]string, len(as))
	for i, a := range as {
		nodes[i] = a.Node
	}
	return nodes
}
