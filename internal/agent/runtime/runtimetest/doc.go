// Package runtimetest has a container runtime for tests: Fake records
// every container the agent asks for (its image, GPUs, mounts, user and
// environment, as package runtime's Container) and runs the instance on
// the host as the job's user, its container paths mapped back onto the
// host directories mounted there, so that the agent's whole path (pull,
// start, log, checkpoints, stop, exit) runs without a container runtime
// on the machine.
package runtimetest
