package cli

import "testing"

func TestNodeList(t *testing.T) {
	body := `{"nodes":[{"name":"eastus-t4x1-01","sku":"NC4-T4x1","region":"eastus","cluster":"c1","leaf":"","rack":"r1",
"health":"Ready","gpus":1,"gpu_model":"T4","free_gpu_milli":750,"jobs":["j-2"]}]}`
	runCases(t, []commandCase{
		{name: "table", args: []string{"node", "list"},
			ex:      exchange{method: "GET", path: "/v1/nodes", status: 200, body: body},
			wantOut: []string{"HEALTH", "eastus-t4x1-01", "Ready", "1 T4", "0.75", "j-2"}},
		{name: "tenant token", args: []string{"node", "list"},
			ex:       exchange{method: "GET", path: "/v1/nodes", status: 403, body: `{"code":"Forbidden","message":"nodes are admin-only"}`},
			wantCode: ExitFailure, wantErr: []string{"allot: Forbidden: nodes are admin-only"}},
	})
}
