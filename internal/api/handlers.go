package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
)

// parseJob reads the one job document of a submit body. A tenant token's
// tenant is filled in when the document has none.
func parseJob(body []byte, p server.Principal) (model.JobSpec, *Error) {
	specs, err := spec.ParseJobs("job", body, nil)
	var se *spec.Error
	if err != nil && !p.Admin && lacksTenant(err) {
		specs, err = spec.ParseJobs("job", body, []string{"tenant=" + strconv.Quote(p.Tenant)})
	}
	if err != nil {
		e := &Error{Code: codeInvalidSpec, Message: err.Error()}
		if errors.Is(err, spec.ErrTooLarge) {
			e.Code = codeBodyTooLarge
		}
		if errors.As(err, &se) {
			e.Field = se.Field
		}
		return model.JobSpec{}, e
	}
	if len(specs) != 1 {
		return model.JobSpec{}, &Error{Code: codeInvalidSpec,
			Message: fmt.Sprintf("the body holds %d jobs; submit one job per request, or several with POST /v1/jobs/batch", len(specs))}
	}
	return specs[0], nil
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request, p server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	s, perr := parseJob(body, p)
	if perr != nil {
		writeError(w, perr.Code, perr.Field, perr.Message)
		return
	}
	dry, ok := dryRun(w, r)
	if !ok {
		return
	}
	if dry {
		if !h.startDryRun(w, p) {
			return
		}
		defer h.dry.leave(p.Name())
		why, err := h.srv.TrySubmit(r.Context(), p, s)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, newWhy(h.srv.WhyForViewer(p, why)))
		return
	}
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	j, replayed, err := h.srv.SubmitKeyed(r.Context(), p, key, s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	writeJSON(w, created(w, replayed), h.job(p, j))
}

// dryRun reads a submit's dry_run query parameter: true asks what would
// become of the job, storing nothing (server.TrySubmit).
func dryRun(w http.ResponseWriter, r *http.Request) (bool, bool) {
	v := r.URL.Query()["dry_run"]
	switch {
	case len(v) == 0:
		return false, true
	case len(v) == 1 && (v[0] == "true" || v[0] == "1"):
		return true, true
	case len(v) == 1 && (v[0] == "false" || v[0] == "0"):
		return false, true
	}
	writeError(w, codeInvalidSpec, "dry_run", fmt.Sprintf("want true or false, once; got %q", v))
	return false, false
}

// idempotencyKey reads a submit's Idempotency-Key header ("" when absent)
// and answers a malformed one (InvalidSpec naming the header).
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	vs := r.Header.Values(server.IdempotencyField)
	switch {
	case len(vs) == 0:
		return "", true
	case len(vs) > 1:
		writeError(w, codeInvalidSpec, server.IdempotencyField, "the header is given more than once")
		return "", false
	}
	if err := server.CheckIdempotencyKey(vs[0]); err != nil {
		var se *server.Error
		errors.As(err, &se)
		writeError(w, string(se.Code), se.Field, se.Msg)
		return "", false
	}
	return vs[0], true
}

// created is a submit's status: 201, or 200 with Idempotent-Replayed
// when the submit repeated an idempotency key and stored nothing.
func created(w http.ResponseWriter, replayed bool) int {
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		return http.StatusOK
	}
	return http.StatusCreated
}

// parseState reads a state filter, accepting any letter case.
func parseState(v string) (model.State, bool) {
	for _, s := range model.States {
		if strings.EqualFold(v, string(s)) {
			return s, true
		}
	}
	return "", false
}

func (h *handler) listJobs(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q := r.URL.Query()
	f, e := parseJobQuery(q, p)
	if e == nil {
		h.warnUnknownTenant(w, p, f.Tenant)
		var paged bool
		var limit int
		var from *server.JobCursor
		if paged, limit, from, e = parsePage(q); e == nil && paged {
			h.pageJobs(w, r, p, f, from, limit)
			return
		}
	}
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	jobs, err := h.srv.QueryJobs(r.Context(), p, f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]Job, len(jobs))
	for i, j := range jobs {
		out[i] = h.job(p, j)
	}
	writeJSON(w, http.StatusOK, JobList{Jobs: out})
}

