package api

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/price"
	"github.com/allot-dev/allot/internal/server"
)

// parseCost reads the query of GET /v1/cost: tenant, since and until as
// GET /v1/accounting takes them, and by: tenant (the default), region,
// sku or job.
func parseCost(q url.Values, p server.Principal, now time.Time) (server.CostQuery, *Error) {
	rest := url.Values{}
	for k, v := range q {
		if k != "by" {
			rest[k] = v
		}
	}
	a, e := parseAccounting(rest, p, now)
	out := server.CostQuery{Tenant: a.Tenant, Since: a.Since, Until: a.Until, By: q.Get("by")}
	if e != nil {
		if e.Field == "tenant" {
			e.Message = "a tenant token sees only its own cost"
		}
		return out, e
	}
	switch out.By {
	case "":
		out.By = server.ByTenant
	case server.ByTenant, server.ByRegion, server.BySKU, server.ByJob:
	default:
		return out, &Error{Code: codeInvalidSpec, Field: "by", Message: fmt.Sprintf("%q: want tenant, region, sku or job", clip(out.By))}
	}
	return out, nil
}

func (h *handler) cost(w http.ResponseWriter, r *http.Request, p server.Principal) {
	now := h.srv.Clock().Now()
	q, e := parseCost(r.URL.Query(), p, now)
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	rows, err := h.srv.Cost(r.Context(), p, q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.warnUnknownTenant(w, p, q.Tenant)
	h.warnRetention(w, q.Since, q.Until, q.By)
	budgets, events, err := h.srv.Budgets(r.Context(), p, q.Tenant, now)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	commitments, err := h.srv.ReservationCosts(r.Context(), p, q.Tenant, q.Since, q.Until)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := wire.CostReport{Since: q.Since.UTC(), Until: q.Until.UTC(), By: q.By, Rows: make([]wire.CostRow, len(rows)),
		Budgets: []wire.Budget{}, BudgetEvents: []wire.BudgetEvent{}, Reservations: []wire.ReservationCost{}}
	for _, c := range commitments {
		rc := wire.ReservationCost{Name: c.Reservation.Name, Owner: c.Reservation.Owner, SKU: c.Reservation.SKU,
			Region: c.Reservation.Region, Pricing: string(c.Pricing), BoughtGPUHours: round4(c.Bought), UsedGPUHours: round4(c.Used)}
		if c.Rate > 0 {
			rate := c.Rate
			rc.USDPerGPUHour = &rate
			rc.CommittedUSD, rc.UsedUSD = price.Cents(c.Bought*c.Rate), price.Cents(c.Used*c.Rate)
			rc.IdleUSD = price.Cents(max(0, c.Bought-c.Used) * c.Rate)
		}
		out.Reservations = append(out.Reservations, rc)
	}
	for i, x := range rows {
		out.Rows[i] = wire.CostRow{Tenant: x.Tenant, Region: x.Region, SKU: x.SKU, Job: x.Job, Name: x.Name,
			Attempts: x.Attempts, GPUHours: round4(x.GPUHours), CPUHours: round4(x.CPUHours), USD: price.Cents(x.USD),
			OnDemandUSD: price.Cents(x.ByKind[price.OnDemand]),
			ReservedUSD: price.Cents(x.ByKind[price.Reserved1Y] + x.ByKind[price.Reserved3Y]),
			SpotUSD:     price.Cents(x.ByKind[price.Spot])}
		out.USD += x.USD
		out.GPUHours += x.GPUHours
		out.CPUHours += x.CPUHours
	}
	out.USD, out.GPUHours, out.CPUHours = price.Cents(out.USD), round4(out.GPUHours), round4(out.CPUHours)
	for _, b := range budgets {
		pct := 0.0
		if b.USDPerMonth > 0 {
			pct = math.Round(b.SpentUSD/b.USDPerMonth*1000) / 10
		}
		out.Budgets = append(out.Budgets, wire.Budget{Tenant: b.Tenant, USDPerMonth: b.USDPerMonth, HardStop: b.HardStop,
			Month: b.Month, SpentUSD: price.Cents(b.SpentUSD), Percent: pct, Alert: b.Alert})
	}
	sort.Slice(out.Budgets, func(a, b int) bool { return out.Budgets[a].Tenant < out.Budgets[b].Tenant })
	for _, ev := range events {
		out.BudgetEvents = append(out.BudgetEvents, wire.BudgetEvent{Tenant: ev.Tenant, Threshold: ev.Threshold,
			At: ev.At.UTC(), SpentUSD: price.Cents(ev.SpentUSD), USDPerMonth: ev.USDPerMonth})
	}
	writeJSON(w, http.StatusOK, out)
}
