package cli

import (
	"encoding/json"
	"testing"
)

func TestTokenCreate(t *testing.T) {
	tenantBody := func(t *testing.T, body []byte) {
		var m map[string]string
		if err := json.Unmarshal(body, &m); err != nil || m["tenant"] != "acme" || len(m) != 1 {
			t.Errorf("body %s, want {\"tenant\":\"acme\"}", body)
		}
	}
	runCases(t, []commandCase{
		{name: "prints the token alone", args: []string{"token", "create", "--tenant", "acme"},
			ex:      exchange{method: "POST", path: "/v1/tokens", status: 201, body: `{"token":"s3cret","tenant":"acme"}`, checkBody: tenantBody},
			wantOut: []string{"s3cret\n"}, wantErr: []string{"shown once"}},
		{name: "json", args: []string{"token", "create", "--tenant", "acme", "-o", "json"},
			ex:      exchange{method: "POST", path: "/v1/tokens", status: 201, body: `{"token":"s3cret","tenant":"acme"}`, checkBody: tenantBody},
			wantOut: []string{`"token": "s3cret"`, `"tenant": "acme"`}},
		{name: "not admin", args: []string{"token", "create", "--tenant", "acme"},
			ex:       exchange{method: "POST", path: "/v1/tokens", status: 403, body: `{"code":"Forbidden","message":"admin only"}`},
			wantCode: ExitFailure, wantErr: []string{"allot: Forbidden: admin only"}},
	})
}
