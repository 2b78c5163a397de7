// Package launch runs one instance of an attempt on a host: a process with
// the GPUs and environment allot assigned and nothing else of the agent's
// (Environ), as the user the agent chose (Spec.Credential), its output
// copied into its log file up to Spec.LogLimit (logcap.go),
// tracked with everything it forks (a cgroup v2 directory where the host
// has one, else its process group: Tracker), stopped with SIGTERM and,
// after the job's grace, SIGKILL, and killed when it outlives its
// time-out. What the leader leaves behind when it exits is killed. It
// knows nothing of the server. It runs inside the instance's shim
// (package shim), which the agent drives: the copy of the output and the
// wait for the process live as long as the shim, not the agent.
package launch
