package cli

import (
	"encoding/json"
	"testing"
)

// TestInstanceCreateKey: instance create sends an idempotency key, its
// own with --idempotency-key, and prints a replayed instance as a new one.
func TestInstanceCreateKey(t *testing.T) {
	const running = `{"id":"i-1","name":"box","tenant":"acme","sku":"NC24-A100x1","region":"eastus","count":1,` +
		`"priority":"standard","grace":"30s","state":"Running","nodes":["eastus-a100-01"]}`
	sameRequest := func(t *testing.T, body []byte) {
		var r struct {
			SKU, Region string
			Count       int
		}
		if err := json.Unmarshal(body, &r); err != nil || r.SKU != "NC24-A100x1" || r.Region != "eastus" || r.Count != 1 {
			t.Errorf("request body %s (%v), want NC24-A100x1 in eastus, count 1", body, err)
		}
	}
	args := []string{"instance", "create", "--sku", "NC24-A100x1", "--region", "eastus", "-o", "json"}
	runCases(t, []commandCase{
		{name: "a fresh key", args: args,
			ex:      exchange{method: "POST", path: "/v1/instances", status: 201, body: running, checkBody: sameRequest, key: "*"},
			wantOut: []string{`"id": "i-1"`}},
		{name: "a key of one's own; a repeat prints the instance", args: append(args, "--idempotency-key", "ci-7"),
			ex: exchange{method: "POST", path: "/v1/instances", status: 200, body: running, checkBody: sameRequest, key: "ci-7",
				header: map[string]string{"Idempotent-Replayed": "true"}},
			wantOut: []string{`"id": "i-1"`}},
		{name: "the key reused for another request exits 2", args: append(args, "--idempotency-key", "ci-7"),
			ex: exchange{method: "POST", path: "/v1/instances", status: 409, key: "ci-7",
				body: `{"code":"Conflict","message":"the key was used for a different request","field":"Idempotency-Key"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: Conflict: ", "(field Idempotency-Key)"}},
	})
}
