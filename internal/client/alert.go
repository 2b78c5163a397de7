package client

import (
	"context"
	"net/http"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Alert is a built-in alert; AlertNotice the body the server POSTs to its
// alert webhook (package wire).
type (
	Alert       = wire.Alert
	AlertNotice = wire.AlertNotice
)

// Alerts lists the built-in alerts: firing, pending, then resolved in the
// last hour, newest first (admin only).
func (c *Client) Alerts(ctx context.Context) ([]Alert, error) {
	var out struct {
		Alerts []Alert `json:"alerts"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/alerts", out: &out})
	return out.Alerts, err
}
