// Package h1 is a client transport of HTTP/1.1 over kept-alive
// connections that sends a request and reads its answer in the goroutine
// that asked: it writes the request, reads the answer's head and hands the
// connection to the answer's body, which puts it back when read to its
// end. allot's gateway speaks to replicas with it.
//
// Why not http.Transport: a connection of http.Transport has a goroutine
// that writes and one that reads, and a request passes between them and
// the caller over channels, hand-overs that each wake a goroutine (often a
// thread) per request. On the two cores `allot bench gateway` measures,
// the Go scheduler's wake-ups were a quarter of the gateway's CPU, and the
// tail of its latency waited for them. Requests this transport does not
// carry the common way go to Config.Fallback: TLS, protocol upgrades and
// Expect: 100-continue.
//
// What http.Transport's reader also gave, this one does itself: a
// connection the server closed while idle is found before it is reused
// (alive: a peek that does not wait), and a request on a reused
// connection that the server closed before answering anything is sent
// again on another when that is safe (an idempotent method, and no body
// or one it can get again); otherwise the caller gets ErrStale. The caller leaving (its context)
// ends the exchange at once, and an answer's body closed before its end
// closes its connection: reading the rest of a stream nobody wants could
// take for ever.
package h1
