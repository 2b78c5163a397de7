package api

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/latency"
	"github.com/allot-dev/allot/internal/server"
)

// maxRouteVersion bounds the after= of GET /v1/routes.
const maxRouteVersion = 64

// routeTable serves GET /v1/routes?after=VERSION&wait=D: the route table once
// its version differs from after, or after wait (at most MaxWait).
func (h *handler) routeTable(w http.ResponseWriter, r *http.Request, p server.Principal) {
	after, wait, perr := parseRoutesQuery(r.URL.RawQuery)
	if perr != nil {
		writeError(w, perr.Code, perr.Field, perr.Message)
		return
	}
	t, err := h.srv.Routes(r.Context(), p, after, wait)
	if err != nil {
		if r.Context().Err() != nil {
			return // the gateway hung up
		}
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newRouteTable(t))
}

// parseRoutesQuery reads the after= and wait= of GET /v1/routes.
func parseRoutesQuery(raw string) (after string, wait time.Duration, e *Error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", 0, &Error{Code: codeInvalidSpec, Message: "the query does not parse: " + err.Error()}
	}
	after = q.Get("after")
	if len(after) > maxRouteVersion {
		return "", 0, &Error{Code: codeInvalidSpec, Field: "after", Message: fmt.Sprintf("is %d bytes, over %d: pass back the version of the last table", len(after), maxRouteVersion)}
	}
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return "", 0, &Error{Code: codeInvalidSpec, Field: "wait", Message: fmt.Sprintf("wait=%q: want a duration such as 30s", clip(v))}
		}
		wait = min(d, MaxWait)
	}
	return after, wait, nil
}

func newRouteTable(t endpoint.RouteTable) wire.RouteTable {
	out := wire.RouteTable{Version: t.Version, Routes: make([]wire.Route, len(t.Routes))}
	for i, r := range t.Routes {
		wr := wire.Route{Endpoint: r.Endpoint, Tenant: r.Tenant, Access: r.Access, Callers: r.Callers,
			Readiness: wire.Readiness{Path: r.Readiness.Path, TimeoutMs: r.Readiness.Timeout.Milliseconds()},
			Replicas:  make([]wire.RouteReplica, len(r.Replicas))}
		for k, rep := range r.Replicas {
			wr.Replicas[k] = wire.RouteReplica{Job: rep.Job, Address: rep.Address}
		}
		out.Routes[i] = wr
	}
	return out
}

// gatewayReport serves POST /v1/gateway/reports.
func (h *handler) gatewayReport(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req wire.GatewayReport
	if !h.decodeBody(w, r, &req) {
		return
	}
	rep, perr := parseGatewayReport(req)
	if perr != nil {
		writeError(w, perr.Code, perr.Field, perr.Message)
		return
	}
	if err := h.srv.ReportGateway(r.Context(), p, rep); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// parseGatewayReport turns the wire report into the server's, reading the
// histograms; the server checks the rest.
func parseGatewayReport(req wire.GatewayReport) (endpoint.GatewayReport, *Error) {
	out := endpoint.GatewayReport{Gateway: req.Gateway, Endpoints: make([]endpoint.GatewayEndpointReport, len(req.Endpoints))}
	for i, e := range req.Endpoints {
		ge := endpoint.GatewayEndpointReport{Endpoint: e.Endpoint, Replicas: make([]endpoint.GatewayReplicaReport, len(e.Replicas))}
		for k, rep := range e.Replicas {
			field := fmt.Sprintf("endpoints[%d].replicas[%d]", i, k)
			lat, err := latency.FromSparse(field+".latency", rep.Latency)
			if err != nil {
				return endpoint.GatewayReport{}, &Error{Code: codeInvalidSpec, Field: field + ".latency", Message: err.Error()}
			}
			ttfb, err := latency.FromSparse(field+".first_byte", rep.FirstByte)
			if err != nil {
				return endpoint.GatewayReport{}, &Error{Code: codeInvalidSpec, Field: field + ".first_byte", Message: err.Error()}
			}
			ge.Replicas[k] = endpoint.GatewayReplicaReport{Job: rep.Job, Requests: rep.Requests, Errors: rep.Errors, InFlight: rep.InFlight,
				Routed: rep.Routed, Ready: rep.Ready, Latency: lat, FirstByte: ttfb}
		}
		out.Endpoints[i] = ge
	}
	return out, nil
}
