package wire

// InstanceRequest is the body of POST /v1/instances: Count (default 1)
// whole nodes of SKU in Region, leased until deleted.
type InstanceRequest struct {
	Name   string `json:"name,omitempty"`
	Tenant string `json:"tenant,omitempty"`
	SKU    string `json:"sku"`
	Region string `json:"region"`
	// Count is a pointer so that an explicit 0 is refused, not taken for
	// the default.
	Count *int `json:"count,omitempty"`
	// Priority is "spot", "standard" (the default) or "reserved",
	// optionally with ":N".
	Priority string `json:"priority,omitempty"`
	// Grace is the eviction notice as a Go duration ("30s", the default).
	Grace string `json:"grace,omitempty"`
	// Wait queues the instance when nothing is free now, instead of
	// refusing it with AllocationFailed.
	Wait bool `json:"wait,omitempty"`
}