// pageJobs answers one page of a paged listing, in ID order.
func (h *handler) pageJobs(w http.ResponseWriter, r *http.Request, p server.Principal, f server.JobQuery,
	from *server.JobCursor, limit int) {
	page, err := h.srv.PageJobs(r.Context(), p, f, from, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := JobList{Jobs: make([]Job, len(page.Jobs))}
	for i, j := range page.Jobs {
		out.Jobs[i] = h.job(p, j)
	}
	if page.Next != nil {
		out.Continue = encodeCursor(*page.Next)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) getJob(w http.ResponseWriter, r *http.Request, p server.Principal) {
	j, err := h.srv.Job(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.job(p, j))
}

// cancel ends a job; force=true kills its processes at once instead of
// giving them their grace (as a second cancel does).
func (h *handler) cancel(w http.ResponseWriter, r *http.Request, p server.Principal) {
	force := false
	if v := r.URL.Query()["force"]; len(v) > 0 {
		b, err := strconv.ParseBool(v[0])
		if err != nil || len(v) > 1 {
			writeError(w, codeInvalidSpec, "force", fmt.Sprintf("want true or false, once; got %q", v))
			return
		}
		force = b
	}
	cancel := h.srv.Cancel
	if force {
		cancel = h.srv.ForceCancel
	}
	j, err := cancel(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.job(p, j))
}

func (h *handler) why(w http.ResponseWriter, r *http.Request, p server.Principal) {
	why, err := h.srv.Explain(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWhy(h.srv.WhyForViewer(p, why)))
}

func (h *handler) nodes(w http.ResponseWriter, _ *http.Request, _ server.Principal) {
	ns := h.srv.Nodes()
	out := make([]Node, len(ns))
	for i, n := range ns {
		out[i] = newNode(n)
	}
	writeJSON(w, http.StatusOK, map[string][]Node{"nodes": out})
}

func (h *handler) node(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	d, err := h.srv.Node(r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newNodeDetail(d))
}

func (h *handler) drainNode(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req DrainRequest
	if !h.decodeBody(w, r, &req) {
		return
	}
	n, err := h.srv.DrainNode(r.Context(), p, r.PathValue("name"), req.Reason)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newNode(n))
}

func (h *handler) resumeNode(w http.ResponseWriter, r *http.Request, p server.Principal) {
	n, err := h.srv.ResumeNode(r.Context(), p, r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newNode(n))
}

func (h *handler) tenants(w http.ResponseWriter, _ *http.Request, _ server.Principal) {
	t := h.srv.Tenancy()
	out := make([]Tenant, len(t.Tenants))
	for i, x := range t.Tenants {
		out[i] = Tenant{Name: x.Name, Kind: string(x.Kind), Partition: x.Partition, Weight: x.Weight}
	}
	writeJSON(w, http.StatusOK, map[string][]Tenant{"tenants": out})
}

func (h *handler) partitions(w http.ResponseWriter, _ *http.Request, _ server.Principal) {
	t := h.srv.Tenancy()
	out := make([]Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		out[i] = Partition{Name: p.Name, Tier: p.Tier, Guarantees: make([]Guarantee, len(p.Guarantees))}
		for k, g := range p.Guarantees {
			out[i].Guarantees[k] = Guarantee{Region: g.Region, GPUModel: g.GPUModel, GPUs: g.GPUs,
				BorrowLimit: g.BorrowLimit, LendLimit: g.LendLimit}
		}
	}
	writeJSON(w, http.StatusOK, map[string][]Partition{"partitions": out})
}

func (h *handler) quotas(w http.ResponseWriter, _ *http.Request, _ server.Principal) {
	t := h.srv.Tenancy()
	out := make([]Quota, len(t.Quotas))
	for i, q := range t.Quotas {
		out[i] = Quota{Tenant: q.Tenant, Region: q.Region, Series: q.Series, GPUs: q.GPUs}
	}
	writeJSON(w, http.StatusOK, map[string][]Quota{"quotas": out})
}

// region reads the region query parameter, which must name a fleet region.
func (h *handler) region(w http.ResponseWriter, r *http.Request) (string, bool) {
	v := r.URL.Query().Get("region")
	if v == "" {
		return "", true
	}
	if _, ok := h.srv.Fleet().Region(v); !ok {
		writeError(w, codeInvalidSpec, "region", fmt.Sprintf("unknown region %q", v))
		return "", false
	}
	return v, true
}

func (h *handler) usage(w http.ResponseWriter, r *http.Request, p server.Principal) {
	region, ok := h.region(w, r)
	if !ok {
		return
	}
	us := h.srv.Usage(p, region)
	out := make([]Usage, len(us))
	for i, u := range us {
		out[i] = Usage{Tenant: u.Tenant, Region: u.Region, Series: u.Series,
			UsedGPUs: float64(u.UsedMilli) / model.MilliPerGPU, QuotaGPUs: u.QuotaGPUs}
	}
	writeJSON(w, http.StatusOK, map[string][]Usage{"usage": out})
}

func (h *handler) skus(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	region, ok := h.region(w, r)
	if !ok {
		return
	}
	offers := h.srv.SKUs(region, r.URL.Query().Get("series"))
	out := make([]SKU, len(offers))
	for i, o := range offers {
		out[i] = SKU{Name: o.SKU.Name, Series: o.SKU.Series, GPUModel: o.SKU.GPUModel, GPUsPerNode: o.SKU.GPUs,
			Region: o.Region, Nodes: o.Nodes, FreeNodes: o.FreeNodes, ReservedNodes: o.ReservedNodes, FreeGPUs: o.FreeGPUs,
			PricePerHour: o.OnDemand, SpotPricePerHour: o.Spot}
	}
	writeJSON(w, http.StatusOK, map[string][]SKU{"skus": out})
}

// decodeStrict decodes a JSON object into v, rejecting unknown fields and
// trailing data; the error names the field at fault when it can.
func decodeStrict(body []byte, v any) *Error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// More is false before a stray '}' or ']': only the end will do.
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err == nil {
		return nil
	}
	e := &Error{Code: codeInvalidSpec, Message: "invalid JSON: " + err.Error()}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		e.Field = te.Field
	} else if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		e.Field = strings.Trim(f, `"`)
	}
	return e
}

