// Package model holds allot's domain types and their validation: the SKU
// catalog, the fleet (regions, clusters, leaf groups, racks, nodes, GPUs),
// tenants (with monthly budgets), partitions, quotas, capacity reservations,
// per-region prices, priority classes, jobs and their lifecycle (an attempt
// keeps the price it started at).
//
// The package uses the standard library only and performs no I/O. Units are
// fixed across allot: GPU capacity in milli-GPU (1000 = one whole GPU), CPU
// in milli-cores, memory in MiB, power in watts, prices in US dollars per
// node-hour.
// Validate methods return a *FieldError naming the offending field, so that
// readers (package spec) can point a person at the file and line.
package model
