package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-dev/allot/internal/api/wire"
)

// AccountingQuery selects an accounting report; empty fields take the
// server's defaults (the last 30 days, by tenant, every tenant the token
// sees).
type AccountingQuery struct {
	Tenant, Since, Until, By string
}

// AccountingRow is the GPU time of one job or one tenant's jobs.
type AccountingRow = wire.AccountingRow

// Accounting is GPU-hours over a period, from the job records.
type Accounting struct {
	Since    Time            `json:"since"`
	Until    Time            `json:"until"`
	By       string          `json:"by"`
	Rows     []AccountingRow `json:"rows"`
	GPUHours float64         `json:"gpu_hours"`
}

// Accounting returns the GPU-hours of the jobs the token may see.
func (c *Client) Accounting(ctx context.Context, q AccountingQuery) (Accounting, error) {
	v := url.Values{}
	for k, x := range map[string]string{"tenant": q.Tenant, "since": q.Since, "until": q.Until, "by": q.By} {
		if x != "" {
			v.Set(k, x)
		}
	}
	var out Accounting
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/accounting", query: v, out: &out})
	return out, err
}
