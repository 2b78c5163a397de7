// Package agent runs a GPU host for an allot server: one Agent per node
// discovers the node's GPUs (package gpu), registers them, heartbeats, and
// long-polls the node's assignments; it starts each assigned instance of an
// attempt as a process group (package launch) with allot's environment, and
// reports what the server cannot see: started, exited (exit code and
// outcome), checkpoints and log chunks.
//
// Contract with the server (docs/api.md, "Agents"):
//
//   - What runs is what the last assignments say. An instance the server no
//     longer assigns (preempted, canceled, requeued, its gang failed) is
//     stopped: SIGTERM to its group, SIGKILL after its grace. A newcomer
//     whose GPUs are still held by a stopping process waits for it to exit.
//   - Every process that ran is reported exited once, after its log has been
//     shipped. An assignment the server says was started but that this agent
//     does not run (the agent restarted) is reported exited with outcome
//     NodeLost; the server requeues the job without counting a retry.
//   - On start the agent kills the process groups a previous run of it left
//     behind (DATA/run/*.pid): it cannot wait on processes it did not start.
//   - ALLOT_CHECKPOINT_DIR is DATA/checkpoints/JOB, the same for every
//     attempt of the job on this host. A job that writes a path into the
//     file CHECKPOINT there has that path reported as its checkpoint; the
//     next attempt gets it as ALLOT_RESUME_FROM.
//   - Logs are DATA/logs/JOB/attempt-N.log (attempt-N.rank-R.log in a
//     gang), shipped in whole lines about every second.
package agent
