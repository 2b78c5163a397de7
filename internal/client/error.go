package client

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes of the API (docs/api.md).
const (
	CodeInvalidSpec     = "InvalidSpec"
	CodeSkuNotAvailable = "SkuNotAvailable"
	CodeQuotaExceeded   = "QuotaExceeded"
	CodeUnauthorized    = "Unauthorized"
	CodeForbidden       = "Forbidden"
	CodeNotFound        = "NotFound"
	CodeConflict        = "Conflict"
	CodeBodyTooLarge    = "BodyTooLarge"
	CodeRateLimited     = "RateLimited"
	CodeInternal        = "Internal"

	// A job that can never run is refused with the core's reason.
	CodeResidencyForbidden    = "ResidencyForbidden"
	CodeTopologyUnsatisfiable = "TopologyUnsatisfiable"
)

// APIError is an error answered by the server.
type APIError struct {
	Status  int    // HTTP status
	Code    string // e.g. InvalidSpec; derived from Status when the body has none
	Message string
	Field   string // the field at fault, when one is
	// RetryAfter is the server's Retry-After on 429, zero when absent.
	RetryAfter time.Duration
	// Errors lists every problem of a refused batch (SubmitBatch).
	Errors []JobError
}

// Error formats e as "Code: message (field f)".
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Field != "" {
		b.WriteString(" (field ")
		b.WriteString(e.Field)
		b.WriteByte(')')
	}
	return b.String()
}

// decodeError reads an error response. A body that is not the documented
// {"code","message","field"} (a proxy's page, say) keeps its first line as
// the message.
func decodeError(resp *http.Response, data []byte) *APIError {
	e := &APIError{Status: resp.StatusCode}
	var body struct {
		Code    string     `json:"code"`
		Message string     `json:"message"`
		Field   string     `json:"field"`
		Errors  []JobError `json:"errors"`
	}
	if json.Unmarshal(data, &body) == nil && body.Code != "" {
		e.Code, e.Message, e.Field, e.Errors = body.Code, body.Message, body.Field, body.Errors
	} else {
		e.Code = codeOf(resp.StatusCode)
		msg, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg == "" {
			msg = resp.Status
		}
		e.Message = msg
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = time.Until(t).Round(time.Second)
		}
	}
	return e
}

// codeOf names the code the contract pairs with status.
func codeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalidSpec
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeBodyTooLarge
	case http.StatusTooManyRequests:
		return CodeRateLimited
	}
	if status >= 500 {
		return CodeInternal
	}
	return "HTTP" + strconv.Itoa(status)
}
