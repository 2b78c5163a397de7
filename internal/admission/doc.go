// Package admission decides, when a job is submitted, whether it could ever
// run as written — not whether it can run now.
//
// It asks the scheduling core what it says of the job alone on the ideal
// fleet: every node Ready, nothing running, no reservations (they come and
// go; they never make a job impossible). What the core answers there cannot
// change while the fleet and the tenancy stay as they are, so these answers
// mean never:
//
//   - SkuNotAvailable: no SKU in the allowed regions has the GPU model and
//     shape (a GPU model or region the fleet does not have is named, with
//     the nearest name it has: h100 → H100), or the whole fleet has room
//     for fewer instances than the job asks for (the core's
//     InsufficientCapacity on the ideal fleet); the detail then says the
//     most that exists, region by region;
//   - ResidencyForbidden: capable nodes exist only outside the residency;
//   - TopologyUnsatisfiable: no cluster has the fabric the job asks for, or
//     no one cluster holds the whole gang; the detail names the clusters
//     that have the fabric and their GPU models;
//   - QuotaExceeded: the job alone exceeds its tenant's hard quota
//     everywhere it could run.
//
// A job that names a reservation of its tenant's is then asked about on
// the reservation's nodes alone (Count nodes of its SKU in its region, as
// sbatch --reservation refuses a job larger than the reservation): one
// instance the SKU cannot hold, more instances than Count nodes hold, a
// region placement.regions leaves out, or node lists that rule out every
// node of the SKU there are refused, naming the field at fault.
//
// Every other answer (a job that merely must wait) is admitted. The server
// asks at submit and allot plan asks offline, through Check, so the two
// give the same reason and detail for the same job.
//
// The package is pure like the core: no I/O, no clock, no goroutines.
package admission
