package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

func (h *handler) hold(w http.ResponseWriter, r *http.Request, p server.Principal) {
	h.answerJob(w, r, p)(h.srv.Hold(r.Context(), p, r.PathValue("id")))
}

func (h *handler) release(w http.ResponseWriter, r *http.Request, p server.Principal) {
	h.answerJob(w, r, p)(h.srv.Release(r.Context(), p, r.PathValue("id")))
}

func (h *handler) requeue(w http.ResponseWriter, r *http.Request, p server.Principal) {
	h.answerJob(w, r, p)(h.srv.Requeue(r.Context(), p, r.PathValue("id")))
}

// answerJob returns a function that answers 200 with the job, or the error.
func (h *handler) answerJob(w http.ResponseWriter, r *http.Request, p server.Principal) func(*model.Job, error) {
	return func(j *model.Job, err error) {
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, h.job(p, j))
	}
}

// JobChange is the body of PATCH /v1/jobs/{id}: the fields of a queued
// job that may change. Priority is "class[:value]" or {"class","value"}.
type JobChange struct {
	Priority json.RawMessage `json:"priority"`
}

// parseJobChange reads a PATCH body into the priority it asks for.
func parseJobChange(body []byte) (model.Priority, *Error) {
	var c JobChange
	if e := decodeStrict(body, &c); e != nil {
		return model.Priority{}, e
	}
	raw := bytes.TrimSpace(c.Priority)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return model.Priority{}, &Error{Code: codeInvalidSpec, Field: "priority", Message: "must be given (the only field that can change)"}
	}
	bad := func(err error) *Error {
		return &Error{Code: codeInvalidSpec, Field: "priority", Message: err.Error()}
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return model.Priority{}, bad(err)
		}
		p, err := model.ParsePriority(s)
		if err != nil {
			return model.Priority{}, bad(err)
		}
		return p, nil
	}
	var v struct {
		Class string `json:"class"`
		Value int    `json:"value"`
	}
	if e := decodeStrict(raw, &v); e != nil {
		return model.Priority{}, bad(fmt.Errorf("want \"class[:value]\" or {\"class\",\"value\"}: %s", e.Message))
	}
	p, err := model.ParsePriority(v.Class)
	if err != nil {
		return model.Priority{}, bad(err)
	}
	p.Value = v.Value
	return p, nil
}

func (h *handler) patchJob(w http.ResponseWriter, r *http.Request, p server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	prio, e := parseJobChange(body)
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	h.answerJob(w, r, p)(h.srv.SetPriority(r.Context(), p, r.PathValue("id"), prio))
}
