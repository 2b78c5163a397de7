package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestQuotaRequestCommands(t *testing.T) {
	req := `{"id":"qr-1","tenant":"acme","region":"eastus","series":"ND","gpus":32,"current_gpus":16,"reason":"run","state":"pending",
"created_at":"2026-12-01T00:00:00Z","created_by":"acme"}`
	wantBody := func(want map[string]any) func(*testing.T, []byte) {
		return func(t *testing.T, b []byte) {
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("body %s: %s is %v, want %v", b, k, got[k], v)
				}
			}
		}
	}
	runCases(t, []commandCase{
		{name: "request", args: []string{"quota", "request", "--region", "eastus", "--series", "ND", "--gpus", "32", "--reason", "run"},
			ex: exchange{method: "POST", path: "/v1/quota-requests", status: 201, body: req,
				checkBody: wantBody(map[string]any{"region": "eastus", "series": "ND", "gpus": 32.0, "reason": "run"})},
			wantOut: []string{"ID", "WANTED", "qr-1", "16", "32", "pending"}},
		{name: "request refused names the field", args: []string{"quota", "request", "--region", "eastus", "--series", "ND", "--gpus", "-1", "--reason", "x"},
			ex: exchange{method: "POST", path: "/v1/quota-requests", status: 400,
				body: `{"code":"InvalidSpec","message":"is -1, want 0 to 1000000","field":"gpus"}`},
			wantCode: ExitUsage, wantErr: []string{"InvalidSpec", "field gpus"}},
		{name: "requests by state", args: []string{"quota", "requests", "--state", "pending", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/quota-requests", query: "state=pending", status: 200, body: `{"quota_requests":[` + req + `]}`},
			wantOut: []string{`"quota_requests": [`, `"id": "qr-1"`}},
		{name: "approve", args: []string{"quota", "approve", "qr-1"},
			ex:      exchange{method: "POST", path: "/v1/quota-requests/qr-1/approve", status: 200, body: strings.Replace(req, "pending", "approved", 1)},
			wantOut: []string{"approved"}},
		{name: "a tenant approving", args: []string{"quota", "approve", "qr-1"},
			ex: exchange{method: "POST", path: "/v1/quota-requests/qr-1/approve", status: 403,
				body: `{"code":"Forbidden","message":"this endpoint needs the admin token"}`},
			wantCode: ExitFailure, wantErr: []string{"Forbidden"}},
		{name: "deny", args: []string{"quota", "deny", "qr-1", "--reason", "sold out"},
			ex: exchange{method: "POST", path: "/v1/quota-requests/qr-1/deny", status: 200, body: strings.Replace(req, "pending", "denied", 1),
				checkBody: wantBody(map[string]any{"reason": "sold out"})},
			wantOut: []string{"denied"}},
		{name: "set", args: []string{"quota", "set", "--tenant", "acme", "--region", "eastus", "--series", "ND", "--gpus", "0"},
			ex: exchange{method: "PUT", path: "/v1/quotas", status: 200, body: `{"tenant":"acme","region":"eastus","series":"ND","gpus":0}`,
				checkBody: wantBody(map[string]any{"tenant": "acme", "gpus": 0.0})},
			wantOut: []string{"QUOTA GPUS", "acme"}},
		{name: "audit list", args: []string{"audit", "list", "--since", "24h", "--actor", "admin", "--limit", "1"},
			ex: exchange{method: "GET", path: "/v1/audit", query: "actor=admin&limit=1&since=24h", status: 200,
				body: `{"records":[{"id":"1","time":"2026-12-01T00:00:00Z","actor":"admin","action":"quota.approve","object":"quota-request/qr-1","detail":"acme eastus ND: quota 16 → 32 GPUs"}],"more":true}`},
			wantOut: []string{"ACTION", "quota.approve", "quota-request/qr-1", "16 → 32"}, wantErr: []string{"more records match"}},
	})
}

// 'quota request list' (kubectl's habit) points to the listing command
// instead of cobra's bare "unknown command", and sends nothing.
func TestQuotaRequestTakesNoArguments(t *testing.T) {
	isolate(t)
	url, hits := stub(t, exchange{method: "GET", path: "/v1/quota-requests", status: 200, body: `{"quota_requests":[]}`})
	_, errOut, code := runCLI(t, "quota", "request", "list", "--server", url)
	if code != ExitUsage || !strings.Contains(errOut, "to list requests: allot quota requests") || hits.Load() != 0 {
		t.Errorf("exit %d, %d requests, stderr %q", code, hits.Load(), errOut)
	}
}
