// Package shim supervises one instance of an attempt for the node agent, as
// slurmstepd does for slurmd and containerd-shim for kubelet: the job's
// parent is the shim, not the agent, so the agent may exit, be upgraded and
// start again while the job runs on, and its next run adopts the job.
//
// The agent starts one shim per instance (Start): its own executable,
// re-executed as the hidden 'allot agent shim' (/proc/self/exe, so an
// upgrade that replaced the file on disk does not mix versions), in a
// session of its own, working in /, its output on /dev/null (whoever reads
// the agent's output to its end must not wait for a shim), no parent-death
// signal, and, where the agent tracks jobs in cgroups, in the cgroup
// CGROUP2/allot/NODE-H/shims beside the instances' own: outside the job's
// cgroup, which is killed whole when the job ends, and outside the agent's,
// which a service manager may kill whole when it stops the agent. Where the
// kernel refuses that cgroup, the shim stays in the agent's (then run the
// agent's unit with KillMode=process). The agent writes the shim's Spec on
// its standard input; the shim starts the job with package launch (the
// job's credential, cgroup or process group, environment, working
// directory, pids limit, and log with its limit) and answers on file
// descriptor 3 with the job's PID and start time, or with why it could not
// start it. From then on the shim:
//
//   - copies the job's output into its log (launch's copier runs in the
//     shim, so the job's pipe outlives the agent);
//   - waits for the job, kills what its leader left, writes how it ended
//     (Exit) atomically to Spec.Exit, and exits. A job that could not start
//     has an Exit too: exit code 127 and the reason in StartError;
//   - stops the job on the agent's order: the agent writes an Order (stop
//     now, kill at Deadline) to Spec.Order and sends the shim SIGUSR1. The
//     shim also reads the file at every tick, so it obeys an order whose
//     signal was lost, or one that the agent's next run wrote. A later order
//     may bring the deadline nearer, never push it back. SIGTERM sent to the
//     shim itself (the host shuts down) stops the job with its grace, as a
//     fence;
//   - stops the job when its time-out passes (launch), outcome TimedOut;
//   - fences the job itself (Exit.Fenced) when Spec.Lease has not changed
//     for Spec.NodeTimeout: the agent renews the lease at every heartbeat
//     the server answers, so a shim whose agent has been gone (or cut off)
//     for the node timeout, after which the server runs the job elsewhere,
//     stops it (SIGTERM, its grace, SIGKILL). The shim measures that time on
//     its own monotonic clock, from when it last saw the lease change.
//     Without a node timeout a shim never fences its job.
//
// Supervise runs the same supervisor as a goroutine of the agent's own
// process, for an agent whose jobs end with its process (allot up): the
// same files and orders, without the exec of the whole program per job.
//
// The files live in the agent's DATA/state (0700): only root or the agent's
// user can write them, no job. The agent that started a shim is its parent
// and reaps it, but needs nothing of its wait status: a later run of the
// agent, which is not its parent, attaches to it by its PID and start time
// (Attach) and learns everything from Spec.Exit.
package shim
