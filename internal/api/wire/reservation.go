package wire

import "time"

// ReservationUse is bought against used, in GPU-hours, up to AsOf (see
// server.ReservationUse for what each counts). Fields that an open start
// or end leaves unknown are null.
type ReservationUse struct {
	AsOf                time.Time `json:"as_of"`
	GPUs                int       `json:"gpus"`
	Active              bool      `json:"active"`
	StartsInHours       *float64  `json:"starts_in_hours"`
	WindowHours         *float64  `json:"window_hours"`
	ElapsedHours        *float64  `json:"elapsed_hours"`
	BoughtGPUHours      *float64  `json:"bought_gpu_hours"`
	BoughtTotalGPUHours *float64  `json:"bought_total_gpu_hours"`
	UsedGPUHours        float64   `json:"used_gpu_hours"`
	UsedPercent         *float64  `json:"used_percent"`
	Jobs                int       `json:"jobs"`
	// Pricing is the reserved rate the term buys and USDPerGPUHour that
	// rate per GPU-hour (null when the price table has none); the
	// commitment so far is BoughtGPUHours at it, of which UsedUSD went to
	// work naming the reservation and IdleUSD to nothing.
	Pricing       string   `json:"pricing"`
	USDPerGPUHour *float64 `json:"usd_per_gpu_hour"`
	CommittedUSD  *float64 `json:"committed_usd"`
	UsedUSD       *float64 `json:"used_usd"`
	IdleUSD       *float64 `json:"idle_usd"`
	// Nodes are the nodes the reservation holds in its window, or keeps
	// for its start ahead of it, in name order, as the leader's last
	// scheduling cycle chose them.
	Nodes []string `json:"nodes"`
}
