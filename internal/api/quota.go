package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// QuotaRequest is a quota request as the API shows it (docs/api.md).
type QuotaRequest = wire.QuotaRequest

func newQuotaRequest(r server.QuotaRequest) QuotaRequest {
	out := QuotaRequest{ID: r.ID, Tenant: r.Tenant, Region: r.Region, Series: r.Series, GPUs: r.GPUs, CurrentGPUs: r.Current,
		Reason: r.Reason, State: r.State, CreatedAt: r.CreatedAt.UTC(), CreatedBy: r.CreatedBy, DecidedAt: timePtr(r.DecidedAt),
		DecidedBy: r.DecidedBy, Note: r.Note}
	return out
}

func (h *handler) createQuotaRequest(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req wire.QuotaRequestNew
	if !h.decodeBody(w, r, &req) {
		return
	}
	qr, err := h.srv.RequestQuota(r.Context(), p, model.Quota{Tenant: req.Tenant, Region: req.Region, Series: req.Series,
		GPUs: req.GPUs}, req.Reason)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/quota-requests?state=pending")
	writeJSON(w, http.StatusCreated, newQuotaRequest(qr))
}

func (h *handler) listQuotaRequests(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q := r.URL.Query()
	if e := onlyParams(q, "state"); e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	rs, err := h.srv.QuotaRequests(r.Context(), p, q.Get("state"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]QuotaRequest, len(rs))
	for i, x := range rs {
		out[i] = newQuotaRequest(x)
	}
	writeJSON(w, http.StatusOK, map[string][]QuotaRequest{"quota_requests": out})
}

func (h *handler) approveQuotaRequest(w http.ResponseWriter, r *http.Request, p server.Principal) {
	h.decideQuotaRequest(w, r, p, true)
}

func (h *handler) denyQuotaRequest(w http.ResponseWriter, r *http.Request, p server.Principal) {
	h.decideQuotaRequest(w, r, p, false)
}

func (h *handler) decideQuotaRequest(w http.ResponseWriter, r *http.Request, p server.Principal, approve bool) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	var req wire.QuotaDecision
	if len(body) > 0 {
		if e := decodeStrict(body, &req); e != nil {
			writeError(w, e.Code, e.Field, e.Message)
			return
		}
	}
	qr, err := h.srv.DecideQuotaRequest(r.Context(), p, r.PathValue("id"), approve, req.Reason)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newQuotaRequest(qr))
}

func (h *handler) setQuota(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req wire.QuotaSet
	if !h.decodeBody(w, r, &req) {
		return
	}
	q, err := h.srv.SetQuota(r.Context(), p, model.Quota{Tenant: req.Tenant, Region: req.Region, Series: req.Series,
		GPUs: req.GPUs}, req.Reason)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.QuotaSet{Tenant: q.Tenant, Region: q.Region, Series: q.Series, GPUs: q.GPUs})
}

// parseAudit reads the query of GET /v1/audit: since (RFC 3339, a date,
// or a duration back from now such as 24h or 7d; default all), actor and
// limit.
func parseAudit(q url.Values, now time.Time) (server.AuditQuery, *Error) {
	var out server.AuditQuery
	if e := onlyParams(q, "since", "actor", "limit"); e != nil {
		return out, e
	}
	if v := q.Get("since"); v != "" {
		t, err := parseInstant(v, now)
		if err != nil {
			return out, &Error{Code: codeInvalidSpec, Field: "since", Message: err.Error()}
		}
		if t.Year() < 1970 || t.Year() > 2200 {
			return out, &Error{Code: codeInvalidSpec, Field: "since", Message: fmt.Sprintf("%q: want a time between 1970 and 2200", clip(v))}
		}
		out.Since = t
	}
	out.Actor = q.Get("actor")
	if len(out.Actor) > 2*server.MaxTokenName {
		return out, &Error{Code: codeInvalidSpec, Field: "actor", Message: fmt.Sprintf("is %d bytes, over the limit of %d", len(out.Actor), 2*server.MaxTokenName)}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > server.MaxAuditLimit {
			return out, &Error{Code: codeInvalidSpec, Field: "limit", Message: fmt.Sprintf("%q: want 1 to %d", clip(v), server.MaxAuditLimit)}
		}
		out.Limit = n
	}
	return out, nil
}

// onlyParams refuses a query parameter not in names, naming it.
func onlyParams(q url.Values, names ...string) *Error {
	for k := range q {
		known := false
		for _, n := range names {
			known = known || k == n
		}
		if !known {
			field := clip(k)
			if field == "" {
				field = "query"
			}
			return &Error{Code: codeInvalidSpec, Field: field, Message: fmt.Sprintf("unknown query parameter %q; want %s", clip(k),
				strings.Join(names, ", "))}
		}
	}
	return nil
}

func (h *handler) audit(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q, e := parseAudit(r.URL.Query(), h.srv.Clock().Now())
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	recs, more, err := h.srv.Audit(r.Context(), p, q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := wire.AuditLog{Records: make([]wire.AuditRecord, len(recs)), More: more}
	for i, x := range recs {
		out.Records[i] = wire.AuditRecord{ID: x.ID, Time: x.Time.UTC(), Actor: x.Actor, Token: x.Token, Action: x.Action,
			Object: x.Object, Detail: x.Detail}
	}
	writeJSON(w, http.StatusOK, out)
}
