// Package cli implements the allot command line. Every command is a thin
// client: of the HTTP API for the live system, or of the core and the
// simulator in-process for offline work (plan, sim, trace). Run is the
// entry point; output goes to the writers it is given, so tests drive
// commands directly.
package cli
