package cli

import "testing"

func TestQuotaUsage(t *testing.T) {
	body := `{"usage":[{"tenant":"acme","region":"eastus","series":"ND","used_gpus":8,"quota_gpus":16},
{"tenant":"research","region":"eastus","series":"NC","used_gpus":0.25,"quota_gpus":null}]}`
	runCases(t, []commandCase{
		{name: "table", args: []string{"quota", "usage", "--region", "eastus"},
			ex:      exchange{method: "GET", path: "/v1/usage", query: "region=eastus", status: 200, body: body},
			wantOut: []string{"TENANT", "QUOTA GPUS", "acme", "16", "research", "0.25", "-"}},
		{name: "yaml", args: []string{"quota", "usage", "--region", "eastus", "-o", "yaml"},
			ex:      exchange{method: "GET", path: "/v1/usage", query: "region=eastus", status: 200, body: body},
			wantOut: []string{"usage:\n  - tenant: acme\n", "quota_gpus: null\n"}},
		{name: "every region", args: []string{"quota", "usage"},
			ex:      exchange{method: "GET", path: "/v1/usage", query: "", status: 200, body: body},
			wantOut: []string{"REGION", "eastus", "acme", "16"}},
		{name: "list is usage", args: []string{"quota", "list"},
			ex:      exchange{method: "GET", path: "/v1/usage", query: "", status: 200, body: body},
			wantOut: []string{"acme", "16"}},
	})
}
