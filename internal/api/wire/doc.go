// Package wire holds the JSON bodies of the agent API, shared by the server
// side (package api) and the client (package client) so the contract is
// written once. It imports nothing of allot.
package wire
