package client

import (
	"context"
	"net/http"
)

// ReservationReport is one reservation with what was bought of it and
// what its owner used.
type ReservationReport struct {
	Reservation
	Use ReservationUse `json:"use"`
}

// ReservationUse is bought against used, in GPU-hours, up to AsOf. A nil
// field is one an open start or end leaves unknown.
type ReservationUse struct {
	AsOf                Time     `json:"as_of"`
	GPUs                int      `json:"gpus"`
	Active              bool     `json:"active"`
	StartsInHours       *float64 `json:"starts_in_hours"`
	WindowHours         *float64 `json:"window_hours"`
	ElapsedHours        *float64 `json:"elapsed_hours"`
	BoughtGPUHours      *float64 `json:"bought_gpu_hours"`
	BoughtTotalGPUHours *float64 `json:"bought_total_gpu_hours"`
	UsedGPUHours        float64  `json:"used_gpu_hours"`
	UsedPercent         *float64 `json:"used_percent"`
	Jobs                int      `json:"jobs"`
}

// GetReservation returns the reservation named name with its use.
func (c *Client) GetReservation(ctx context.Context, name string) (ReservationReport, error) {
	var out ReservationReport
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/reservations/" + seg(name), out: &out})
	return out, err
}
