package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
)

// Endpoint is an inference endpoint as the API shows it (docs/api.md).
type Endpoint struct {
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
	Model  string `json:"model"`
	// Spec is the endpoint document, its autoscale section with the
	// values in effect (defaults filled in).
	Spec    spec.EndpointDocument `json:"spec"`
	Desired int                   `json:"desired"`
	// Template names what shapes the replicas (command, env, resources,
	// priority, placement); RolloutSince is when its rollout began, nil
	// when every replica runs it.
	Template     string     `json:"template"`
	RolloutSince *time.Time `json:"rollout_since"`
	// PreviousTemplate is the template an undo rolls back to; empty while
	// the template never changed.
	PreviousTemplate string `json:"previous_template,omitempty"`
	// Reason is the autoscaler's latest decision.
	Reason    string            `json:"reason"`
	Replicas  []EndpointReplica `json:"replicas"`
	Metrics   *EndpointMetrics  `json:"metrics"`
	Events    []EndpointEvent   `json:"events"`
	CreatedAt *time.Time        `json:"created_at"`
	// BackOff is the crash-loop back-off of failing replicas; nil while
	// none failed since the last reset.
	BackOff *EndpointBackOff `json:"back_off"`
	// URL is where callers reach the endpoint through the gateways;
	// empty when the server knows no gateway.
	URL string `json:"url,omitempty"`
	// Gateway is what the gateways measured over the last minute; nil
	// when none reported the endpoint.
	Gateway *wire.EndpointGateway `json:"gateway"`
}

func quantilesMs(q endpoint.Quantiles) wire.LatencyQuantiles {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return wire.LatencyQuantiles{P50Ms: ms(q.P50), P95Ms: ms(q.P95), P99Ms: ms(q.P99)}
}

func newEndpointGateway(g *endpoint.GatewayMetrics) *wire.EndpointGateway {
	if g == nil {
		return nil
	}
	out := &wire.EndpointGateway{RequestsPerSec: g.RequestsPerSec, Errors: g.Errors, InFlight: g.InFlight,
		Latency: quantilesMs(g.Latency), FirstByte: quantilesMs(g.FirstByte), Replicas: make([]wire.EndpointGatewayReplica, len(g.Replicas))}
	for i, r := range g.Replicas {
		out.Replicas[i] = wire.EndpointGatewayReplica{Job: r.Job, RequestsPerSec: r.RequestsPerSec, Errors: r.Errors, InFlight: r.InFlight,
			Routed: r.Routed, Ready: r.Ready, Latency: quantilesMs(r.Latency)}
	}
	return out
}

// EndpointBackOff is an endpoint's crash-loop back-off: failures in a row
// (replicas that failed together count once) and until when no replica is
// submitted.
type EndpointBackOff struct {
	Failures    int        `json:"failures"`
	LastFailure *time.Time `json:"last_failure"`
	Until       *time.Time `json:"until"`
}

// EndpointReplica is one replica job that has not ended.
type EndpointReplica struct {
	Job      string `json:"job"`
	State    string `json:"state"`
	Reason   string `json:"reason"` // why a queued replica waits; "" otherwise
	Node     string `json:"node"`
	GPUModel string `json:"gpu_model"`
	// Template is the endpoint template the replica runs; Outdated when
	// it is not the endpoint's, so that a rollout replaces it.
	Template string `json:"template"`
	Outdated bool   `json:"outdated"`
}

// EndpointMetrics is the endpoint's last sample: its replicas' fresh
// reports together.
type EndpointMetrics struct {
	At             *time.Time `json:"at"`
	RequestsPerSec float64    `json:"requests_per_sec"`
	P95Ms          float64    `json:"p95_ms"`
	Utilisation    float64    `json:"utilisation"`
	Replicas       int        `json:"replicas"`
}

// EndpointEvent is one change of an endpoint.
type EndpointEvent struct {
	At     *time.Time `json:"at"`
	Kind   string     `json:"kind"`
	From   int        `json:"from"`
	To     int        `json:"to"`
	Reason string     `json:"reason"`
}

