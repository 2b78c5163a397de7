package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/admission"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/strategy"
)

type planFlags struct {
	fleet, tenants, output, now string
	jobs                        []string
	running, sets               []string
	minRun, resizeInterval      time.Duration
}

func newPlanCmd() *cobra.Command {
	f := planFlags{}
	cmd := &cobra.Command{
		Use:   "plan --fleet F --tenants T --jobs DIR_OR_FILE...",
		Short: "Run one scheduling cycle offline and print the plan",
		Long: `plan reads a fleet, its tenancy and queued jobs from YAML files, runs one
cycle of allot's scheduling core, and prints what it would do: the jobs it
binds and where, the running jobs it preempts and for whom, and why every
other job stays pending. A queued job that can never run on the fleet is
pending with the reason and detail that 'allot job submit' refuses it with
(SkuNotAvailable, ResidencyForbidden, TopologyUnsatisfiable, QuotaExceeded).
A step of a pipeline (a job with after:) waits for its predecessors to
succeed, which one cycle never sees: it is neither bound nor pending.

The tenants file's strategy (static, dynamic or hybrid; docs/strategies.md)
applies as it does in the server. A pool whose GPUs the tenancy promises
more than once (guarantees kept from lending plus reservations, from --now
on) is warned of on standard error: its reservations' work may wait.

With --running PATH[@AGE], the jobs in that file or directory are placed
first, by a cycle of their own, as work that started AGE (default 1h) before
--now; the flag repeats, oldest first. The printed plan is the cycle after,
which may preempt them (work younger than --min-run-time is protected).

Without --jobs and --running, plan runs the example scenario of the
repository: examples/running/*.yaml already running, examples/jobs and
examples/refused (jobs that submit refuses: they can never run) queued.`,
		Example: `  allot plan --fleet examples/fleet.yaml --tenants examples/tenants.yaml \
      --running examples/running/batch.yaml@2h --running examples/running/resumed.yaml@5m \
      --jobs examples/jobs --jobs examples/refused
  allot plan --fleet examples/fleet.yaml --tenants examples/tenants.yaml \
      --jobs examples/jobs/train-llama.yaml --set priority=spot -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("jobs") && !cmd.Flags().Changed("running") {
				f.jobs, f.running = exampleJobs, exampleRunning
			}
			return runPlan(cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.fleet, "fleet", "examples/fleet.yaml", "fleet file")
	fl.StringVar(&f.tenants, "tenants", "examples/tenants.yaml", "tenants, partitions, quotas and reservations file")
	fl.StringArrayVar(&f.jobs, "jobs", nil, "queued jobs: a YAML file or a directory of them, repeatable (default: the example scenario)")
	fl.StringArrayVar(&f.running, "running", nil, "jobs already running, as PATH[@AGE]: a YAML file or directory, started AGE ago (repeatable)")
	fl.StringArrayVar(&f.sets, "set", nil, "override a job field for every queued job, e.g. --set priority=spot (repeatable)")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fl.StringVar(&f.now, "now", "", "the cycle's time, RFC 3339 (default: the current time)")
	fl.DurationVar(&f.minRun, "min-run-time", sched.DefaultMinRunTime, "how long preempted work is protected from another preemption")
	fl.DurationVar(&f.resizeInterval, "resize-interval", model.DefaultResizeInterval, "the least time between two resizes of an elastic job, from the start of its attempt (--running jobs started AGE ago)")
	return cmd
}

// The example scenario: batch work running for two hours, work resumed
// five minutes ago, and a queue that meets every rule of the core.
var (
	exampleJobs    = []string{"examples/jobs", "examples/refused"}
	exampleRunning = []string{"examples/running/batch.yaml@2h", "examples/running/resumed.yaml@5m"}
)

func runPlan(out, errOut io.Writer, f planFlags) error {
	if len(f.jobs) == 0 {
		return Usage(fmt.Errorf("--jobs is required with --running"))
	}
	if f.output != "table" && f.output != "json" {
		return Usage(fmt.Errorf("--output %q: want table or json", f.output))
	}
	now := time.Now().UTC()
	if f.now != "" {
		t, err := time.Parse(time.RFC3339, f.now)
		if err != nil {
			return Usage(fmt.Errorf("--now %q: want RFC 3339, e.g. 2026-06-01T12:00:00Z", f.now))
		}
		now = t
	}
	fleet, err := spec.ReadFleet(f.fleet)
	if err != nil {
		return Usage(err)
	}
	tenancy, err := spec.ReadTenancy(f.tenants, fleet)
	if err != nil {
		return Usage(err)
	}
	var queued []*model.Job
	for _, path := range f.jobs {
		set, err := readJobSet(path, f.sets, now)
		if err != nil {
			return err
		}
		for _, j := range set {
			if len(j.Spec.After) > 0 {
				j.Status.State = model.StateBlocked // waits for its predecessors, beyond this one cycle
			}
			if j.Spec.Begin.After(now) { // as the server holds it back: not offered to the core
				fmt.Fprintf(errOut, "Note: %s begins at %s, after this cycle's time; left out (a server keeps it Queued, reason BeginTime)\n",
					j.ID, j.Spec.Begin.UTC().Format(time.RFC3339))
				continue
			}
			queued = append(queued, j)
		}
	}
	s := sched.New(sched.Config{MinRunTime: f.minRun, ResizeInterval: f.resizeInterval})
	var jobs []*model.Job
	for _, r := range f.running {
		path, age, err := pathAge(r)
		if err != nil {
			return Usage(err)
		}
		start := now.Add(-age)
		running, err := readJobSet(path, nil, start)
		if err != nil {
			return err
		}
		all := append(jobs, running...)
		warm := s.Schedule(strategy.Apply(&sched.Snapshot{Fleet: fleet, Tenancy: tenancy, Jobs: all}, start), start)
		if err := warm.Apply(all, start); err != nil {
			return err
		}
		jobs = jobs[:0]
		for _, j := range all {
			if j.Status.State == model.StateRunning {
				jobs = append(jobs, j)
			}
		}
	}
	if err := uniqueIDs(append(append([]*model.Job(nil), jobs...), queued...)); err != nil {
		return Usage(err)
	}
	jobs = append(jobs, queued...)
	snap := strategy.Apply(&sched.Snapshot{Fleet: fleet, Tenancy: tenancy, Jobs: jobs}, now)
	for _, p := range snap.Tenancy.Overpromises(fleet, now) {
		fmt.Fprintf(errOut, "Warning: the tenancy promises more GPUs than a pool has: %s; guarantees that are not lent come first, so reservations' work may wait\n", p)
	}
	plan := s.Schedule(snap, now)
	admit(s, fleet, tenancy, queued, plan.Pending, now)
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	}
	return writePlanTable(out, plan)
}

// admit gives each pending queued job that can never run the reason and
// detail a submit of it is refused with (package admission), so that plan
// and the server agree on the same job.
func admit(s *sched.Scheduler, fleet *model.Fleet, tenancy *model.Tenancy, queued []*model.Job, pending []sched.Pending, now time.Time) {
	specs := make(map[string]*model.JobSpec, len(queued))
	for _, j := range queued {
		specs[j.ID] = &j.Spec
	}
	ideal := admission.Ideal(fleet)
	for i, p := range pending {
		if spec, ok := specs[p.Job]; ok {
			if v := admission.Check(s, ideal, tenancy, *spec, now); v.Never() {
				pending[i].Reason, pending[i].Detail = v.Reason, v.Detail
			}
		}
	}
}

// pathAge splits "PATH@AGE"; the age defaults to an hour.
func pathAge(s string) (string, time.Duration, error) {
	path, age, ok := strings.Cut(s, "@")
	if !ok {
		return s, time.Hour, nil
	}
	d, err := time.ParseDuration(age)
	if err != nil || d < 0 {
		return "", 0, fmt.Errorf("--running %q: AGE must be a duration such as 90m", s)
	}
	return path, d, nil
}

// readJobSet reads job specs and queues them, named by their spec name.
func readJobSet(path string, sets []string, submitted time.Time) ([]*model.Job, error) {
	specs, err := spec.ReadJobs(path, sets)
	if err != nil {
		return nil, Usage(err)
	}
	jobs := make([]*model.Job, len(specs))
	for i, s := range specs {
		jobs[i] = &model.Job{ID: s.Name, Spec: s, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: submitted}}
	}
	return jobs, nil
}

func uniqueIDs(jobs []*model.Job) error {
	seen := map[string]bool{}
	for _, j := range jobs {
		if seen[j.ID] {
			return fmt.Errorf("two jobs are named %q; offline plans name jobs by their name", j.ID)
		}
		seen[j.ID] = true
	}
	return nil
}

func writePlanTable(out io.Writer, p sched.Plan) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "BINDS (%d)\nJOB\tPLACEMENT\n", len(p.Binds))
	for _, b := range p.Binds {
		parts := make([]string, len(b.Nodes))
		for i, n := range b.Nodes {
			parts[i] = placementText(n)
		}
		fmt.Fprintf(tw, "%s\t%s\n", b.Job, strings.Join(parts, " "))
	}
	fmt.Fprintf(tw, "\nPREEMPTIONS (%d)\nJOB\tFOR\tREASON\tDETAIL\n", len(p.Preemptions))
	for _, pr := range p.Preemptions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", pr.Job, pr.For, pr.Reason, pr.Detail)
	}
	fmt.Fprintf(tw, "\nRESIZES (%d)\nJOB\tSIZE\tREASON\tDETAIL\n", len(p.Resizes))
	for _, r := range p.Resizes {
		fmt.Fprintf(tw, "%s\t%d→%d\t%s\t%s\n", r.Job, r.From, r.To, resizeReason(r), server.ResizeText(r))
	}
	fmt.Fprintf(tw, "\nPENDING (%d)\nJOB\tREASON\tDETAIL\n", len(p.Pending))
	for _, pd := range p.Pending {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", pd.Job, pd.Reason, pd.Detail)
	}
	return tw.Flush()
}

// resizeReason is a resize's reason, and the job a shrink made room for.
func resizeReason(r sched.Resize) string {
	if r.For == "" {
		return r.Reason.String()
	}
	return fmt.Sprintf("%s for %s", r.Reason, r.For)
}

// placementText writes node[0-3] for whole GPUs, node[2]@250m for a fraction.
func placementText(p sched.Placement) string {
	gpus := make([]string, len(p.GPUs))
	for i, g := range p.GPUs {
		gpus[i] = fmt.Sprint(g)
	}
	s := fmt.Sprintf("%s[%s]", p.Node, strings.Join(gpus, ","))
	if p.GPUMilli < model.MilliPerGPU && len(p.GPUs) > 0 {
		s += fmt.Sprintf("@%dm", p.GPUMilli)
	}
	return s
}
