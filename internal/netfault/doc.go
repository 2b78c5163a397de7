// Package netfault is a TCP proxy for fault tests: it forwards a loopback
// port to a target address and, on command, delays what it forwards,
// drops every connection (and refuses new ones), or holds connections open
// while forwarding nothing, as a partitioned network does (the peer sees a
// half-open connection: no error, no data). Heal returns it to plain
// forwarding; connections a fault dropped stay dropped, half-open ones
// resume. It is used by the control plane's fault tests between allot
// servers and etcd; nothing outside tests uses it.
package netfault
