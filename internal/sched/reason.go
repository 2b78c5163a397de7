package sched

import "fmt"

// Reason says why a job is pending or was preempted.
type Reason int

const (
	ReasonNone Reason = iota
	// Pending reasons, roughly in the order a job meets them.
	UnknownTenant         // the job's tenant is not defined
	SkuNotAvailable       // no SKU in the allowed regions can ever hold the job
	ResidencyForbidden    // capable nodes exist only outside the allowed residency
	ReservationNotActive  // the named reservation does not exist or is outside its window
	NoReadyNodes          // capable nodes exist but none is Ready
	NodesExcluded         // the job's placement.nodes and exclude_nodes rule out every capable node
	QuotaExceeded         // the tenant's hard quota leaves too little room
	BorrowLimitReached    // beyond the guarantee, and borrowing is capped or nothing is lendable
	PowerCapped           // capacity is free but the rack or region power cap forbids using it
	InsufficientCapacity  // not enough free capacity on any allowed node
	TopologyUnsatisfiable // enough capacity, but not on one fabric for the gang
	AwaitingPreemption    // victims exist but are protected for now
	// Preemption reasons.
	HigherClass      // evicted for a job of a higher priority class
	ReclaimGuarantee // evicted because its partition borrowed what another is guaranteed
	ReservationOwner // evicted from a reservation whose owner needs it
	BetterPriority   // evicted for its own tenant's job of a better priority value (Config.PriorityGap)
	HeldNodes        // evicted from nodes held for a job that waited, having started there after the hold began (Config.HoldAfter)
	GPUWorkFirst     // CPU-only work evicted from a GPU node for work that needs its GPUs
	// Resize reasons (a shrink takes a preemption reason).
	IdleCapacity // an elastic job grown into capacity nothing else used in the cycle
)

var reasonNames = [...]string{
	ReasonNone:            "",
	UnknownTenant:         "UnknownTenant",
	SkuNotAvailable:       "SkuNotAvailable",
	ResidencyForbidden:    "ResidencyForbidden",
	ReservationNotActive:  "ReservationNotActive",
	NoReadyNodes:          "NoReadyNodes",
	NodesExcluded:         "NodesExcluded",
	QuotaExceeded:         "QuotaExceeded",
	BorrowLimitReached:    "BorrowLimitReached",
	PowerCapped:           "PowerCapped",
	InsufficientCapacity:  "InsufficientCapacity",
	TopologyUnsatisfiable: "TopologyUnsatisfiable",
	AwaitingPreemption:    "AwaitingPreemption",
	HigherClass:           "HigherClass",
	ReclaimGuarantee:      "ReclaimGuarantee",
	ReservationOwner:      "ReservationOwner",
	BetterPriority:        "BetterPriority",
	HeldNodes:             "HeldNodes",
	GPUWorkFirst:          "GPUWorkFirst",
	IdleCapacity:          "IdleCapacity",
}

func (r Reason) String() string {
	if r >= 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// MarshalText writes the reason's name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a reason's name.
func (r *Reason) UnmarshalText(b []byte) error {
	for i, n := range reasonNames {
		if n == string(b) {
			*r = Reason(i)
			return nil
		}
	}
	return fmt.Errorf("unknown reason %q", b)
}
