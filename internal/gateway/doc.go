// Package gateway is allot's request router for inference endpoints: the
// one address callers use, in front of an endpoint's replicas.
//
// The contract:
//
//   - Routes come from the API, watched: the gateway long-polls GET
//     /v1/routes (Source.Routes) and swaps its table when the version
//     changes; it never asks the server per request. A gateway holds no
//     state of its own beyond the table and its counters, so several may
//     run behind DNS or a load balancer.
//   - A request for /NAME/REST (or for the host NAME.DOMAIN with --domain)
//     goes to a replica of endpoint NAME with path /REST. An unknown name
//     is 404 and no replica is contacted. An endpoint whose access is
//     tenant needs a bearer token of its tenant (the gateway compares the
//     token's SHA-256 with the route's callers; 401 otherwise); the
//     Authorization header is removed before the request is forwarded, so
//     a replica never sees an allot token. A body over Config.MaxBody is
//     413.
//   - A replica gets requests only once its readiness check has passed (a
//     GET of the route's readiness path answered 2xx within its timeout),
//     and only while the route lists it: the server takes a replica out of
//     the route before it stops it, and waits until every gateway reports
//     that it no longer routes to it and has nothing in flight on it.
//   - Balancing: the ready replica with the fewest requests in flight,
//     ties broken from a random start, below Config.ReplicaConcurrency
//     when that is set. No ready replica is 503 with Retry-After; every
//     ready replica at its limit is 503 with Retry-After too (the caller
//     backs off rather than queueing at the gateway).
//   - A connection that fails before the request was sent (the dial) is
//     retried on another replica, at most Config.Retries times, and the
//     replica is taken out of rotation until its readiness check passes
//     again. Anything that fails after (a reset mid-response, an answer
//     that is not HTTP) is 502 and counted against that replica: the
//     request may have had effects, so it is not repeated.
//   - Responses stream: every write of the replica is flushed to the
//     caller at once (token streaming). Callers may speak HTTP/1.1 or
//     HTTP/2 (h2c on a plain listener); replicas are spoken to in
//     HTTP/1.1, straight (never through $HTTP_PROXY), with the caller's
//     Accept-Encoding as it was: the gateway asks for no compression of
//     its own, so an answer passes as the replica sent it. A request goes
//     out and its answer comes back in the goroutine that serves the
//     caller, over a kept-alive connection (package h1: no hand-over
//     between goroutines per request).
//   - Measured, not reported: per endpoint and replica the gateway counts
//     requests, errors and requests in flight, and records the latency to
//     the first byte and of the whole request in latency.Histograms. Every
//     Config.ReportEvery it posts the interval's counts to the server
//     (Source.Report), which feeds them to the autoscaler and endpoint
//     show; it also serves them as Prometheus series at /-/metrics.
//   - Serve is how a gateway meets callers (allot gateway, allot up, the
//     bench): HTTP/1.1 and h2c on one listener, the watch and the reports
//     running beside it, a bounded drain of requests in flight at the end.
//
// What a gateway costs is measured by Bench (allot bench gateway): the
// same open-loop load straight to a replica and through a gateway,
// alternating, from one load generator (Compare), and the difference of
// their percentiles. The gateway runs in the bench's process; the replica
// and the generator run in it too, or elsewhere (in processes of their own:
// BenchConfig.Replica and Load).
package gateway
