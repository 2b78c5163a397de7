// Package model holds allot's domain types and their validation: the SKU
// catalog, the fleet (regions, clusters, leaf groups, racks, nodes, GPUs),
// tenants, partitions, quotas, capacity reservations, priority classes, jobs
// and their lifecycle.
//
// The package uses the standard library only and performs no I/O. Units are
// fixed across allot: GPU capacity in milli-GPU (1000 = one whole GPU), CPU
// in milli-cores, memory in MiB, power in watts, prices in US cents per hour.
// Validate methods return a *FieldError naming the offending field, so that
// readers (package spec) can point a person at the file and line.
package model
