package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Reservation holds Count nodes of a SKU in a region for its owner between
// Start and End.
type Reservation struct {
	Name   string `json:"name,omitempty"`
	Owner  string `json:"owner,omitempty"`
	SKU    string `json:"sku"`
	Region string `json:"region"`
	Count  int    `json:"count"`
	Start  Time   `json:"start,omitzero"`
	End    Time   `json:"end,omitzero"`
}

// CreateReservation creates r. A tenant token owns what it creates; an
// admin token must name the owner.
func (c *Client) CreateReservation(ctx context.Context, r Reservation) (Reservation, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return Reservation{}, fmt.Errorf("encode reservation: %w", err)
	}
	var out Reservation
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/reservations", body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// ListReservations returns the reservations the token may see.
func (c *Client) ListReservations(ctx context.Context) ([]Reservation, error) {
	var out struct {
		Reservations []Reservation `json:"reservations"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/reservations", out: &out})
	return out.Reservations, err
}

// DeleteReservation deletes the reservation named name.
func (c *Client) DeleteReservation(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/reservations/" + seg(name)})
}
