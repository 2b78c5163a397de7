package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const endpointJSON = `{"name":"chat","tenant":"copilot","model":"llama","spec":{"name":"chat","tenant":"copilot","model":"llama",
"command":["allot","demo","serve"],"resources":{"gpus_per_instance":1,"gpu_milli":250,"gpu_models":["T4"]},"priority":"standard",
"min_replicas":1,"max_replicas":4,"slo":{"p95_ms":150},"throughput":{"T4":15},
"autoscale":{"scale_in_after":"10s","scale_in_interval":"2s","lead_time":"10s","peak_window":"2m0s"}},
"desired":2,"template":"d4552aa1b6","rollout_since":"2026-06-01T12:00:05Z","previous_template":"59753b677f","reason":"forecast 60 req/s needs 4 replicas","replicas":[
{"job":"chat-replica-1abc","state":"Running","node":"eastus-t4x4-01","gpu_model":"T4","template":"59753b677f","outdated":true},
{"job":"chat-replica-2def","state":"Queued","reason":"QuotaExceeded","node":"","gpu_model":"","template":"d4552aa1b6"}],
"metrics":{"at":"2026-06-01T12:00:10Z","requests_per_sec":60,"p95_ms":21.5,"utilisation":0.15,"replicas":2},
"events":[{"at":"2026-06-01T12:00:00Z","kind":"Created","from":0,"to":1,"reason":"created by copilot"},
{"at":"2026-06-01T12:00:10Z","kind":"ScaleOut","from":1,"to":2,"reason":"forecast 60 req/s needs 4 replicas\u001b[2J"}],
"created_at":"2026-06-01T12:00:00Z"}`

