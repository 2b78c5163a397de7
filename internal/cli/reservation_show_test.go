package cli

import "testing"

func TestReservationShow(t *testing.T) {
	inWindow := `{"name":"acme-h100","owner":"acme","sku":"ND96-H100x8-IB","region":"eastus","count":2,
"start":"2027-03-01T00:00:00Z","end":"2027-03-02T00:00:00Z","use":{"as_of":"2027-03-01T06:00:00Z","gpus":16,"active":true,
"starts_in_hours":null,"window_hours":24,"elapsed_hours":6,"bought_gpu_hours":96,"bought_total_gpu_hours":384,
"used_gpu_hours":24.004,"used_percent":25.00416,"jobs":3,"pricing":"reserved-1y","usd_per_gpu_hour":2.5,
"committed_usd":240,"used_usd":60.01,"idle_usd":179.99,"nodes":["eastus-h100-05","eastus-h100-06"]}}`
	ahead := `{"name":"acme-h100","owner":"acme","sku":"ND96-H100x8-IB","region":"eastus","count":2,
"start":"2027-03-01T00:00:00Z","end":"2027-03-02T00:00:00Z","use":{"as_of":"2027-02-28T22:30:00Z","gpus":16,"active":false,
"starts_in_hours":1.5,"window_hours":24,"elapsed_hours":0,"bought_gpu_hours":0,"bought_total_gpu_hours":384,
"used_gpu_hours":0,"used_percent":null,"jobs":0,"nodes":["eastus-h100-07","eastus-h100-08"]}}`
	openStart := `{"name":"globex-h100","owner":"globex","sku":"ND96-H100x8-IB","region":"westeurope","count":1,
"start":null,"end":null,"use":{"as_of":"2027-02-28T22:30:00Z","gpus":8,"active":true,"starts_in_hours":null,
"window_hours":null,"elapsed_hours":null,"bought_gpu_hours":null,"bought_total_gpu_hours":null,
"used_gpu_hours":5,"used_percent":null,"jobs":1}}`
	runCases(t, []commandCase{
		{name: "in the window", args: []string{"reservation", "show", "acme-h100"},
			ex: exchange{method: "GET", path: "/v1/reservations/acme-h100", status: 200, body: inWindow},
			wantOut: []string{"2 × ND96-H100x8-IB in eastus (16 GPUs)", "(24.00 h)", "active", "6.00 h of 24.00 h",
				"96.00 GPU-hours so far, 384.00 over the window", "24.00 GPU-hours (25.00 %) by 3 of the owner's jobs",
				"$240.00 so far at $2.50 per GPU-hour (reserved-1y): $60.01 used by work naming it, $179.99 idle",
				"Holds:       eastus-h100-05, eastus-h100-06\n"}},
		{name: "ahead of the window", args: []string{"reservation", "show", "acme-h100"},
			ex: exchange{method: "GET", path: "/v1/reservations/acme-h100", status: 200, body: ahead},
			wantOut: []string{"starts in 1.50 h", "0.00 GPU-hours so far", "0.00 GPU-hours (-)",
				"Keeps:    eastus-h100-07, eastus-h100-08 (for its start)\n"}},
		{name: "open start", args: []string{"reservation", "show", "globex-h100"},
			ex:      exchange{method: "GET", path: "/v1/reservations/globex-h100", status: 200, body: openStart},
			wantOut: []string{"- to -", "Bought:", "5.00 GPU-hours (-) by 1"}},
		{name: "json", args: []string{"reservation", "show", "acme-h100", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/reservations/acme-h100", status: 200, body: inWindow},
			wantOut: []string{`"used_percent": 25.00416`, `"bought_gpu_hours": 96`}},
		{name: "another tenant's", args: []string{"reservation", "show", "x"},
			ex:       exchange{method: "GET", path: "/v1/reservations/x", status: 403, body: `{"code":"Forbidden","message":"reservation \"x\" belongs to another tenant"}`},
			wantCode: ExitFailure, wantErr: []string{"Forbidden", "another tenant"}},
	})
}
