package api

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/server"
)

// DefaultAccountingPeriod is the period of a report without since.
const DefaultAccountingPeriod = 30 * 24 * time.Hour

// parseAccounting reads the query of GET /v1/accounting: tenant, by (job
// or tenant, default tenant), since and until (RFC 3339, a date, or a
// duration back from now such as 30d or 12h; default the last 30 days).
func parseAccounting(q url.Values, p server.Principal, now time.Time) (server.AccountingQuery, *Error) {
	out := server.AccountingQuery{Tenant: q.Get("tenant"), By: q.Get("by"), Until: now}
	if out.Tenant != "" && !p.Admin && out.Tenant != p.Tenant {
		return out, &Error{Code: codeForbidden, Field: "tenant", Message: "a tenant token sees only its own usage"}
	}
	switch out.By {
	case "":
		out.By = server.ByTenant
	case server.ByJob, server.ByTenant:
	default:
		return out, &Error{Code: codeInvalidSpec, Field: "by", Message: fmt.Sprintf("%q: want job or tenant", clip(out.By))}
	}
	if v := q.Get("until"); v != "" {
		t, err := parseInstant(v, now)
		if err != nil {
			return out, &Error{Code: codeInvalidSpec, Field: "until", Message: err.Error()}
		}
		out.Until = t
	}
	out.Since = out.Until.Add(-DefaultAccountingPeriod)
	if v := q.Get("since"); v != "" {
		t, err := parseInstant(v, now)
		if err != nil {
			return out, &Error{Code: codeInvalidSpec, Field: "since", Message: err.Error()}
		}
		out.Since = t
	}
	if !out.Until.After(out.Since) {
		return out, &Error{Code: codeInvalidSpec, Field: "since", Message: "must be before until"}
	}
	if out.Until.Sub(out.Since) > server.MaxAccountingPeriod {
		return out, &Error{Code: codeInvalidSpec, Field: "since", Message: fmt.Sprintf("the period is over %v", server.MaxAccountingPeriod)}
	}
	return out, nil
}

// parseInstant reads a time: RFC 3339, a date (midnight UTC), or a
// duration before now ("30d", "12h", "90m").
func parseInstant(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	bad := fmt.Errorf("%q: want a time (2026-11-01T00:00:00Z), a date (2026-11-01) or a duration back from now (30d, 12h)", clip(v))
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := parseCount(days, 3650)
		if err != nil {
			return time.Time{}, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		x, err := time.ParseDuration(v)
		if err != nil || x < 0 || x > server.MaxAccountingPeriod {
			return time.Time{}, bad
		}
		d = x
	}
	return now.Add(-d), nil
}

// AccountingRow is the GPU time of one job or one tenant's jobs.
type AccountingRow = wire.AccountingRow

// Accounting is the body of GET /v1/accounting.
type Accounting struct {
	Since    time.Time       `json:"since"`
	Until    time.Time       `json:"until"`
	By       string          `json:"by"`
	Rows     []AccountingRow `json:"rows"`
	GPUHours float64         `json:"gpu_hours"`
}

func (h *handler) accounting(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q, e := parseAccounting(r.URL.Query(), p, h.srv.Clock().Now())
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	rows, err := h.srv.Accounting(r.Context(), p, q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.warnUnknownTenant(w, p, q.Tenant)
	h.warnRetention(w, q.Since, q.Until, q.By)
	out := Accounting{Since: q.Since.UTC(), Until: q.Until.UTC(), By: q.By, Rows: make([]AccountingRow, len(rows))}
	for i, x := range rows {
		out.Rows[i] = AccountingRow{Tenant: x.Tenant, Job: x.Job, Name: x.Name, State: string(x.State), Jobs: x.Jobs,
			Attempts: x.Attempts, GPUHours: round4(x.GPUHours)}
		out.GPUHours += x.GPUHours
	}
	out.GPUHours = round4(out.GPUHours)
	writeJSON(w, http.StatusOK, out)
}

// round4 keeps four decimals: 0.36 s of one GPU.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
