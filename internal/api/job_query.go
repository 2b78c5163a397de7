package api

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// MaxNameFilter bounds the name filter of a listing.
const MaxNameFilter = 256

// unknownState is the message for a state filter that names no state: the
// states, and for the words of Slurm and Kubernetes (PENDING, Pending,
// COMPLETED …) the states they mean here.
func unknownState(s string) string {
	names := make([]string, len(model.States))
	for i, st := range model.States {
		names[i] = string(st)
	}
	msg := fmt.Sprintf("unknown state %q (want %s or %s)", clip(s), strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	switch strings.ToLower(s) {
	case "pending", "pd", "waiting":
		msg += "; a job waiting to start is Queued, or Blocked behind the steps it runs after: state=Queued,Blocked"
	case "completed", "cd", "complete", "done":
		msg += "; a job that ended well is Succeeded"
	case "cancelled", "ca":
		msg += "; did you mean Canceled?"
	case "timeout", "to":
		msg += "; did you mean TimedOut?"
	}
	return msg
}

// parseJobQuery reads the filters of a job listing or bulk action: state
// (repeatable, or comma-separated; any letter case), tenant (a tenant token
// may name only its own) and name (a substring, or a glob with * ? [).
func parseJobQuery(q url.Values, p server.Principal) (server.JobQuery, *Error) {
	var out server.JobQuery
	for _, v := range q["state"] {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			st, ok := parseState(s)
			if !ok {
				return out, &Error{Code: codeInvalidSpec, Field: "state", Message: unknownState(s)}
			}
			out.States = append(out.States, st)
		}
	}
	if v := q.Get("tenant"); v != "" {
		if !p.Admin && v != p.Tenant {
			return out, &Error{Code: codeForbidden, Field: "tenant", Message: "a tenant token lists only its own jobs"}
		}
		out.Tenant = v
	}
	if v := q.Get("name"); v != "" {
		if len(v) > MaxNameFilter || !utf8.ValidString(v) {
			return out, &Error{Code: codeInvalidSpec, Field: "name", Message: fmt.Sprintf("want valid UTF-8 of at most %d bytes", MaxNameFilter)}
		}
		if err := server.CheckNamePattern(v); err != nil {
			return out, &Error{Code: codeInvalidSpec, Field: "name", Message: err.Error()}
		}
		out.Name = v
	}
	return out, nil
}

// parsePage reads limit and continue: whether the listing is paged, its
// page size and where it continues.
func parsePage(q url.Values) (paged bool, limit int, from *server.JobCursor, e *Error) {
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > server.MaxJobPage {
			return false, 0, nil, &Error{Code: codeInvalidSpec, Field: "limit",
				Message: fmt.Sprintf("limit=%q: want a number from 1 to %d", clip(v), server.MaxJobPage)}
		}
		paged, limit = true, n
	}
	if v := q.Get("continue"); v != "" {
		c, err := decodeCursor(v)
		if err != nil {
			return false, 0, nil, &Error{Code: codeInvalidSpec, Field: "continue", Message: err.Error()}
		}
		paged, from = true, &c
	}
	if paged && limit == 0 {
		limit = server.MaxJobPage
	}
	return paged, limit, from, nil
}

// cursorPrefix versions the continue token; the rest is base64url of
// "REV:ID". The token is opaque to clients.
const cursorPrefix = "c1."

func encodeCursor(c server.JobCursor) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Rev, 10)+":"+c.After))
}

func decodeCursor(s string) (server.JobCursor, error) {
	bad := fmt.Errorf("not a continue token of this server; pass the one a listing returned")
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok || len(rest) > 512 {
		return server.JobCursor{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return server.JobCursor{}, bad
	}
	revText, after, ok := strings.Cut(string(raw), ":")
	rev, err := strconv.ParseInt(revText, 10, 64)
	if !ok || err != nil || rev < 1 || after == "" || !utf8.ValidString(after) || strings.ContainsAny(after, "/\x00") {
		return server.JobCursor{}, bad
	}
	return server.JobCursor{Rev: rev, After: after}, nil
}

// clip shortens what a client sent for quoting it in an error.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}

// JobList is the body of GET /v1/jobs: one page, and the token that
// continues the listing when more may follow.
type JobList struct {
	Jobs     []Job  `json:"jobs"`
	Continue string `json:"continue,omitempty"`
}