type reservationRequest struct {
	Name   string  `json:"name"`
	Owner  string  `json:"owner"`
	SKU    string  `json:"sku"`
	Region string  `json:"region"`
	Count  int     `json:"count"`
	Start  *string `json:"start"`
	End    *string `json:"end"`
}

func parseTime(field string, v *string) (time.Time, *Error) {
	if v == nil || *v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, *v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, &Error{Code: codeInvalidSpec, Field: field,
		Message: fmt.Sprintf("want an RFC 3339 time like 2026-01-01T00:00:00Z, got %q", *v)}
}

func (h *handler) createReservation(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req reservationRequest
	if !h.decodeBody(w, r, &req) {
		return
	}
	start, e := parseTime("start", req.Start)
	if e == nil {
		var end time.Time
		end, e = parseTime("end", req.End)
		if e == nil {
			res, warnings, err := h.srv.CreateReservation(r.Context(), p, model.Reservation{Name: req.Name, Owner: req.Owner,
				SKU: req.SKU, Region: req.Region, Count: req.Count, Start: start, End: end})
			if err != nil {
				h.fail(w, r, err)
				return
			}
			warn(w, warnings)
			w.Header().Set("Location", "/v1/reservations/"+res.Name)
			writeJSON(w, http.StatusCreated, newReservation(res))
			return
		}
	}
	writeError(w, e.Code, e.Field, e.Message)
}

func (h *handler) listReservations(w http.ResponseWriter, _ *http.Request, p server.Principal) {
	rs := h.srv.Reservations(p)
	out := make([]Reservation, len(rs))
	for i, x := range rs {
		out[i] = newReservation(x)
	}
	writeJSON(w, http.StatusOK, map[string][]Reservation{"reservations": out})
}

func (h *handler) getReservation(w http.ResponseWriter, r *http.Request, p server.Principal) {
	res, use, err := h.srv.ReservationUse(r.Context(), p, r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newReservationReport(res, use))
}

func (h *handler) deleteReservation(w http.ResponseWriter, r *http.Request, p server.Principal) {
	if err := h.srv.DeleteReservation(r.Context(), p, r.PathValue("name")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) createToken(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	o, e := parseTokenRequest(body)
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	tok, info, err := h.srv.CreateTokenFor(r.Context(), o)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := Token{Token: tok, Tenant: o.Tenant, Node: o.Node, ID: info.ID, Name: info.Name}
	if !info.ExpiresAt.IsZero() {
		t := info.ExpiresAt
		out.ExpiresAt = &t
	}
	writeJSON(w, http.StatusCreated, out)
}
