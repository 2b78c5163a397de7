package cli

import (
	"strings"
	"testing"
)

func TestNodeList(t *testing.T) {
	body := `{"nodes":[{"name":"eastus-t4x1-01","sku":"NC4-T4x1","region":"eastus","cluster":"c1","leaf":"","rack":"r1",
"health":"Ready","gpus":1,"gpu_model":"T4","free_gpu_milli":750,"jobs":["j-2"]}]}`
	runCases(t, []commandCase{
		{name: "table", args: []string{"node", "list"},
			ex:      exchange{method: "GET", path: "/v1/nodes", status: 200, body: body},
			wantOut: []string{"HEALTH", "eastus-t4x1-01", "Ready", "1 T4", "0.75", "j-2"}},
		{name: "many jobs keep to a line", args: []string{"node", "list"},
			ex: exchange{method: "GET", path: "/v1/nodes", status: 200,
				body: strings.Replace(body, `"jobs":["j-2"]`, `"jobs":["j-1","j-2","j-3","j-4","j-5"]`, 1)},
			wantOut: []string{"j-1,j-2,j-3 +2 more"}},
		{name: "every job in json", args: []string{"node", "list", "-o", "json"},
			ex: exchange{method: "GET", path: "/v1/nodes", status: 200,
				body: strings.Replace(body, `"jobs":["j-2"]`, `"jobs":["j-1","j-2","j-3","j-4","j-5"]`, 1)},
			wantOut: []string{`"j-5"`}},
		{name: "tenant token", args: []string{"node", "list"},
			ex:       exchange{method: "GET", path: "/v1/nodes", status: 403, body: `{"code":"Forbidden","message":"nodes are admin-only"}`},
			wantCode: ExitFailure, wantErr: []string{"allot: Forbidden: nodes are admin-only"}},
	})
}

func TestNodeDrainResume(t *testing.T) {
	drained := `{"name":"eastus-t4x1-01","sku":"NC4-T4x1","region":"eastus","cluster":"c1","leaf":"","rack":"r1",
"health":"Draining","gpus":1,"gpu_model":"T4","free_gpu_milli":0,"jobs":["j-2"],
"drain":{"reason":"XID 79","by":"admin","at":"2026-06-01T12:00:00Z"}}`
	runCases(t, []commandCase{
		{name: "drain", args: []string{"node", "drain", "eastus-t4x1-01", "--reason", "XID 79"},
			ex: exchange{method: "POST", path: "/v1/nodes/eastus-t4x1-01/drain", status: 200,
				checkBody: func(t *testing.T, b []byte) {
					if string(b) != `{"reason":"XID 79"}` {
						t.Errorf("body %s", b)
					}
				}, body: drained},
			wantOut: []string{"Draining", "j-2", "XID 79 (admin, 2026-06-01T12:00:00Z)"}},
		{name: "a refused reason", args: []string{"node", "drain", "eastus-t4x1-01", "--reason", " "},
			ex: exchange{method: "POST", path: "/v1/nodes/eastus-t4x1-01/drain", status: 400,
				body: `{"code":"InvalidSpec","message":"must not be empty: say why","field":"reason"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: InvalidSpec: must not be empty: say why (field reason)"}},
		{name: "resume, json", args: []string{"node", "resume", "eastus-t4x1-01", "-o", "json"},
			ex:      exchange{method: "POST", path: "/v1/nodes/eastus-t4x1-01/resume", status: 200, body: strings.Replace(drained, `"health":"Draining"`, `"health":"Ready"`, 1)},
			wantOut: []string{`"name": "eastus-t4x1-01"`, `"health": "Ready"`}},
	})
}
