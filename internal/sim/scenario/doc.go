// Package scenario simulates a scenario file — a fleet, its tenants,
// training runs and streams, arrivals of developer, batch and surge work,
// inference endpoints that replay a request trace along a daily curve,
// reservations — under one sharing strategy, and measures what each kind
// of work got.
//
// A scenario (File, read with Read or Parse; examples/scenarios/week.yaml)
// names its tenants file (partitions, tenants, quotas, strategy) and
// generates the rest from a seed and a load factor (Options.Seed,
// Options.Load): regions of clusters with node counts per SKU, scaled by
// a uniform factor (Options.Factor; guarantees given in percent scale with
// it), reservations whose windows open at offsets from the start, jobs
// (gangs included) at fixed offsets, Poisson arrival streams, training
// streams that draw their jobs' sizes and run times from a job trace
// (Philly's), and endpoints. Every problem in the file is a *spec.Error
// naming its line and field; the same file, seed and load always generate
// the same work, whatever the fleet size or strategy.
//
// Run drives one discrete-event engine (package sim/engine) with the same
// code as the server, in the server's order: each cycle's Snapshot goes
// through strategy.Apply, then the operator policies' policy.Adjust, then
// the core (every File.Cycle, or after every event). Work runs at the
// training speed of its slowest GPU (File.TrainingSpeed). Each minute,
// every endpoint's requests — the trace's pattern at the curve's rate —
// are served by the world's model of LLM serving (package sim/serving) on
// the replicas serving then (running and past their startup); the minute's
// p95 of the SLO's metric is the sample the autoscaler decides from, as the
// server's endpoint reconcile does, and replicas are submitted or stopped
// (queued first, then not serving, then the newest) — the core places them
// like any job. With Options.Elastic the training streams' jobs are
// elastic as their elastic blocks say (TrainingGen.Elastic; by default the
// gangs, up to twice their size): the core grows and shrinks them, each
// resize a restart from the last checkpoint, and a job of n instances over
// a base of n0 runs (n/n0) × scaling_efficiency^log2(n/n0) times as fast
// (engine.Scaling); the work drawn is the same as without it. The
// autoscaler keeps its own queueing model; the Result
// reports its predicted p95 over the measured one. Then the policies
// record utilisation and latency and are evaluated; a change of the
// policies that apply brings a cycle.
//
// The Result holds every strategy to the tenancy as written: SLO
// attainment per endpoint (% of minutes whose p95 over the simulated
// requests was within the SLO), guarantee violation minutes per partition
// (work the guarantee covers had been owed it for longer than
// min_run_time, as each minute's cycle left the fleet: the partition held
// less than it, and the work would have started with what the partition
// was owed taken back from the others; see checkGuarantees), reservations whose
// work started within on_time of their opening, spot GPU-hours run and
// lost to preemption, queueing per tier (mean, median, p95), training's
// queueing, completion time and goodput (work done and kept, at the
// reference GPU's speed), GPU utilisation, GPU-hours per SLO-met
// endpoint-minute, and GPU-hours and cost per tenant (priced as the server
// bills: package price, each attempt at its rate when it started, spot at
// the utilisation of its region then; cost.go).
//
// Sweep runs cases (strategies, with or without policies, hybrid without
// its overflow layer, loads) over seeds in parallel; Figures and Targets
// turn a case's runs into the measures a table prints with their
// confidence intervals (package stats). FindMinFleet runs a grid of fleet
// factors over the seeds and reports the smallest at which MinPassRate of
// them meet every target.
//
// What it does not model: network or power limits beyond the core's
// filters, replica start failures, and what docs/serving-model.md lists
// for the serving model.
package scenario
