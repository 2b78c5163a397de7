package api

import (
	"net/http"

	"github.com/allot-dev/allot/internal/server"
)

// alerts lists the built-in alerts (admin only: an alert may name any
// tenant's partition, node or endpoint).
func (h *handler) alerts(w http.ResponseWriter, _ *http.Request, _ server.Principal) {
	writeJSON(w, http.StatusOK, map[string][]Alert{"alerts": h.srv.Alerts()})
}
