// Package scenario simulates a scenario file — a fleet, its tenants,
// training runs, arrivals of developer, batch and surge work, inference
// endpoints with a daily request curve, reservations — under one sharing
// strategy, and measures what each kind of work got.
//
// A scenario (File, read with Read or Parse; examples/scenarios/week.yaml)
// names its tenants file (partitions, tenants, quotas, strategy) and
// generates the rest from its seed: regions of clusters with node counts
// per SKU, scaled by a uniform factor (Options.Factor; guarantees given in
// percent scale with it), reservations whose windows open at offsets from
// the start, jobs (gangs included) at fixed offsets, Poisson arrival
// streams between two offsets, and endpoints. Every problem in the file is
// a *spec.Error naming its line and field; the same file and seed always
// generate the same work, whatever the fleet size or strategy.
//
// Run drives one discrete-event engine (package sim/engine) with the same
// code as the server, in the server's order: each cycle's Snapshot goes
// through strategy.Apply, then the operator policies' policy.Adjust, then
// the core. Each minute, as the server's endpoint reconcile does, every
// endpoint's arrival rate (the curve, with noise) and serving replicas
// (running and past their startup, the model loaded) give the p95 latency
// of the autoscaler's own queueing model (autoscale.PredictP95); that
// minute is a sample of the endpoint's window, autoscale's Decide sets the
// replica count, and replicas are submitted or stopped (queued first, then
// not serving, then the newest) — the core places them like any job. Then
// the policies record utilisation and latency and are evaluated; a change
// of the policies that apply brings a cycle.
//
// The Result holds every strategy to the tenancy as written: SLO
// attainment per endpoint (% of minutes with p95 within the SLO),
// guarantee violation minutes per partition (queued work that fits the
// partition's unused guarantee in one pool and one cluster of it, and has
// waited longer than min_run_time; see checkGuarantees), reservations whose work started within on_time of their
// opening, spot GPU-hours run and lost to preemption, queueing delay per
// tier, GPU utilisation, and GPU-hours and cost per tenant (priced as the
// server bills: package price, each attempt at its rate when it started,
// spot at the utilisation of its region then; cost.go). FindMinFleet bisects the
// fleet factor for the smallest fleet that meets every target.
//
// What it does not model: network or power limits beyond the core's
// filters, replica start failures, and requests themselves (latency is the
// model's, per minute).
package scenario