func TestEndpointCommands(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "chat.yaml")
	if err := os.WriteFile(file, []byte(`name: chat
tenant: copilot
model: llama
resources: {gpu_milli: 250, gpu_models: [T4]}
max_replicas: 4
slo: {p95_ms: 150}
throughput: {T4: 15}
autoscale: {scale_in_after: 10s, scale_in_interval: 2s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: chat\ntenant: copilot\nmodel: m\nslo: {p95_ms: 150}\nthroughput: {T4: 15}\nautoscale: {lead_time: soon}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCases(t, []commandCase{
		{name: "create", args: []string{"endpoint", "create", "-f", file},
			ex: exchange{method: "POST", path: "/v1/endpoints", status: 201, body: endpointJSON, checkBody: func(t *testing.T, body []byte) {
				var got struct {
					Name      string            `json:"name"`
					Tenant    string            `json:"tenant"`
					Max       int               `json:"max_replicas"`
					Autoscale map[string]string `json:"autoscale"`
				}
				if err := json.Unmarshal(body, &got); err != nil || got.Name != "chat" || got.Tenant != "copilot" || got.Max != 4 ||
					got.Autoscale["scale_in_after"] != "10s" || got.Autoscale["scale_in_interval"] != "2s" {
					t.Errorf("body %s", body)
				}
			}},
			wantOut: []string{"NAME", "chat", "2/2", "1-4", "60.0", "21.5 ms", "150 ms"}},
		{name: "create: name taken", args: []string{"endpoint", "create", "-f", file},
			ex:       exchange{method: "POST", path: "/v1/endpoints", status: 409, body: `{"code":"Conflict","message":"endpoint \"chat\" exists","field":"name"}`},
			wantCode: ExitUsage, wantErr: []string{"Conflict", "exists"}},
		{name: "list", args: []string{"endpoint", "list"},
			ex:      exchange{method: "GET", path: "/v1/endpoints", status: 200, body: `{"endpoints":[` + endpointJSON + `]}`},
			wantOut: []string{"TENANT", "chat", "copilot", "llama", "2/2", "ROLLOUT", "0/2 new"}},
		{name: "list json", args: []string{"endpoint", "list", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/endpoints", status: 200, body: `{"endpoints":null}`},
			wantOut: []string{`"endpoints": []`}},
		{name: "show", args: []string{"endpoint", "show", "chat"},
			ex: exchange{method: "GET", path: "/v1/endpoints/chat", status: 200, body: endpointJSON},
			wantOut: []string{"250/1000 of a GPU of T4", "2 running or starting, 2 desired (min 1, max 4)", "p95 ≤ 150 ms",
				"T4 15 req/s", "scale in after 10s, then at most every 2s", "60.0 req/s, p95 21.5 ms",
				"d4552aa1b6, rolling out since 2026-06-01T12:00:05Z: 0 of 2 desired replicas run it",
				"Previous:    59753b677f ('allot endpoint undo chat' rolls back to it)",
				"Rollout:     default: at most a quarter of the desired count",
				"chat-replica-1abc", "eastus-t4x4-01", "59753b677f (outdated)", "chat-replica-2def", "QuotaExceeded", "ScaleOut", "1→2",
				`forecast 60 req/s needs 4 replicas\x1b[2J`}},
		{name: "show yaml", args: []string{"endpoint", "show", "chat", "-o", "yaml"},
			ex:      exchange{method: "GET", path: "/v1/endpoints/chat", status: 200, body: endpointJSON},
			wantOut: []string{"kind: ScaleOut", "scale_in_after: 10s"}},
		{name: "show another tenant's", args: []string{"endpoint", "show", "chat"},
			ex:       exchange{method: "GET", path: "/v1/endpoints/chat", status: 403, body: `{"code":"Forbidden","message":"endpoint \"chat\" belongs to another tenant"}`},
			wantCode: ExitFailure, wantErr: []string{"Forbidden"}},
		{name: "scale", args: []string{"endpoint", "scale", "chat", "--min", "2", "--max", "6"},
			ex: exchange{method: "POST", path: "/v1/endpoints/chat/scale", status: 200, body: endpointJSON, checkBody: func(t *testing.T, body []byte) {
				if string(body) != `{"max_replicas":6,"min_replicas":2}` {
					t.Errorf("body %s", body)
				}
			}},
			wantOut: []string{"chat", "2/2"}},
		{name: "restart", args: []string{"endpoint", "restart", "chat"},
			ex:      exchange{method: "POST", path: "/v1/endpoints/chat/restart", status: 200, body: endpointJSON},
			wantOut: []string{"Restarting:", "chat", "d4552aa1b6, rolling out since", "allot endpoint show chat"}},
		{name: "restart another tenant's", args: []string{"endpoint", "restart", "chat"},
			ex:       exchange{method: "POST", path: "/v1/endpoints/chat/restart", status: 403, body: `{"code":"Forbidden","message":"endpoint \"chat\" belongs to another tenant"}`},
			wantCode: ExitFailure, wantErr: []string{"Forbidden"}},
		{name: "undo", args: []string{"endpoint", "undo", "chat"},
			ex:      exchange{method: "POST", path: "/v1/endpoints/chat/undo", status: 200, body: endpointJSON},
			wantOut: []string{"Rolling back:", "chat", "d4552aa1b6, rolling out since", "allot endpoint show chat"}},
		{name: "undo of a template that never changed", args: []string{"endpoint", "undo", "chat"},
			ex: exchange{method: "POST", path: "/v1/endpoints/chat/undo", status: 409,
				body: `{"code":"Conflict","message":"endpoint chat has no earlier template to roll back to: its template never changed"}`},
			wantCode: ExitUsage, wantErr: []string{"Conflict: endpoint chat has no earlier template"}},
		{name: "delete", args: []string{"endpoint", "delete", "chat"},
			ex:      exchange{method: "DELETE", path: "/v1/endpoints/chat", status: 204},
			wantOut: []string{"deleted endpoint chat"}},
	})
	// The file and the bounds are checked before anything is sent (no
	// server listens on port 1).
	isolate(t)
	if _, errOut, code := runCLI(t, "endpoint", "create", "-f", bad, "--server", "http://127.0.0.1:1"); code != ExitUsage ||
		!strings.Contains(errOut, "bad.yaml") || !strings.Contains(errOut, "autoscale.lead_time") {
		t.Errorf("a bad file: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "endpoint", "scale", "chat", "--min", "3", "--max", "2", "--server", "http://127.0.0.1:1"); code != ExitUsage {
		t.Errorf("--min 3 --max 2: exit %d, %s", code, errOut)
	}
}

// endpoint update sends each endpoint of the file to PUT /v1/endpoints/NAME.
func TestEndpointUpdate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "chat.yaml")
	if err := os.WriteFile(file, []byte("name: chat\ntenant: copilot\nmodel: m\nslo: {p95_ms: 120}\nthroughput: {T4: 10}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	answer := `{"name":"chat","tenant":"copilot","model":"m","desired":1,"spec":{"name":"chat","min_replicas":1,"max_replicas":1,"slo":{"p95_ms":120}}}`
	runCases(t, []commandCase{
		{name: "update", args: []string{"endpoint", "update", file},
			ex:      exchange{method: "PUT", path: "/v1/endpoints/chat", status: 200, body: answer},
			wantOut: []string{"chat", "120 ms"}},
		{name: "refused", args: []string{"endpoint", "update", "-f", file},
			ex: exchange{method: "PUT", path: "/v1/endpoints/chat", status: 400,
				body: `{"code":"InvalidSpec","field":"tenant","message":"an endpoint stays with its tenant \"copilot\""}`},
			wantCode: ExitUsage, wantErr: []string{"stays with its tenant"}},
	})
}
