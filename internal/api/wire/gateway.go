package wire

import "github.com/allot-dev/allot/internal/latency"

// RouteTable is the answer of GET /v1/routes: every endpoint's route and
// the table's version, which a gateway passes back as after= to wait for
// the next change.
type RouteTable struct {
	Version string  `json:"version"`
	Routes  []Route `json:"routes"`
}

// Route is one endpoint as a gateway routes to it.
type Route struct {
	Endpoint string `json:"endpoint"`
	Tenant   string `json:"tenant"`
	// Access is "tenant" (a bearer token of the tenant, whose SHA-256 is
	// among Callers) or "public".
	Access    string         `json:"access"`
	Readiness Readiness      `json:"readiness"`
	Replicas  []RouteReplica `json:"replicas"`
	Callers   []string       `json:"callers,omitempty"`
}

// Readiness is the check a replica passes before it gets traffic.
type Readiness struct {
	Path      string `json:"path"`
	TimeoutMs int64  `json:"timeout_ms"`
}

// RouteReplica is one replica a gateway may send requests to.
type RouteReplica struct {
	Job     string `json:"job"`
	Address string `json:"address"`
}

// GatewayReport is the body of POST /v1/gateway/reports: what one gateway
// measured since its last report.
type GatewayReport struct {
	Gateway   string                  `json:"gateway"`
	Endpoints []GatewayEndpointReport `json:"endpoints"`
}

// GatewayEndpointReport is one endpoint of a GatewayReport.
type GatewayEndpointReport struct {
	Endpoint string                 `json:"endpoint"`
	Replicas []GatewayReplicaReport `json:"replicas"`
}

// GatewayReplicaReport is one replica of a GatewayReport: requests
// completed and errors among them, in flight now, whether the gateway
// routes to it and found it ready, and the latency histograms of the
// completed requests (whole, and to the first byte).
type GatewayReplicaReport struct {
	Job       string         `json:"job"`
	Requests  uint64         `json:"requests"`
	Errors    uint64         `json:"errors"`
	InFlight  int            `json:"in_flight"`
	Routed    bool           `json:"routed"`
	Ready     bool           `json:"ready"`
	Latency   latency.Sparse `json:"latency,omitempty"`
	FirstByte latency.Sparse `json:"first_byte,omitempty"`
}

// EndpointGateway is what the gateways measured of an endpoint over the
// last minute (Endpoint.gateway): requests/s, errors, requests in flight
// now, and latency quantiles in ms of whole requests and to the first
// byte, in all and per replica.
type EndpointGateway struct {
	RequestsPerSec float64                  `json:"requests_per_sec"`
	Errors         uint64                   `json:"errors"`
	InFlight       int                      `json:"in_flight"`
	Latency        LatencyQuantiles         `json:"latency"`
	FirstByte      LatencyQuantiles         `json:"first_byte"`
	Replicas       []EndpointGatewayReplica `json:"replicas"`
}

// LatencyQuantiles are p50, p95 and p99 in ms.
type LatencyQuantiles struct {
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// EndpointGatewayReplica is one replica of EndpointGateway.
type EndpointGatewayReplica struct {
	Job            string           `json:"job"`
	RequestsPerSec float64          `json:"requests_per_sec"`
	Errors         uint64           `json:"errors"`
	InFlight       int              `json:"in_flight"`
	Routed         bool             `json:"routed"`
	Ready          bool             `json:"ready"`
	Latency        LatencyQuantiles `json:"latency"`
}
