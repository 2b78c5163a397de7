package cli

import (
	"os"
	"strings"
	"testing"
)

// policySet is a GET /v1/policies answer: ai_training_priority fires and
// lowered one job; customer_sla_protection does not apply.
const policySet = `{"revision":3,"applied_at":"2026-06-01T12:00:00Z","applied_by":"admin","text":"scheduling_policies: []\n",
"evaluated_at":"2026-06-01T12:05:00Z","policies":[
 {"name":"ai_training_priority","firing":true,"held":true,"since":"2026-06-01T12:01:00Z","until":"2026-06-01T12:10:00Z",
  "cooldown":"5m0s","actions":["scale_down developer_instances to 30%"],
  "conditions":[{"metric":"gpu_utilization","key":"fleet","held":true,"seen":true,"current":0.875,"lowest":0,"threshold":0.85,"for":"0s",
   "text":"gpu_utilization fleet 87.5% above 85.0%"}],
  "overrides":[{"job":"j-7","action":"scale_down","from":"standard","to":"spot","detail":"beyond the 30% floor of 28 GPUs"}],"ignored":[]},
 {"name":"customer_sla_protection","firing":false,"held":false,"since":null,"until":null,"cooldown":"5m0s",
  "actions":["reallocate inference_gpus to reserved"],
  "conditions":[{"metric":"p95_latency","key":"chat","held":false,"seen":true,"current":0.09,"lowest":0,"threshold":0.15,"for":"5m0s",
   "text":"p95_latency chat 90ms not above 150ms for 5m0s"}],"overrides":[],"ignored":[]}],
"events":[{"at":"2026-06-01T12:01:00Z","policy":"ai_training_priority","event":"fires","text":"gpu_utilization fleet 87.5% above 85.0%","conditions":[]}]}`

func TestPolicyServerCommands(t *testing.T) {
	seed, err := os.ReadFile("../../examples/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, []commandCase{
		{name: "apply sends the file", args: []string{"policy", "apply", "-f", "../../examples/policies.yaml"},
			ex: exchange{method: "PUT", path: "/v1/policies", status: 200, body: policySet, checkBody: func(t *testing.T, body []byte) {
				if string(body) != string(seed) {
					t.Errorf("body %q, want the file", body)
				}
			}},
			wantOut: []string{"Revision 3, applied 2026-06-01T12:00:00Z by admin", "ai_training_priority", "fires", "j-7", "beyond the 30% floor"}},
		{name: "apply as a tenant", args: []string{"policy", "apply", "-f", "../../examples/policies.yaml"},
			ex:       exchange{method: "PUT", path: "/v1/policies", status: 403, body: `{"code":"Forbidden","message":"this endpoint needs the admin token"}`},
			wantCode: ExitFailure, wantErr: []string{"Forbidden: this endpoint needs the admin token"}},
		{name: "list", args: []string{"policy", "list"},
			ex: exchange{method: "GET", path: "/v1/policies", status: 200, body: policySet},
			wantOut: []string{"POLICY", "STATE", "SINCE", "ai_training_priority", "fires", "2026-06-01T12:01:00Z", "gpu_utilization fleet 87.5% above 85.0%",
				"customer_sla_protection", "idle", "p95_latency chat 90ms not above 150ms for 5m0s",
				"JOB", "j-7", "standard", "spot", "TIME", "EVENT"}},
		{name: "list text", args: []string{"policy", "list", "--text"},
			ex:      exchange{method: "GET", path: "/v1/policies", status: 200, body: policySet},
			wantOut: []string{"scheduling_policies: []"}},
		{name: "list json", args: []string{"policy", "list", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/policies", status: 200, body: policySet},
			wantOut: []string{`"firing": true`, `"job": "j-7"`}},
		{name: "list none", args: []string{"policy", "list"},
			ex:      exchange{method: "GET", path: "/v1/policies", status: 200, body: `{"revision":0,"policies":[],"events":[]}`},
			wantOut: []string{"No policies applied."}},
		{name: "delete", args: []string{"policy", "delete", "customer_sla_protection"},
			ex:      exchange{method: "DELETE", path: "/v1/policies/customer_sla_protection", status: 200, body: policySet},
			wantOut: []string{"Revision 3"}},
		{name: "delete all", args: []string{"policy", "delete", "--all"},
			ex:      exchange{method: "DELETE", path: "/v1/policies", status: 200, body: `{"revision":4,"applied_by":"admin","policies":[],"events":[]}`},
			wantOut: []string{"Revision 4", "0 policies"}},
		{name: "delete missing", args: []string{"policy", "delete", "nope"},
			ex:       exchange{method: "DELETE", path: "/v1/policies/nope", status: 404, body: `{"code":"NotFound","message":"no policy \"nope\""}`},
			wantCode: ExitUsage, wantErr: []string{`NotFound: no policy "nope"`}},
		{name: "why shows policies", args: []string{"job", "why", "j-7"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-7/why", status: 200, body: `{"id":"j-7","state":"Running","reason":"","detail":"",
"estimated_start":null,"policies":["policy ai_training_priority: scale_down developer_instances to 30%: beyond the 30% floor of 28 GPUs: standard → spot"]}`},
			wantOut: []string{"Policy:", "policy ai_training_priority: scale_down developer_instances to 30%: beyond the 30% floor of 28 GPUs: standard → spot"}},
	})
}

// TestPolicyServerCommandsOffline: what is refused before any request.
func TestPolicyServerCommandsOffline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"apply checks the file first", []string{"policy", "apply", "-f", "../../examples/tenants.yaml"}, "tenants.yaml:"},
		{"delete needs a name", []string{"policy", "delete"}, "give one policy NAME or --all"},
		{"delete takes a name or --all, not both", []string{"policy", "delete", "x", "--all"}, "give one policy NAME or --all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			// No server listens there: a request would fail differently.
			_, errOut, code := runCLI(t, append(tc.args, "--server", "http://127.0.0.1:1", "--token", "tok")...)
			if code != ExitUsage || !strings.Contains(errOut, tc.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, ExitUsage, tc.wantErr)
			}
		})
	}
}
