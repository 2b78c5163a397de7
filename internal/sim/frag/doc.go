// Package frag runs the fragmentation experiment of the FGD paper (ATC'23)
// on allot's scheduling core: pods of an openb trace arrive one at a time,
// inflated to a multiple of the cluster's GPU capacity, and each is placed
// by sched.Chooser with one policy's scorer, or dropped when it fits
// nowhere. Nothing ever leaves. The experiment records the share of GPU
// capacity allocated against the share that has arrived.
//
// The arrival order follows data/traces/FGD-PROTOCOL.md exactly: one
// math/rand (v1) source per seed, one discarded Int, a Shuffle of the
// name-sorted pods, Intn draws with replacement while the inflated total
// (counted, like the paper, in per-GPU milli) stays within bounds, then a
// Perm of the name-sorted nodes that ranks them for tie-breaks.
//
// Two reports explain a run beside the figures: the packing ceiling
// (ceiling.go: the most any arrangement of the fractions placed could
// allocate, from the cutting-stock LP of package cutstock) and where the
// free capacity lies at one arrived % (free.go: partly used GPUs grouped
// by the fractions they hold).
//
// Seeds run in parallel, each on its own node copies, scorer and random
// source, so a seed's result does not depend on the number of workers.
package frag
