package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestReservationCommands(t *testing.T) {
	rsv := `{"name":"acme-h100","owner":"acme","sku":"ND96-H100x8-IB","region":"eastus","count":2,
"start":"2027-03-01T00:00:00Z","end":"2027-09-01T00:00:00Z"}`
	wantBody := func(want map[string]any) func(*testing.T, []byte) {
		return func(t *testing.T, body []byte) {
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Errorf("body %s, want %s", gb, wb)
			}
		}
	}
	runCases(t, []commandCase{
		{name: "create", args: []string{"reservation", "create", "--sku", "ND96-H100x8-IB", "--region", "eastus", "--count", "2",
			"--start", "2027-03-01", "--end", "2027-09-01T00:00:00Z", "--name", "acme-h100", "--owner", "acme"},
			ex: exchange{method: "POST", path: "/v1/reservations", status: 201, body: rsv, checkBody: wantBody(map[string]any{
				"name": "acme-h100", "owner": "acme", "sku": "ND96-H100x8-IB", "region": "eastus", "count": 2,
				"start": "2027-03-01T00:00:00Z", "end": "2027-09-01T00:00:00Z"})},
			wantOut: []string{"NAME", "acme-h100", "2027-03-01T00:00:00Z"}},
		{name: "create names what is not named", args: []string{"reservation", "create", "--sku", "S", "--region", "eastus", "--count", "1"},
			ex: exchange{method: "POST", path: "/v1/reservations", status: 201, body: rsv,
				checkBody: func(t *testing.T, body []byte) {
					var got map[string]any
					_ = json.Unmarshal(body, &got)
					name, _ := got["name"].(string)
					if !regexp.MustCompile(`^s-eastus-[0-9a-f]{6}$`).MatchString(name) || len(got) != 4 {
						t.Errorf("body %s, want sku, region, count and a made-up name", body)
					}
				}}},
		{name: "a warning the server gives is printed", args: []string{"reservation", "create", "--sku", "S", "--region", "eastus", "--count", "1", "--owner", "acme"},
			ex: exchange{method: "POST", path: "/v1/reservations", status: 201, body: rsv,
				header: map[string]string{"Warning": `299 - "eastus H100: \"promised\" twice"`}},
			wantOut: []string{"acme-h100"}, wantErr: []string{`Warning: eastus H100: "promised" twice`}},
		{name: "name taken", args: []string{"reservation", "create", "--sku", "S", "--region", "eastus", "--count", "1", "--name", "x"},
			ex:       exchange{method: "POST", path: "/v1/reservations", status: 409, body: `{"code":"Conflict","message":"reservation x exists","field":"name"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: Conflict: reservation x exists (field name)"}},
		{name: "list", args: []string{"reservation", "list"},
			ex:      exchange{method: "GET", path: "/v1/reservations", status: 200, body: `{"reservations":[` + rsv + `]}`},
			wantOut: []string{"OWNER", "acme-h100", "ND96-H100x8-IB", "2027-09-01T00:00:00Z"}},
		{name: "list json", args: []string{"reservation", "list", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/reservations", status: 200, body: `{"reservations":null}`},
			wantOut: []string{`"reservations": []`}},
		{name: "delete", args: []string{"reservation", "delete", "acme-h100"},
			ex:      exchange{method: "DELETE", path: "/v1/reservations/acme-h100", status: 204},
			wantOut: []string{"deleted reservation acme-h100"}},
		{name: "delete json", args: []string{"reservation", "delete", "acme-h100", "-o", "json"},
			ex:      exchange{method: "DELETE", path: "/v1/reservations/acme-h100", status: 204},
			wantOut: []string{`"deleted": true`}},
		{name: "delete missing", args: []string{"reservation", "delete", "nope"},
			ex:       exchange{method: "DELETE", path: "/v1/reservations/nope", status: 404, body: `{"code":"NotFound","message":"no reservation nope"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: NotFound: no reservation nope"}},
	})
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"", time.Time{}, true},
		{"now", now, true},
		{"+24h", now.Add(24 * time.Hour), true},
		{"2027-03-01", time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"2027-03-01T10:00:00+02:00", time.Date(2027, 3, 1, 8, 0, 0, 0, time.UTC), true},
		{"6h", now.Add(6 * time.Hour), true},
		{"+-1h", time.Time{}, false},
		{"-1h", time.Time{}, false},
		{"tomorrow", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseWhen("--start", tt.in, now)
			if (err == nil) != tt.ok || !got.Equal(tt.want) {
				t.Errorf("parseWhen(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestReservationName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	for _, in := range [][2]string{{"ND96-H100x8-IB", "eastus"}, {"", ""}, {"é/ü", "x y"}, {strings.Repeat("N", 100), "eastus"}} {
		if got := reservationName(in[0], in[1]); !valid.MatchString(got) {
			t.Errorf("reservationName(%q, %q) = %q, not a valid name", in[0], in[1], got)
		}
	}
}
