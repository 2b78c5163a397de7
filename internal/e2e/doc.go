// Package e2e holds the end-to-end tests of allot: they build the real
// binary, start 'allot server' on loopback with the example fleet and
// tenants, and drive it through the command line (and, where the CLI checks
// locally first, through raw HTTP) against the contract in docs/api.md.
//
// The package has no code of its own. Its tests skip, saying why, when the
// binary has no server command.
package e2e
