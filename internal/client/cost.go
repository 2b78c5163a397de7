package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-dev/allot/internal/api/wire"
)

// CostQuery selects a cost report; empty fields take the server's defaults
// (the last 30 days, by tenant, every tenant the token sees).
type CostQuery struct {
	Tenant, Since, Until, By string
}

// CostReport is what work accrued over a period at the prices of how it
// ran, with the budgets of the tenants the token sees.
type CostReport = wire.CostReport

// CostRow is what one tenant, region, SKU or job accrued.
type CostRow = wire.CostRow

// Cost returns the cost report of the jobs the token may see.
func (c *Client) Cost(ctx context.Context, q CostQuery) (CostReport, error) {
	v := url.Values{}
	for k, x := range map[string]string{"tenant": q.Tenant, "since": q.Since, "until": q.Until, "by": q.By} {
		if x != "" {
			v.Set(k, x)
		}
	}
	var out CostReport
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/cost", query: v, out: &out})
	return out, err
}
