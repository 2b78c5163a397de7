package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
)

// Batch is the answer of POST /v1/jobs/batch: the jobs created, in the
// order of the body.
type Batch struct {
	Jobs []Job `json:"jobs"`
}

// WhyBatch answers a batch's dry run: the Why of each would-be job, in the
// order of the body.
type WhyBatch struct {
	Jobs []Why `json:"jobs"`
}

// parseBatch reads the jobs of a batch body: YAML documents, lists of
// jobs or JSON, as a job file (arrays expand to their members). A tenant
// token's tenant is filled in when a job has none. Every problem of the
// body is reported at once.
func parseBatch(body []byte, p server.Principal) ([]model.JobSpec, *Error) {
	specs, err := spec.ParseJobs("jobs", body, nil)
	if err != nil && !p.Admin && lacksTenant(err) {
		specs, err = spec.ParseJobs("jobs", body, []string{"tenant=" + strconv.Quote(p.Tenant)})
	}
	if err == nil {
		return specs, nil
	}
	e := &Error{Code: codeInvalidSpec, Message: err.Error()}
	if errors.Is(err, spec.ErrTooLarge) {
		e.Code = codeBodyTooLarge
	}
	for i, se := range spec.Errors(err) {
		if i == 0 {
			e.Field = se.Field
		}
		e.Errors = append(e.Errors, JobError{Code: e.Code, Message: se.Error(), Field: se.Field})
	}
	return nil, e
}

// lacksTenant reports whether one of the problems of err is a job without
// a tenant.
func lacksTenant(err error) bool {
	for _, se := range spec.Errors(err) {
		if se.Field == "tenant" || (len(se.Field) > 7 && se.Field[len(se.Field)-7:] == ".tenant") {
			if se.Msg == "must not be empty" {
				return true
			}
		}
	}
	return false
}

// submitBatch creates every job of the body, or none (server.SubmitBatch).
func (h *handler) submitBatch(w http.ResponseWriter, r *http.Request, p server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	specs, perr := parseBatch(body, p)
	if perr != nil {
		writeJSON(w, statusOf[perr.Code], perr)
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
	}
	if !h.chargeJobs(w, p, len(specs)) {
		return
	}
	if dry {
		whys, err := h.srv.TrySubmitBatch(r.Context(), p, specs)
		if h.batchFailed(w, r, err) {
			return
		}
		out := WhyBatch{Jobs: make([]Why, len(whys))}
		for i, why := range whys {
			out.Jobs[i] = newWhy(h.srv.WhyForViewer(p, why))
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	jobs, replayed, err := h.srv.SubmitBatchKeyed(r.Context(), p, key, specs)
	if h.batchFailed(w, r, err) {
		return
	}
	out := Batch{Jobs: make([]Job, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = h.job(p, j)
	}
	writeJSON(w, created(w, replayed), out)
}

// chargeJobs takes n jobs from p's budget of jobs sent in batches
// (--job-rate, --job-burst), or answers 429 with Retry-After and returns
// false: a batch costs what its jobs cost, not one request.
func (h *handler) chargeJobs(w http.ResponseWriter, p server.Principal, n int) bool {
	ok, wait := h.jobs.allowN(p.Name(), n)
	if ok {
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
	writeError(w, codeRateLimited, "jobs", fmt.Sprintf("a batch of %d jobs is over the jobs %s may send in batches now; "+
		"retry after the Retry-After seconds (limit: --job-rate, --job-burst)", n, p.Name()))
	return false
}

// startDryRun takes one of p's places for dry runs running at once
// (--max-dry-runs), or answers 429 with Retry-After and returns false; the
// caller gives the place back with h.dry.leave(p.Name()).
func (h *handler) startDryRun(w http.ResponseWriter, p server.Principal) bool {
	if h.dry.enter(p.Name()) {
		return true
	}
	w.Header().Set("Retry-After", "1")
	writeError(w, codeRateLimited, "dry_run", fmt.Sprintf("%s has %d dry runs running; retry after the Retry-After seconds "+
		"(limit: --max-dry-runs)", p.Name(), h.limits.MaxDryRuns))
	return false
}

// batchFailed answers err of a batch's submit or dry run, when there is
// one, and says so: a refused batch with every refusal, else as fail does.
func (h *handler) batchFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	var be *server.BatchError
	switch {
	case errors.As(err, &be):
		writeBatchError(w, be)
	case err != nil:
		h.fail(w, r, err)
	default:
		return false
	}
	return true
}

// writeBatchError answers a refused batch with the code and status of its
// first refusal and every refusal in errors.
func writeBatchError(w http.ResponseWriter, be *server.BatchError) {
	first := be.Refusals[0].Err
	e := Error{Code: string(first.Code), Field: first.Field,
		Message: fmt.Sprintf("%d of %d jobs refused; none was submitted. First: job %d (%s): %s",
			len(be.Refusals), be.Total, be.Refusals[0].Index, be.Refusals[0].Name, first.Msg)}
	for _, rf := range be.Refusals {
		i := rf.Index
		e.Errors = append(e.Errors, JobError{Index: &i, Name: rf.Name, Code: string(rf.Err.Code), Message: rf.Err.Msg, Field: rf.Err.Field})
	}
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, e)
}