func newEndpoint(st endpoint.Status) Endpoint {
	e := st.Endpoint
	sp := e.Spec
	p := autoscale.ForEndpoint(sp)
	sp.Autoscale = model.EndpointAutoscale{ScaleInAfter: p.Stabilisation, ScaleInInterval: p.ScaleInInterval,
		LeadTime: p.LeadTime, PeakWindow: p.PeakWindow}
	out := Endpoint{Name: sp.Name, Tenant: sp.Tenant, Model: sp.Model, Spec: spec.EndpointDocumentOf(sp),
		Desired: e.Desired, Template: st.Template, PreviousTemplate: st.PreviousTemplate, RolloutSince: timePtr(e.RolloutSince), Reason: st.Decision, Replicas: make([]EndpointReplica, len(st.Replicas)),
		Events: make([]EndpointEvent, len(e.Events)), CreatedAt: timePtr(e.CreatedAt), URL: st.URL, Gateway: newEndpointGateway(st.Gateway)}
	for i, r := range st.Replicas {
		out.Replicas[i] = EndpointReplica{Job: r.Job, State: string(r.State), Reason: r.Reason, Node: r.Node, GPUModel: r.GPUModel,
			Template: r.Template, Outdated: r.Outdated}
	}
	for i, ev := range e.Events {
		out.Events[i] = EndpointEvent{At: timePtr(ev.At), Kind: ev.Kind, From: ev.From, To: ev.To, Reason: ev.Reason}
	}
	if cl := e.CrashLoop; cl.Failures > 0 {
		out.BackOff = &EndpointBackOff{Failures: cl.Failures, LastFailure: timePtr(cl.Last), Until: timePtr(cl.Until)}
	}
	if m := st.Metrics; m != nil {
		out.Metrics = &EndpointMetrics{At: timePtr(m.At), RequestsPerSec: m.RequestsPerSec, P95Ms: m.P95Ms,
			Utilisation: m.Utilisation, Replicas: m.Replicas}
	}
	return out
}

// parseEndpoint reads the one endpoint document of a create body. A
// tenant token's tenant is filled in when the document has none.
func parseEndpoint(body []byte, p server.Principal) (model.EndpointSpec, *Error) {
	tenant := ""
	if !p.Admin {
		tenant = p.Tenant
	}
	specs, err := spec.ParseEndpointsFor("endpoint", body, tenant)
	if err != nil {
		e := &Error{Code: codeInvalidSpec, Message: err.Error()}
		if errors.Is(err, spec.ErrTooLarge) {
			e.Code = codeBodyTooLarge
		}
		var se *spec.Error
		if errors.As(err, &se) {
			e.Field = se.Field
		}
		return model.EndpointSpec{}, e
	}
	if len(specs) != 1 {
		return model.EndpointSpec{}, &Error{Code: codeInvalidSpec,
			Message: fmt.Sprintf("the body holds %d endpoints; create one endpoint per request", len(specs))}
	}
	return specs[0], nil
}

func (h *handler) createEndpoint(w http.ResponseWriter, r *http.Request, p server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	s, perr := parseEndpoint(body, p)
	if perr != nil {
		writeError(w, perr.Code, perr.Field, perr.Message)
		return
	}
	if _, err := h.srv.CreateEndpoint(r.Context(), p, s); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/endpoints/"+url.PathEscape(s.Name))
	h.writeEndpoint(w, r, p, s.Name, http.StatusCreated)
}

// writeEndpoint answers with the endpoint name as it is now.
func (h *handler) writeEndpoint(w http.ResponseWriter, r *http.Request, p server.Principal, name string, status int) {
	st, err := h.srv.Endpoint(r.Context(), p, name)
	if err != nil {
		w.Header().Del("Location")
		h.fail(w, r, err)
		return
	}
	writeJSON(w, status, newEndpoint(st))
}

