package api

import (
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// ReservationReport is one reservation with what was bought of it and
// what its owner used, as GET /v1/reservations/{name} shows it.
type ReservationReport struct {
	Reservation
	Use ReservationUse `json:"use"`
}

// ReservationUse is bought against used, in GPU-hours, up to as_of (see
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

func newReservationReport(r model.Reservation, u server.ReservationUse) ReservationReport {
	// Unrounded, so that a client can check one figure against the others;
	// the CLI prints two decimals.
	val := func(v float64) *float64 { return &v }
	hours := func(d time.Duration) *float64 { return val(d.Hours()) }
	out := ReservationUse{AsOf: u.At.UTC(), GPUs: u.GPUs, Active: u.WindowActive, UsedGPUHours: u.Used, Jobs: u.Jobs}
	if u.StartsIn > 0 {
		out.StartsInHours = hours(u.StartsIn)
	}
	if !u.OpenStart && !u.OpenEnd {
		out.WindowHours, out.BoughtTotalGPUHours = hours(u.Window), val(u.BoughtTotal)
	}
	if !u.OpenStart {
		out.ElapsedHours, out.BoughtGPUHours = hours(u.Elapsed), val(u.Bought)
	}
	if u.HasPercent {
		out.UsedPercent = val(u.UsedPercent)
	}
	return ReservationReport{Reservation: newReservation(r), Use: out}
}
