// Package launch runs one instance of an attempt on a host: a process with
// the GPUs and environment allot assigned and nothing else of the agent's
// (Environ), as the user the agent chose (Spec.Credential), its output
// copied into a log file the agent opened up to Spec.LogLimit (logcap.go),
// tracked with everything it forks (a cgroup v2 directory where the host
// has one, else its process group: Tracker), stopped with SIGTERM and,
// after the job's grace, SIGKILL, and killed when it outlives its
// time-out. What the leader leaves behind when it exits is killed. It
// knows nothing of the server; the agent drives it.
package launch
