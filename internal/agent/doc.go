// Package agent runs a GPU host for an allot server: one Agent per node
// discovers the node's GPUs (package gpu), registers them, heartbeats, and
// long-polls the node's assignments; it starts each assigned instance of an
// attempt (under a shim: packages shim and launch) and reports what the
// server cannot see: started, exited (exit code and outcome), checkpoints
// and log chunks.
//
// Contract with the server (docs/api.md, "Agents"):
//
//   - What runs is what the last assignments say. An instance the server no
//     longer assigns (preempted, canceled, requeued, its gang failed) is
//     stopped: SIGTERM to its processes, SIGKILL after its grace. A newcomer
//     whose GPUs are still held by a stopping process waits for it to exit.
//     Instances are known by job, attempt and rank, so a resize of an
//     elastic job is a new attempt like any other: the old attempt's ranks
//     get stop orders (reason Resized) with their grace, and the server
//     hands out the new attempt's ranks, with the new ALLOT_WORLD_SIZE,
//     ALLOT_RANK and ALLOT_MASTER_ADDR, once every old rank's exit is
//     reported.
//   - Every process that ran is reported exited once, after its log has been
//     shipped. An assignment the server says was started but of which
//     nothing runs here (the host restarted, its shim was killed) is
//     reported exited with outcome NodeLost; the server requeues the job
//     without counting a retry.
//   - Instances run under shims (package shim): the agent re-executes
//     itself as 'allot agent shim' for each one, and the shim, not the
//     agent, is the job's parent, holds its log and writes how it ended
//     to DATA/state. An agent's exit therefore ends no job by itself.
//     (Config.InProcess runs the same supervisor as a goroutine of the
//     agent instead, for allot up, whose jobs end with its process: no
//     exec of the program per job, and nothing to adopt after a crash.)
//     Config.OnExit says what it does: OnExitLeave (what 'allot agent'
//     does by default, as slurmd and kubelet do) leaves every instance
//     running, one log line each; OnExitStop (the zero value, and what
//     allot up's in-process agents use: the whole system goes down)
//     stops every one, SIGTERM, SIGKILL after its grace or StopTimeout,
//     and returns once every report of their ends was delivered (the last
//     log, the checkpoint a job saves on SIGTERM, the exit), on a context
//     detached from Run's and bounded by StopTimeout and reportSlack. An
//     instance stopped for the agent's own reasons (its exit, a server out
//     of reach) is reported with outcome Stopped, whatever its exit code:
//     the server requeues the job from its checkpoint without counting a
//     retry or a lost attempt (and ignores news of an attempt it already
//     gave up).
//   - Adoption (adopt.go): an agent that starts reads DATA/state before it
//     registers (survey, state.go). An instance whose shim still runs
//     (by PID and start time), or whose shim wrote how it ended, is kept;
//     the processes of any other record, and whatever lies in a cgroup
//     of the agent's or among its shims that no kept record names, are
//     killed then (fencing). The agent registers, and on its first
//     assignments adopts every kept instance the server still has here,
//     to run or to stop: it tracks the shim, ships the log on from the
//     offset the server says it has (never more than the last MiB again),
//     watches the checkpoints from the last marker reported, keeps a stop
//     order's deadline (the order lies in DATA/state with it), and reports
//     the exit the shim recorded; adopted instances hold their GPUs, so a
//     new instance waits for one that stops. It fences the others, which
//     the server requeued after its node timeout: the shim kills the job
//     on order, or the agent kills its processes and the shim; nothing is
//     reported.
//   - Fencing without an agent: the agent renews DATA/state/lease at every
//     heartbeat the server answers, and a shim whose lease has not changed
//     for Config.NodeTimeout stops its job (SIGTERM, its grace, SIGKILL),
//     which its agent's next run reports NodeLost, so a job whose agent
//     never comes back does not run on while the server runs it elsewhere.
//     Without a node timeout, shims never do: such a job runs until an
//     agent comes back (and adopts or fences it) or it ends.
//   - An agent that has not reached the server (network errors, 5xx) for
//     Config.NodeTimeout stops every instance: the server requeues them
//     after its node timeout and their grace. A heartbeat answered 409
//     (the server forgot the node) stops every instance before the agent
//     registers again.
//   - The job's checkpoint directory (ALLOT_JOB_CHECKPOINT_DIR) is
//     WORK/jobs/JOB/checkpoints, the same for every attempt of the job on
//     this host; ALLOT_CHECKPOINT_DIR is that directory for a job of one
//     instance and its rank-R for rank R of a gang, so that each rank
//     saves its own part under a marker of its own. A job that writes a
//     path into the file CHECKPOINT there (relative paths are relative to
//     the directory) has that path reported, with this node as where it
//     lies, when it resolves inside the directory: every save the attempt
//     makes (a rewrite of the same name too, by the marker's time), never
//     a marker an earlier attempt left; a gang's rank reports its part of
//     the save named by the path relative to its directory, which the
//     server counts once every rank's part is in (docs/checkpoints.md).
//     The next attempt gets ALLOT_RESUME_FROM as the server says, every
//     rank its own part or none (Assignment.NoResume says why, into the
//     log): a URL (s3://…) as it is, and a path only when it lies inside
//     the job's checkpoint directory and exists on this host
//     (checkpoint.go). The scheduler sends a requeued job back to the node
//     of its checkpoint, each rank to the node of its part, when it can.
//     With Config.CheckpointRoot (a file system every host mounts) the
//     job's directory is ROOT/JOB instead, its checkpoints are reported
//     without a node, and an attempt on any host resumes from them; there
//     rank 0 also reports a marker in the job's directory, as the
//     checkpoint of every rank (a DeepSpeed or torch.distributed.checkpoint
//     directory that all ranks write).
//   - Logs are DATA/logs/JOB/attempt-N.log (attempt-N.rank-R.log in a
//     gang), shipped in whole lines every Config.ShipEvery (250 ms by default,
//     so that a line reaches 'allot job logs -f' within a second).
//   - WORK/jobs/JOB and DATA/logs/JOB are removed Config.KeepJobFiles (7
//     days) after the job's last instance here ended (sweep.go), unless
//     the server says the job has not ended and may come back here (it ran
//     here or its checkpoint is here); when the server cannot say, a sweep
//     removes nothing.
//   - With Config.HealthCheck, the operator's command runs at start and
//     every Config.HealthCheckEvery (health.go), as the agent's user and in
//     the agent's environment, never a job's; each result is reported
//     (POST /v1/nodes/NODE/health): a failure drains the node, the next
//     pass resumes it. Config.GPUHealth (NVML with --gpus auto) is read at
//     the same times, and its problems count as a failure.
//
// Contract with jobs, which are hostile code (built in sandbox.go):
//
//   - Environment: launch.BaseEnv (PATH of the system's bin directories,
//     LANG=C.UTF-8), HOME set to the attempt's directory, the operator's
//     Config.JobEnv, then the job's own env, then allot's ALLOT_* and CUDA_*
//     variables. Nothing of the
//     agent's environment: no token, no host secret.
//   - Credentials: the agent takes its token from a file or $ALLOT_TOKEN
//     (then unsets it), never argv. Give a host its node's token (allot
//     token create --node NAME), not the admin token.
//   - Directories: DATA (0700) is the agent's alone. WORK and WORK/jobs are
//     the agent's, 0711: a job can pass through but not list them. WORK/jobs
//     /JOB (0700, the job's user) holds checkpoints/ and a fresh attempt-N
//     (attempt-N.rank-R in a gang), the process's working directory. The
//     log is opened by the job's shim, which copies the job's stdout and
//     stderr (a pipe) into it.
//   - Users: as root, every job runs under a dynamic uid and gid of its own
//     (Config.UIDs, no passwd entry, no supplementary groups), the same for
//     all its attempts and ranks here, so its next attempt reads its
//     checkpoints and no other job can; or, with Config.RunAs, all jobs as
//     one user (weaker: they share a uid). Not root, jobs run as the agent's
//     user and can read its files and signal it: the agent warns.
//     GPU device nodes (/dev/nvidia*) are usually mode 0666: any uid may
//     open them, which is what lets jobs use their GPUs; CUDA_VISIBLE_DEVICES
//     is not an access control.
//   - Processes: each instance starts inside a cgroup v2 of its own
//     (CGROUP2/allot/NODE-H/TOKEN, H naming DATA and TOKEN random; created
//     with CLONE_INTO_CGROUP, so nothing forks before it is tracked);
//     whatever is left in it when the leader exits is killed. Its shim
//     lives in CGROUP2/allot/NODE-H/shims, outside the job's cgroup and the
//     agent's own. Without a writable cgroup v2 the instance is a process
//     group, its shim stays in the agent's cgroup, and the last instance of
//     a job ending also kills every process of its dynamic uid, which
//     catches setsid and double-forked children. A job inherits no
//     descriptor but its standard input (/dev/null) and its log.
//   - Images (container.go): a job that names an image has it pulled
//     (Config.Runtime, package runtime) before its instance starts; a
//     pull that fails is reported as outcome ImagePullFailed with the
//     runtime's message. The instance then runs as the runtime's
//     process under its shim like a bare command, and the container gets
//     the same uid, its GPUs alone, its attempt directory at
//     /allot/work and the job's checkpoint directory at
//     /allot/checkpoints (a marker naming a path there is read on the
//     host), the mounts it asks for under Config.MountAllow, and the
//     environment above with the container's paths, from a file in
//     DATA/state that only the agent reads. The container is removed
//     when the instance ended or is fenced.
package agent
