// Package cutstock solves the cutting-stock linear program over GPU
// fractions (Gilmore and Gomory): the fewest GPUs, fractionally relaxed,
// that hold given counts of one-GPU fractions of each size, and the dual
// price of each size.
//
// A pattern is a multiset of sizes that fits one GPU (at most 1,000 milli
// in all). The primal chooses how many GPUs follow each pattern; its dual
// gives each size s a price u_s ≥ 0, the share of a GPU a fraction of size
// s is worth, so that no pattern is worth more than one GPU. The solver
// works on the dual by cutting planes: solve with the patterns found so
// far (gonum's simplex), find the pattern of largest value under the
// prices (a bounded knapsack over milli), add it, and stop when none is
// worth more than one GPU. After any round the value of the counts under
// the prices, divided by that largest pattern value, bounds the primal
// from below (Farley), so a solve cut short still returns a valid bound.
//
// Two users: the fragmentation experiment's packing ceiling (internal/sim/
// frag), which bounds what any arrangement of the fractions a run placed
// could allocate, and allot's placement policy (internal/score), which
// places fractions where they keep to the LP's plan: the prices say which
// fractions belong together on one GPU.
//
// The package does no I/O and keeps no global state; a Solver serves one
// goroutine.
package cutstock
