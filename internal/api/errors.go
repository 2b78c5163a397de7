package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/store"
)

// Error codes that are not refusals of package server.
const (
	codeUnauthorized   = "Unauthorized"
	codeBodyTooLarge   = "BodyTooLarge"
	codeRateLimited    = "RateLimited"
	codeRequestTimeout = "RequestTimeout"
	codeInternal       = "Internal"
	codeNotFound       = "NotFound"
	codeInvalidSpec    = "InvalidSpec"
	codeForbidden      = "Forbidden"
	// codeStoreUnavailable: the store could not be reached or lost the
	// request; a write may or may not have been applied.
	codeStoreUnavailable = "StoreUnavailable"
)

// Error is the body of every error response.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// Errors lists every problem of a refused batch (POST /v1/jobs/batch).
	Errors []JobError `json:"errors,omitempty"`
}

// JobError is one problem of a refused batch.
type JobError = wire.JobError

var statusOf = map[string]int{
	string(server.CodeInvalidSpec):     http.StatusBadRequest,
	string(server.CodeSkuNotAvailable): http.StatusBadRequest,
	string(server.CodeQuotaExceeded):   http.StatusBadRequest,
	string(server.CodeForbidden):       http.StatusForbidden,
	string(server.CodeNotFound):        http.StatusNotFound,
	string(server.CodeConflict):        http.StatusConflict,
	string(server.CodeBudgetExceeded):  http.StatusPaymentRequired,
	codeUnauthorized:                   http.StatusUnauthorized,
	codeBodyTooLarge:                   http.StatusRequestEntityTooLarge,
	codeRateLimited:                    http.StatusTooManyRequests,
	codeRequestTimeout:                 http.StatusRequestTimeout,
	codeInternal:                       http.StatusInternalServerError,
	codeNoLeader:                       http.StatusServiceUnavailable,
	codeStoreUnavailable:               http.StatusServiceUnavailable,
	codeLeaderFailed:                   http.StatusBadGateway,

	// A job that can never run, refused with the core's reason.
	string(server.CodeResidencyForbidden):    http.StatusBadRequest,
	string(server.CodeTopologyUnsatisfiable): http.StatusBadRequest,

	// An instance whose SKU is sold in the region but has nothing free now.
	string(server.CodeAllocationFailed): http.StatusConflict,
}

func writeError(w http.ResponseWriter, code, field, msg string) {
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, Error{Code: code, Message: msg, Field: field})
}

// fail answers err: a refusal of package server with its code, anything
// else as Internal (logged, and not shown to the client in detail).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var se *server.Error
	if errors.As(err, &se) {
		writeError(w, string(se.Code), se.Field, se.Msg)
		return
	}
	if errors.Is(err, store.ErrUnavailable) {
		h.log.Warn("request failed: store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		msg := "the store did not answer; retry"
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			msg = "the store did not confirm the write, which may or may not have been applied: look (e.g. allot job list) before sending it again"
		}
		writeError(w, codeStoreUnavailable, "", msg)
		return
	}
	h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, codeInternal, "", "internal error; see the server log")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("encode response", "err", err)
		status, b = http.StatusInternalServerError, []byte(`{"code":"Internal","message":"encode response"}`)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