func (h *handler) listEndpoints(w http.ResponseWriter, r *http.Request, p server.Principal) {
	eps, err := h.srv.Endpoints(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]Endpoint, len(eps))
	for i, e := range eps {
		out[i] = newEndpoint(e)
	}
	writeJSON(w, http.StatusOK, map[string][]Endpoint{"endpoints": out})
}

func (h *handler) getEndpoint(w http.ResponseWriter, r *http.Request, p server.Principal) {
	st, err := h.srv.Endpoint(r.Context(), p, r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newEndpoint(st))
}

// ScaleRequest is the body of POST /v1/endpoints/{name}/scale.
type ScaleRequest struct {
	MinReplicas *int `json:"min_replicas"`
	MaxReplicas *int `json:"max_replicas"`
}

func (h *handler) scaleEndpoint(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req ScaleRequest
	if !h.decodeBody(w, r, &req) {
		return
	}
	switch {
	case req.MinReplicas == nil:
		writeError(w, codeInvalidSpec, "min_replicas", "must be given")
		return
	case req.MaxReplicas == nil:
		writeError(w, codeInvalidSpec, "max_replicas", "must be given")
		return
	}
	name := r.PathValue("name")
	if _, err := h.srv.ScaleEndpoint(r.Context(), p, name, *req.MinReplicas, *req.MaxReplicas); err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeEndpoint(w, r, p, name, http.StatusOK)
}

// endpointAction serves a POST with no body that changes the endpoint the
// path names by do (server.RestartEndpoint, server.UndoEndpoint) and
// answers with the endpoint.
func (h *handler) endpointAction(do func(context.Context, server.Principal, string) (*endpoint.Endpoint, error)) func(http.ResponseWriter, *http.Request, server.Principal) {
	return func(w http.ResponseWriter, r *http.Request, p server.Principal) {
		name := r.PathValue("name")
		if _, err := do(r.Context(), p, name); err != nil {
			h.fail(w, r, err)
			return
		}
		h.writeEndpoint(w, r, p, name, http.StatusOK)
	}
}

// updateEndpoint replaces what the autoscaler reads of the endpoint the
// path names with the body's (server.UpdateEndpoint); the body is an
// endpoint document as for create, naming the same endpoint.
func (h *handler) updateEndpoint(w http.ResponseWriter, r *http.Request, p server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	s, perr := parseEndpoint(body, p)
	if perr != nil {
		writeError(w, perr.Code, perr.Field, perr.Message)
		return
	}
	if s.Name != name {
		writeError(w, codeInvalidSpec, "name", fmt.Sprintf("the body names endpoint %q, the path %q", clip(s.Name), clip(name)))
		return
	}
	if _, err := h.srv.UpdateEndpoint(r.Context(), p, s); err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeEndpoint(w, r, p, name, http.StatusOK)
}

func (h *handler) deleteEndpoint(w http.ResponseWriter, r *http.Request, p server.Principal) {
	if err := h.srv.DeleteEndpoint(r.Context(), p, r.PathValue("name")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// MetricsReport is the body of POST /v1/endpoints/{name}/metrics: what
// one replica measured over its last report interval (allot demo serve's
// report).
type MetricsReport struct {
	RequestsPerSec float64 `json:"requests_per_sec"`
	P95Ms          float64 `json:"p95_ms"`
	Utilisation    float64 `json:"utilisation"`
	Replica        string  `json:"replica"`
	Port           int     `json:"port,omitempty"`
}

func (h *handler) endpointMetrics(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req MetricsReport
	if !h.decodeBody(w, r, &req) {
		return
	}
	err := h.srv.ReportEndpointMetrics(r.Context(), p, r.PathValue("name"), endpoint.Report{
		RequestsPerSec: req.RequestsPerSec, P95Ms: req.P95Ms, Utilisation: req.Utilisation, Replica: req.Replica, Port: req.Port})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
