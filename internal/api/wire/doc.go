// Package wire holds the JSON bodies that the server side (package api)
// and the client (package client) share exactly, so the contract is
// written once: the agent API's bodies, nodes, SKUs, tokens, alerts, quota
// requests, the audit log and a reservation's use. Bodies whose client form differs (times that
// may be null, counts) stay with each side. It imports nothing of allot.
package wire
