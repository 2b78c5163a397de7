package api

import (
	"net/http"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/server"
)

// A tenant's registry credentials (server/registry_auth.go): set and
// deleted by the tenant or the administrator, listed without their
// secrets, never returned.

func (h *handler) setRegistryCredential(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req wire.RegistryCredentialSet
	if !h.decodeBody(w, r, &req) {
		return
	}
	c, err := h.srv.SetRegistryCredential(r.Context(), p, req.Tenant, r.PathValue("registry"), req.Username, req.Password)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wireCredential(c))
}

func (h *handler) listRegistryCredentials(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q := r.URL.Query()
	if e := onlyParams(q, "tenant"); e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	cs, err := h.srv.RegistryCredentials(r.Context(), p, q.Get("tenant"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]wire.RegistryCredential, len(cs))
	for i, c := range cs {
		out[i] = wireCredential(c)
	}
	writeJSON(w, http.StatusOK, map[string][]wire.RegistryCredential{"registry_credentials": out})
}

func (h *handler) deleteRegistryCredential(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q := r.URL.Query()
	if e := onlyParams(q, "tenant"); e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	if err := h.srv.DeleteRegistryCredential(r.Context(), p, q.Get("tenant"), r.PathValue("registry")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func wireCredential(c server.RegistryCredential) wire.RegistryCredential {
	return wire.RegistryCredential{Tenant: c.Tenant, Registry: c.Registry, SetAt: c.SetAt.UTC().Format(time.RFC3339), SetBy: c.SetBy}
}
