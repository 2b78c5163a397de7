package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Endpoint is an inference endpoint as the API shows it.
type Endpoint struct {
	Name   string          `json:"name"`
	Tenant string          `json:"tenant"`
	Model  string          `json:"model"`
	Spec   json.RawMessage `json:"spec,omitempty"` // the endpoint document
	// Desired is the replica count the endpoint should have.
	Desired int `json:"desired"`
	// Template names what shapes the replicas; RolloutSince is when its
	// rollout began, zero when every replica runs it.
	Template     string `json:"template"`
	RolloutSince Time   `json:"rollout_since"`
	// PreviousTemplate is the template UndoEndpoint rolls back to; empty
	// while the template never changed.
	PreviousTemplate string `json:"previous_template"`
	// Reason is the autoscaler's latest decision.
	Reason    string            `json:"reason"`
	Replicas  []EndpointReplica `json:"replicas"`
	Metrics   *EndpointMetrics  `json:"metrics"`
	Events    []EndpointEvent   `json:"events"`
	CreatedAt Time              `json:"created_at"`
	// BackOff is the crash-loop back-off of failing replicas; nil while
	// none failed.
	BackOff *EndpointBackOff `json:"back_off"`
	// URL is where callers reach the endpoint through the gateways.
	URL string `json:"url"`
	// Gateway is what the gateways measured over the last minute.
	Gateway *EndpointGateway `json:"gateway"`
}

// EndpointGateway is what the gateways measured of an endpoint over the
// last minute.
type EndpointGateway = wire.EndpointGateway

// EndpointGatewayReplica is one replica of EndpointGateway.
type EndpointGatewayReplica = wire.EndpointGatewayReplica

// LatencyQuantiles are p50, p95 and p99 in ms.
type LatencyQuantiles = wire.LatencyQuantiles

// EndpointBackOff is an endpoint's crash-loop back-off: failures in a row
// and until when no replica is submitted.
type EndpointBackOff struct {
	Failures    int  `json:"failures"`
	LastFailure Time `json:"last_failure"`
	Until       Time `json:"until"`
}

// EndpointReplica is one replica job of an endpoint that has not ended.
type EndpointReplica struct {
	Job      string `json:"job"`
	State    string `json:"state"`
	Reason   string `json:"reason"` // why a queued replica waits ('allot job why JOB' for more)
	Node     string `json:"node"`
	GPUModel string `json:"gpu_model"`
	Template string `json:"template"`
	Outdated bool   `json:"outdated"` // runs an earlier template, which a rollout replaces
}

// EndpointMetrics is the endpoint's last sample of its replicas' reports.
type EndpointMetrics struct {
	At             Time    `json:"at"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	P95Ms          float64 `json:"p95_ms"`
	Utilisation    float64 `json:"utilisation"`
	Replicas       int     `json:"replicas"`
}

// EndpointEvent is one change of an endpoint's desired replica count, or
// of its replicas, and why.
type EndpointEvent struct {
	At     Time   `json:"at"`
	Kind   string `json:"kind"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
}

// EndpointSpec is the part of an endpoint document that the CLI prints.
type EndpointSpec struct {
	MinReplicas int `json:"min_replicas"`
	MaxReplicas int `json:"max_replicas"`
	SLO         struct {
		P95Ms float64 `json:"p95_ms"`
	} `json:"slo"`
	Priority   string             `json:"priority"`
	Command    []string           `json:"command"`
	Throughput map[string]float64 `json:"throughput"`
	Resources  struct {
		GPUsPerInstance int      `json:"gpus_per_instance"`
		GPUMilli        int64    `json:"gpu_milli"`
		GPUModels       []string `json:"gpu_models"`
	} `json:"resources"`
	Autoscale map[string]string `json:"autoscale"`
	// Rollout is nil for the default rolling update.
	Rollout *struct {
		MaxSurge       int `json:"max_surge"`
		MaxUnavailable int `json:"max_unavailable"`
	} `json:"rollout"`
}

// Summary decodes the endpoint's spec; the zero value when it has none.
func (e Endpoint) Summary() EndpointSpec {
	var s EndpointSpec
	_ = json.Unmarshal(e.Spec, &s)
	return s
}

// MetricsReport is one replica's report (POST /v1/endpoints/{name}/metrics).
type MetricsReport struct {
	RequestsPerSec float64 `json:"requests_per_sec"`
	P95Ms          float64 `json:"p95_ms"`
	Utilisation    float64 `json:"utilisation"`
	Replica        string  `json:"replica"`
	Port           int     `json:"port,omitempty"`
}

// CreateEndpoint creates the endpoint of doc, an endpoint document (YAML
// or JSON, as in an endpoint file).
func (c *Client) CreateEndpoint(ctx context.Context, doc []byte, contentType string) (Endpoint, error) {
	var out Endpoint
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/endpoints", body: doc, contentType: contentType, out: &out})
	return out, err
}

// UpdateEndpoint gives the endpoint name the spec of doc, an endpoint
// document naming it: only model, bounds, SLO, throughput and autoscale
// may differ from the endpoint's.
func (c *Client) UpdateEndpoint(ctx context.Context, name string, doc []byte, contentType string) (Endpoint, error) {
	var out Endpoint
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/endpoints/" + seg(name), body: doc, contentType: contentType, out: &out})
	return out, err
}

// ListEndpoints returns the endpoints the token may see.
func (c *Client) ListEndpoints(ctx context.Context) ([]Endpoint, error) {
	var out struct {
		Endpoints []Endpoint `json:"endpoints"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/endpoints", out: &out})
	return out.Endpoints, err
}

// GetEndpoint returns the endpoint named name.
func (c *Client) GetEndpoint(ctx context.Context, name string) (Endpoint, error) {
	var out Endpoint
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/endpoints/" + seg(name), out: &out})
	return out, err
}

// ScaleEndpoint sets the endpoint's min_replicas and max_replicas.
func (c *Client) ScaleEndpoint(ctx context.Context, name string, minReplicas, maxReplicas int) (Endpoint, error) {
	body, err := json.Marshal(map[string]int{"min_replicas": minReplicas, "max_replicas": maxReplicas})
	if err != nil {
		return Endpoint{}, fmt.Errorf("encode scale: %w", err)
	}
	var out Endpoint
	err = c.do(ctx, request{method: http.MethodPost, path: "/v1/endpoints/" + seg(name) + "/scale", body: body,
		contentType: "application/json", out: &out})
	return out, err
}

// RestartEndpoint rolls every replica of the endpoint over to new ones.
func (c *Client) RestartEndpoint(ctx context.Context, name string) (Endpoint, error) {
	var out Endpoint
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/endpoints/" + seg(name) + "/restart", out: &out})
	return out, err
}

// UndoEndpoint rolls the endpoint back to its template before its last
// template change, as kubectl rollout undo does.
func (c *Client) UndoEndpoint(ctx context.Context, name string) (Endpoint, error) {
	var out Endpoint
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/endpoints/" + seg(name) + "/undo", out: &out})
	return out, err
}

// DeleteEndpoint stops the endpoint's replicas and deletes it.
func (c *Client) DeleteEndpoint(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/endpoints/" + seg(name)})
}

// ReportEndpointMetrics posts one replica's report for endpoint name.
func (c *Client) ReportEndpointMetrics(ctx context.Context, name string, r MetricsReport) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/endpoints/" + seg(name) + "/metrics", body: body,
		contentType: "application/json"})
}
