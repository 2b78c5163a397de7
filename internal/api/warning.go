package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/server"
)

// warn adds each warning to the response as a Warning header with the
// miscellaneous persistent code, 299 - "text", as Kubernetes' API server
// does: the request succeeded, and the client should show the text to
// whoever made it (allot's CLI prints it on standard error). Characters a
// header cannot carry become '?'.
func warn(w http.ResponseWriter, warnings []string) {
	for _, text := range warnings {
		var b strings.Builder
		b.WriteString(`299 - "`)
		for _, c := range text {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteRune(c)
			case c < ' ' || c > '~':
				b.WriteByte('?')
			default:
				b.WriteRune(c)
			}
		}
		b.WriteByte('"')
		w.Header().Add("Warning", b.String())
	}
}

// warnUnknownTenant warns an administrator whose filter names a tenant the
// tenants file does not have (server.UnknownTenant).
func (h *handler) warnUnknownTenant(w http.ResponseWriter, p server.Principal, tenant string) {
	if text := h.srv.UnknownTenant(p, tenant); text != "" {
		warn(w, []string{text})
	}
}

// warnRetention warns that a report by by over [since, until) lacks some
// of what jobs deleted past the server's job retention ran
// (server.RetentionWarning).
func (h *handler) warnRetention(w http.ResponseWriter, since, until time.Time, by string) {
	if text := h.srv.RetentionWarning(since, until, by); text != "" {
		warn(w, []string{text})
	}
}
