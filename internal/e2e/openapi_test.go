package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/client"
)

// TestClientMatchesOpenAPI checks package client against the contract the
// server serves: every endpoint it calls exists with the success status it
// expects, and its types have exactly the schema's fields.
func TestClientMatchesOpenAPI(t *testing.T) {
	needServer(t)
	resp, err := http.Get(serverURL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths      map[string]map[string]struct{ Responses map[string]any }
		Components struct {
			Schemas map[string]struct{ Properties map[string]any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for _, ep := range []struct{ method, path, status string }{
		{"post", "/v1/jobs", "201"}, {"post", "/v1/jobs/batch", "201"}, {"get", "/v1/jobs", "200"}, {"get", "/v1/jobs/{id}", "200"},
		{"post", "/v1/jobs/{id}/cancel", "200"}, {"get", "/v1/jobs/{id}/why", "200"}, {"get", "/v1/nodes", "200"},
		{"get", "/v1/nodes/{name}", "200"}, {"get", "/v1/skus", "200"}, {"get", "/v1/usage", "200"}, {"post", "/v1/reservations", "201"},
		{"get", "/v1/reservations", "200"}, {"get", "/v1/reservations/{name}", "200"}, {"delete", "/v1/reservations/{name}", "204"}, {"post", "/v1/tokens", "201"},
		{"post", "/v1/endpoints", "201"}, {"get", "/v1/endpoints", "200"}, {"get", "/v1/endpoints/{name}", "200"},
		{"post", "/v1/endpoints/{name}/scale", "200"}, {"post", "/v1/endpoints/{name}/restart", "200"}, {"post", "/v1/endpoints/{name}/undo", "200"}, {"delete", "/v1/endpoints/{name}", "204"},
		{"post", "/v1/endpoints/{name}/metrics", "204"},
		{"put", "/v1/policies", "200"}, {"get", "/v1/policies", "200"}, {"delete", "/v1/policies", "200"},
		{"delete", "/v1/policies/{name}", "200"},
		{"post", "/v1/jobs/{id}/hold", "200"}, {"post", "/v1/jobs/{id}/release", "200"}, {"post", "/v1/jobs/{id}/requeue", "200"},
		{"patch", "/v1/jobs/{id}", "200"},
		{"get", "/v1/tokens", "200"}, {"delete", "/v1/tokens/{id}", "200"}, {"get", "/v1/accounting", "200"}, {"get", "/v1/cost", "200"},
		{"get", "/v1/alerts", "200"},
		{"post", "/v1/instances", "201"}, {"get", "/v1/instances", "200"}, {"get", "/v1/instances/{id}", "200"},
		{"delete", "/v1/instances/{id}", "200"},
		{"post", "/v1/quota-requests", "201"}, {"get", "/v1/quota-requests", "200"}, {"put", "/v1/quotas", "200"},
		{"post", "/v1/quota-requests/{id}/approve", "200"}, {"post", "/v1/quota-requests/{id}/deny", "200"}, {"get", "/v1/audit", "200"},
		{"post", "/v1/nodes/{name}/drain", "200"}, {"post", "/v1/nodes/{name}/resume", "200"},
		{"post", "/v1/nodes/{name}/job-files", "200"}, {"post", "/v1/jobs/{id}/checkpoint", "200"},
		{"get", "/v1/routes", "200"}, {"post", "/v1/gateway/reports", "204"},
		{"put", "/v1/registry-credentials/{registry}", "200"}, {"get", "/v1/registry-credentials", "200"},
		{"delete", "/v1/registry-credentials/{registry}", "204"},
	} {
		op, ok := doc.Paths[ep.path][ep.method]
		if !ok {
			t.Errorf("openapi.json has no %s %s", strings.ToUpper(ep.method), ep.path)
			continue
		}
		if _, ok := op.Responses[ep.status]; !ok {
			t.Errorf("%s %s: no %s response in openapi.json", strings.ToUpper(ep.method), ep.path, ep.status)
		}
	}
	for name, v := range map[string]any{"Job": client.Job{}, "Batch": client.Batch{}, "JobError": client.JobError{}, "Why": client.Why{}, "RegionEstimate": client.RegionEstimate{}, "Node": client.Node{}, "NodeDrain": wire.NodeDrain{}, "DrainRequest": wire.DrainRequest{}, "SKU": client.SKU{},
		"Usage": client.Usage{}, "Reservation": client.Reservation{}, "ReservationUse": client.ReservationUse{}, "Token": client.Token{},
		"Endpoint": client.Endpoint{}, "EndpointReplica": client.EndpointReplica{}, "EndpointMetrics": client.EndpointMetrics{},
		"EndpointEvent": client.EndpointEvent{}, "MetricsReport": client.MetricsReport{},
		"PolicySet": client.PolicySet{}, "Policy": client.Policy{}, "PolicyCondition": client.PolicyCondition{},
		"PolicyOverride": client.PolicyOverride{}, "PolicyEvent": client.PolicyEvent{},
		"JobList": client.JobList{}, "TokenInfo": client.TokenInfo{}, "Accounting": client.Accounting{},
		"AccountingRow": client.AccountingRow{}, "CostReport": client.CostReport{}, "CostRow": client.CostRow{}, "ReservationCost": wire.ReservationCost{},
		"Budget": wire.Budget{}, "BudgetEvent": wire.BudgetEvent{}, "Alert": client.Alert{}, "AlertNotice": client.AlertNotice{},
		"QuotaRequest": client.QuotaRequest{}, "QuotaRequestNew": client.QuotaRequestNew{}, "QuotaSet": client.QuotaSet{},
		"AuditRecord": client.AuditRecord{}, "AuditLog": client.AuditLog{},
		"Instance": client.Instance{}, "InstanceRequest": client.InstanceRequest{},
		"Assignment": wire.Assignment{}, "CheckpointRequest": wire.CheckpointRequest{}, "JobFilesRequest": wire.JobFilesRequest{},
		"JobFiles": wire.JobFiles{}, "EndpointGateway": client.EndpointGateway{}, "EndpointGatewayReplica": client.EndpointGatewayReplica{},
		"LatencyQuantiles": client.LatencyQuantiles{}, "RouteTable": wire.RouteTable{}, "Route": wire.Route{}, "RouteReplica": wire.RouteReplica{},
		"GatewayReport": wire.GatewayReport{}, "GatewayEndpointReport": wire.GatewayEndpointReport{}, "GatewayReplicaReport": wire.GatewayReplicaReport{},
		"RegistryCredential": client.RegistryCredential{}, "RegistryCredentialSet": wire.RegistryCredentialSet{}, "Pull": wire.Pull{}} {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("openapi.json has no schema %s", name)
			continue
		}
		var want, got []string
		for p := range schema.Properties {
			want = append(want, p)
		}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			got = append(got, tag)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("client.%s fields %v, schema %v", name, got, want)
		}
	}
}
