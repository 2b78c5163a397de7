// Package server is allot's control plane: it keeps an in-memory cache in
// step with the store, runs scheduling cycles and commits their plans, and
// offers the operations the HTTP API (package api) exposes.
//
// The store holds jobs under /jobs/<id> (instances too: instances.go leases
// whole nodes of a SKU as jobs and answers their creation after running a
// cycle), reservations created through the
// API under /reservations/<name>, inference endpoints under
// /endpoints/<name> (package endpoint, wired in endpoints.go: their
// replicas are jobs the server submits, scaled by a reconcile loop), API tokens under /tokens/<sha256
// hex of the token>, node health under /nodes/<name> and the scheduling fence at
// /sched/fence, all as JSON of this package's record types. The fleet and the
// tenancy come from files given at start; API reservations are added to the
// tenancy the core sees, and quotas set by approved quota requests or admin
// edits (/quotas/<tenant>/<region>/<series>; requests under
// /quota-requests/<id>, quota.go) replace the file's. The append-only audit
// log is /audit/<time>-<sequence> (audit.go): quota changes are written with
// their record in one transaction, other audited changes (tokens,
// reservations, policies, a job canceled by someone other than its owner)
// just after they commit. New lists the store (a page at a time, at one
// revision) and rebuilds the cache, so a restart loses nothing that was
// acknowledged; Run then follows the store's watch (relisting if it falls
// behind) and runs cycles. Of a job that ended the cache keeps only what
// listing and counting it need; showing or listing it reads the rest from
// the store (ended.go).
//
// Cycles run on events (submit, cancel, reservation change, a job's end)
// and on a tick; at most one is in flight and events arriving meanwhile
// coalesce into one more. A cycle snapshots the cache, lets the operator's
// policies adjust the core's input (policies.go: priority overrides in the
// snapshot only, never written to jobs), asks the core (package sched) for
// a Plan at the Clock's now, on a sched.Session the server keeps across
// cycles and tells only what changed (session.go; Config.CheckIncremental
// also plans from scratch and fails on any difference), and commits the
// Plan in one
// store transaction conditioned on the ModRev of every job it writes and of
// the fence: if anything it decided on changed since the snapshot (a cancel,
// another scheduler) the commit fails with store.ErrConflict and the cycle
// plans again from a fresh snapshot. Jobs submitted after the snapshot are
// not touched and do not conflict. Bound jobs become Running with their
// allocations and started_at; preempted ones go back to Queued without
// allocations and with one more preemption; resized elastic jobs start
// their next attempt with the new allocations, never leaving their
// capacity (resize.go); a pending job's reason and
// detail are written only when they change (at most Config.MaxPendingWrites
// per cycle). The core never binds a GPU twice and places gangs all or
// nothing; the single transaction keeps it so.
//
// Pipelines (pipeline.go): a job submitted with After is stored Blocked,
// its After resolved to job IDs (names of the same submission, or IDs the
// submitter may see; unknown names and cycles refuse the submission). The
// cycle never offers a Blocked job to the core; before it plans it makes
// one Queued when all its predecessors Succeeded, or Canceled
// (PredecessorFailed) when one ended otherwise (its AfterCondition may
// ask for any end, or for ends without success), in the same conditioned
// transaction as the rest of its writes.
//
// Writes acknowledged by the store are applied to the cache at once (by
// ModRev, so the watch delivering the same change later is a no-op), and no
// lock is held across a store commit: concurrent submits share the store's
// group commit.
//
// The node layer is an interface (Nodes). Simulated keeps every node as
// healthy as the fleet file says and ends a running job with a duration
// after that duration. Agents is the node layer of real hosts: a node is
// Ready once its agent registers and until it misses heartbeats for the
// node timeout (CheckHeartbeats; the next cycle requeues its jobs with
// NodeLost), and job states follow the facts agents report (ReportEvent,
// ReportCheckpoint; lifecycle.go has the transitions): a bound job is
// Preparing until every instance started, a preempted one is Preempted
// until its processes exited. NodeAssignments long-polls what a node should
// run. Agents' log chunks are kept in memory (logs.go). A job requeued
// because its node was lost waits out a back-off and, when the node stopped
// answering, its grace (fencing: lifecycle.go, docs/security.md). A node is
// drained by allot itself when jobs of several tenants fail there and on no
// other node (faildrain.go) and while its agent's health check fails
// (healthcheck.go, ReportHealth).
//
// Metrics (metrics.go, metrics_fleet.go; docs/metrics.md lists every
// series): counters and histograms are updated where their event happens
// (a committed plan's publish step, O(binds and preemptions); a heartbeat;
// an endpoint reconcile), the gauges of GPUs, queues and nodes are computed
// from the world and the cache when Prometheus scrapes. Labels come from
// configuration and fixed sets, never job IDs (but for the live replicas
// of endpoints in package endpoint's series of what gateways measured).
//
// Built-in alerts (alerts.go, alert_webhook.go; docs/alerts.md): every
// Config.AlertEvery a goroutine gathers those same metrics and runs the
// rules of deploy/prometheus/rules.yaml (package alert) on the Clock's now;
// alerts that start firing or resolve are logged and queued for
// Config.AlertWebhook, which another goroutine POSTs with retries. Neither
// touches a cycle. The alerts' state lives in memory only.
//
// Inference endpoints are package endpoint's: stored objects whose
// replicas are ordinary jobs, scaled by a reconcile loop on what gateways
// and replicas measured, rolled out and drained (its doc.go). The server
// is its Host (endpoints.go): it keeps the records in its store at their
// revisions, submits and cancels replicas as the endpoint's principal
// (endpoint:NAME), audits changes, and checks a principal's scope before
// it passes a report or a route watch on.
//
// Cost (cost.go, budget.go; docs/cost.md): when a cycle binds a job it
// fixes the new attempt's price on the attempt (package price: how it
// runs, and each instance's USD per hour at the region's utilisation as the
// cycle found it), so the bill is in the job record and reproducible.
// Cost reads every job record, as Accounting does. Budgets add up each
// budgeted tenant's month from the records every 15 s, on a scrape of
// /metrics and (at most 2 s stale) on a submit of a tenant whose budget has
// a hard stop; thresholds reached are logged and kept in memory. Jobs
// deleted past --job-retention (retention.go) leave what they ran in
// per-day roll-ups (usage_rollup.go) that cost, usage and reservation
// reports add; reservations' commitments, used and idle, are reported
// beside the rows (reservation_use.go).
package server
