// Package endpoint is allot's inference endpoints: a named service whose
// replicas are ordinary jobs, scaled by an autoscaler fed by what the
// gateways measured, rolled over to a new template without a gap, and
// drained before a replica stops. The server (internal/server) wires it:
// it implements Host, the package's only way out, and offers the Book's
// operations to the API with its principals' checks.
//
// # The contract with the server
//
// Host (host.go) names all the package needs: Records (the endpoint's
// record in the store, written only at the revision it was read at, with
// its metrics token), Jobs (the replica jobs: read them, submit one, cancel
// one, and the checks a submit would meet), Fleet (tenants, a node's GPU
// model and address, the token hashes that may call an endpoint), the
// server's clock and its audit log. A Caller is who asks (the server's
// principal): Sees says which tenants' endpoints it may see and change.
// Refusals are refusal.Error, as the server's own; any other error is a
// failure. The package never imports the server (it cannot: the server
// imports it), and a fake Host drives it in the tests (host_test.go).
//
// # Endpoints and replicas
//
// An endpoint is stored under /endpoints/NAME (record.go) with its spec,
// its desired replica count, the autoscaler's State and its last
// MaxEvents events. Its replicas are jobs of one instance that the Book
// submits through Jobs.Submit, labelled LabelEndpoint: NAME, workload:
// inference (the core keeps them off InfiniBand nodes while others fit)
// and LabelTemplate, and carrying the endpoint's metrics token in their
// env (EnvEndpointToken). A job counts as a replica of an endpoint only
// when it is of the endpoint's tenant, has the label and carries the
// endpoint's token, so neither another tenant's job nor a replica of an
// earlier endpoint of the same name is taken for one.
//
// # The reconcile loop
//
// Run reconciles every Config.Interval and soon after a change (Kick).
// Book.Reconcile (reconcile.go) takes each endpoint in turn, under the
// Book's lock, in numbered steps: replace replicas that ended, measure
// (the reports become one autoscale.Sample of the endpoint's window),
// decide (autoscale.Params.Decide returns the desired count), act (submit
// or stop replicas, a rollout step), persist (the record, at its
// revision; a conflict leaves the change to the next reconcile).
//
// # What the autoscaler reads
//
// Replicas report their own load to POST /v1/endpoints/{name}/metrics
// with the endpoint's token (Book.Report, report.go). Gateways report
// what they measured of every endpoint and replica to POST
// /v1/gateway/reports (Book.ReportGateway, gateway.go): requests, errors,
// in flight, latency histograms of the whole request and to the first
// byte. Both are kept in memory only; gateways and replicas report again
// within seconds of a restart. A gateway's report counts over the time
// since its previous one. The gateways' measurement is the autoscaler's
// primary signal (their requests/s and p95 over the last 10 s their
// reports cover), the replicas' reports an extra one (their utilisation,
// their p95 while the gateways measured nothing, their rate when the
// gateways carried less than half of it over the same 10 s). What the
// gateways measured over the last minute is shown in Status.Gateway and
// exported on the server's /metrics when Prometheus scrapes, per
// endpoint, per replica that has not ended and, for what each gateway
// says of a replica, per gateway (metrics.go).
//
// # Rollout, drain, back-off
//
// What shapes a replica (command, env, resources, priority, placement and
// the last restart) is the endpoint's template; a change of it is rolled
// out as a Kubernetes Deployment does, within the endpoint's max_surge
// and max_unavailable, an old replica stopping only once a new one serves
// (rollout.go). Update, Restart and Undo begin a rollout (update.go). A
// running replica to be stopped (a scale-in, a rollout) is first taken out
// of the gateways' routes (Book.Routes, routes.go, a long poll) and
// stopped once every gateway says it no longer routes to it and has
// nothing in flight on it, or after DrainTimeout (drain.go). Replicas that
// fail hold the endpoint in a crash-loop back-off, 10 s doubling to 5
// minutes, kept in its record (backoff.go).
package endpoint
