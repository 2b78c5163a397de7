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
}
