package api

import (
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// ReservationReport is one reservation with what was bought of it and
// what its owner used, as GET /v1/reservations/{name} shows it.
type ReservationReport struct {
	Reservation
	Use ReservationUse `json:"use"`
}

// ReservationUse is bought against used (wire.ReservationUse).
type ReservationUse = wire.ReservationUse

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
	out.Pricing = string(u.Pricing)
	out.Nodes = u.Nodes
	if out.Nodes == nil {
		out.Nodes = []string{}
	}
	if u.Rate > 0 {
		out.USDPerGPUHour, out.UsedUSD = val(u.Rate), val(u.Used*u.Rate)
		if !u.OpenStart {
			out.CommittedUSD, out.IdleUSD = val(u.Bought*u.Rate), val(max(0, u.Bought-u.Used)*u.Rate)
		}
	}
	return ReservationReport{Reservation: newReservation(r), Use: out}
}
