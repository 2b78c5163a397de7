package client

import (
	"context"
	"net/http"

	"github.com/allot-dev/allot/internal/api/wire"
)

// ReservationReport is one reservation with what was bought of it and
// what its owner used.
type ReservationReport struct {
	Reservation
	Use ReservationUse `json:"use"`
}

// ReservationUse is bought against used, in GPU-hours, up to AsOf. A nil
// field is one an open start or end leaves unknown.
type ReservationUse = wire.ReservationUse

// GetReservation returns the reservation named name with its use.
func (c *Client) GetReservation(ctx context.Context, name string) (ReservationReport, error) {
	var out ReservationReport
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/reservations/" + seg(name), out: &out})
	return out, err
}
