package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
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
// job that may change, at least one. Priority is "class[:value]" or
// {"class","value"}; Begin an RFC 3339 time or a date, or "" to remove it;
// Nodes the only nodes the job may run on and ExcludeNodes those it must
// not run on, [] for none.
type JobChange struct {
	Priority     json.RawMessage `json:"priority"`
	Begin        *string         `json:"begin"`
	Nodes        *[]string       `json:"nodes"`
	ExcludeNodes *[]string       `json:"exclude_nodes"`
}

// parseJobChange reads a PATCH body into the change it asks for.
func parseJobChange(body []byte) (server.QueuedChange, *Error) {
	var c JobChange
	if e := decodeStrict(body, &c); e != nil {
		return server.QueuedChange{}, e
	}
	var out server.QueuedChange
	raw := bytes.TrimSpace(c.Priority)
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		p, e := parsePriority(raw)
		if e != nil {
			return server.QueuedChange{}, e
		}
		out.Priority = &p
	}
	if c.Begin != nil {
		var t time.Time
		if *c.Begin != "" {
			var ok bool
			if t, ok = spec.ParseTime(*c.Begin); !ok {
				return server.QueuedChange{}, &Error{Code: codeInvalidSpec, Field: "begin",
					Message: fmt.Sprintf("want an RFC 3339 time like 2026-12-24T02:00:00Z, a date like 2026-12-24 (midnight UTC), or \"\" to remove it; got %q", *c.Begin)}
			}
		}
		out.Begin = &t
	}
	out.Nodes, out.ExcludeNodes = c.Nodes, c.ExcludeNodes // null: unchanged, []: none
	if out.Priority == nil && out.Begin == nil && out.Nodes == nil && out.ExcludeNodes == nil {
		return server.QueuedChange{}, &Error{Code: codeInvalidSpec, Field: "priority",
			Message: "must be given, or begin, nodes or exclude_nodes (the fields that can change)"}
	}
	return out, nil
}

// parsePriority reads "class[:value]" or {"class","value"}.
func parsePriority(raw []byte) (model.Priority, *Error) {
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
	c, e := parseJobChange(body)
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	h.answerJob(w, r, p)(h.srv.UpdateQueued(r.Context(), p, r.PathValue("id"), c))
}
