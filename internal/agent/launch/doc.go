// Package launch runs one attempt of a job on a host: a process group with
// the GPUs and environment allot assigned, its output in a per-attempt log
// file, stopped with SIGTERM and, after the job's grace, SIGKILL, and killed
// when it outlives its time-out. It knows nothing of the server; the agent
// drives it.
package launch
