package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/agent"
)

// jobLimitFlags are the bounds an agent sets on every job it runs: 'allot
// agent' has them, and so do 'allot up' and 'allot server', for their
// in-process agents.
type jobLimitFlags struct {
	logMiB      int64         // --job-log-mib
	pids        int64         // --job-pids
	stopTimeout time.Duration // --stop-timeout
}

func (f *jobLimitFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int64Var(&f.logMiB, "job-log-mib", agent.DefaultJobLogLimit>>20, "MiB of output one job's logs may hold on a host, its attempts and ranks together; past it the log says so and the rest of the job's output there is dropped (the job runs on)")
	fl.Int64Var(&f.pids, "job-pids", agent.DefaultPidsLimit, "processes and threads one job may have on a host at once, a fork past it fails (the cgroup's pids.max; without a pids controller, RLIMIT_NPROC of the job's own uid when the agent runs as root)")
	fl.DurationVar(&f.stopTimeout, "stop-timeout", agent.DefaultStopTimeout, "when the agent stops its jobs as it exits ('allot agent --on-exit stop'; always for the agents of 'allot up' and 'allot server'), the longest grace they get between SIGTERM and SIGKILL of all their processes, whatever grace they asked for")
}

// check refuses values that bound nothing.
func (f jobLimitFlags) check() error {
	switch {
	case f.logMiB < 1:
		return Usage(fmt.Errorf("--job-log-mib %d: want 1 or more", f.logMiB))
	case f.logMiB > 1<<33:
		return Usage(fmt.Errorf("--job-log-mib %d: want at most %d (8 PiB)", f.logMiB, int64(1)<<33))
	case f.pids < 8:
		return Usage(fmt.Errorf("--job-pids %d: want 8 or more (a shell and the few processes a job starts)", f.pids))
	case f.stopTimeout <= 0:
		return Usage(fmt.Errorf("--stop-timeout %s: want a duration above 0", f.stopTimeout))
	}
	return nil
}

// apply sets the bounds in an agent's configuration.
func (f jobLimitFlags) apply(c *agent.Config) {
	c.JobLogLimit, c.PidsLimit, c.StopTimeout = f.logMiB<<20, f.pids, f.stopTimeout
}
