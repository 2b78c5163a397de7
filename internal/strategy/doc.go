// Package strategy turns a fleet's sharing strategy (model.Strategy, the
// strategy field of tenants.yaml) into what the scheduling core is given.
//
// Contract: Apply is a function of a Snapshot and the cycle's time. It returns a Snapshot whose
// Tenancy and Jobs express the strategy with the means the core already has
// (guarantees with borrowing and lending limits, priority classes), and
// never changes the Snapshot it is given: a job it changes is a copy. It
// does no I/O, reads no clock and starts no goroutine. The server (each
// cycle, before operator policies) and the simulator (package
// sim/scenario, in the same order) call it, so both schedule the same
// thing. docs/strategies.md states what each strategy means; this package
// is that text in code:
//
//   - static: every partition that has a guarantee gets, in every pool
//     (region × GPU model), a borrow_limit of the GPUs its tenants'
//     reservations active at the cycle's time hold there (0 without any)
//     and lend_limit 0 on each
//     guarantee: it runs only on its own guaranteed and reserved GPUs and
//     lends none of them while idle. Partitions without any guarantee and tenants without a
//     partition share what no partition is guaranteed.
//   - dynamic: every partition's guarantees are dropped; the fleet is one
//     pool in which priority classes, operator policies and preemption
//     decide.
//   - hybrid: the tenancy as written (guarantees, lent while idle and
//     reclaimed by preemption), plus an overflow layer: non-urgent work —
//     labelled workload: batch or workload: developer (on the job, its
//     tenant or its partition) of a tenant that is not a customer — runs
//     in the spot class, so it takes idle
//     capacity in any region it may use (reserved nodes included) and is
//     the first evicted when anyone needs it.
//
// Without a strategy (the field left out) the tenancy is used as written:
// hybrid's base and elastic layers, no overflow. Reservations and quotas
// are contracts and limits, not sharing: every strategy keeps them.
package strategy
