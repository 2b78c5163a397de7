// Package price is allot's price table and the arithmetic of cost: what a
// node of each SKU costs per hour in each region, for each way work runs,
// and what one instance of a job accrues on it.
//
// Four ways to run, four prices (USD per node-hour):
//
//   - on-demand: the list price, for work that is neither spot nor inside
//     a reservation;
//
//   - reserved-1y and reserved-3y: for work that runs inside a capacity
//     reservation (a job whose placement names one); a reservation that
//     lasts three years or more pays the 3-year rate, any shorter one the
//     1-year rate;
//
//   - spot: for spot-class work, a floor that rises with the region's GPU
//     utilisation u (GPUs held / GPUs in the region, 0 to 1):
//
//     spot(u) = floor + (on_demand − floor) × u²
//
//     Squared, so that spot stays close to its floor while a region has
//     room (at half use it has climbed a quarter of the way) and rises
//     steeply only as the region fills, to the on-demand price when full:
//     spot is never dearer than on-demand, and the price tells spot users
//     the region is scarce before it is.
//
// A Table is built from the fleet: each SKU's catalog rates
// (model.SKU.PricePerHour, ReservedRate, SpotPrice) hold in every region,
// and an entry of the fleet file's prices: list replaces them for one SKU
// in one region. The 3-year rate defaults to the 1-year rate times
// ThreeYearFactor.
//
// An instance pays the node's rate times its share of the node: the GPUs it
// holds over the node's GPUs, fractions included (a quarter of one GPU of
// an 8-GPU node pays 1/32 of the node); on a node without GPUs its share of
// the node's CPU. On a node with GPUs it pays at least its CPU and memory at
// the SKU's prices per vCPU-hour and GiB-hour (DefaultVCPUPrice and
// DefaultMemoryPrice where unset; InstanceRate), so that CPU-only work
// there is not free. The server fixes each attempt's rates when it starts
// (model.Attempt.Pricing and Rates), so a bill does not change when
// prices or utilisation do later: cost = Σ rate × seconds / 3600.
//
// The package is pure: no I/O, no clock (internal/sched/purity_test.go
// checks it).
package price
