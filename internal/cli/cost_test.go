package cli

import (
	"strings"
	"testing"
)

func TestCostReport(t *testing.T) {
	body := `{"since":"2026-11-01T00:00:00Z","until":"2026-12-01T00:00:00Z","by":"region","usd":1234.57,"gpu_hours":12.5,
"rows":[{"region":"eastus","attempts":3,"gpu_hours":12.5,"usd":1234.57,"on_demand_usd":1000,"reserved_usd":200.5,"spot_usd":34.07}],
"budgets":[{"tenant":"acme","usd_per_month":1000,"hard_stop":true,"month":"2026-12-01T00:00:00Z","spent_usd":1234.57,"percent":123.5,"alert":100}],
"budget_events":[{"tenant":"acme","threshold":100,"at":"2026-12-01T00:00:00Z","spent_usd":1001,"usd_per_month":1000}],
"reservations":[{"name":"globex-h100","owner":"globex","sku":"ND96-H100x8-IB","region":"westeurope","pricing":"reserved-1y",
"usd_per_gpu_hour":7.8625,"bought_gpu_hours":11520,"used_gpu_hours":80,"committed_usd":90576,"used_usd":629,"idle_usd":89947}]}`
	ex := exchange{method: "GET", path: "/v1/cost", query: "by=region&since=2026-11-01&until=2026-12-01", status: 200, body: body}
	runCases(t, []commandCase{
		{name: "table", args: []string{"cost", "report", "--by", "region", "--since", "2026-11-01", "--until", "2026-12-01"}, ex: ex,
			wantOut: []string{"REGION", "ON-DEMAND", "eastus", "1000.00", "200.50", "34.07", "1234.57",
				"BUDGET", "acme", "2026-12", "123.5%", "100%", "stopped (BudgetExceeded)",
				"RESERVATION", "globex-h100", "11520.00", "80.00", "90576.00", "629.00", "89947.00"},
			wantErr: []string{"Cost from 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z: $1234.57"}},
		{name: "csv", args: []string{"cost", "report", "--by", "region", "--since", "2026-11-01", "--until", "2026-12-01", "-o", "csv"}, ex: ex,
			wantOut: []string{"REGION,ATTEMPTS,GPU-HOURS,CPU-HOURS,ON-DEMAND,RESERVED,SPOT,USD\neastus,3,12.50,0.00,1000.00,200.50,34.07,1234.57\n"}},
		{name: "json", args: []string{"cost", "report", "--by", "region", "--since", "2026-11-01", "--until", "2026-12-01", "-o", "json"}, ex: ex,
			wantOut: []string{`"budget_events": [`, `"threshold": 100`}},
		{name: "refused", args: []string{"cost", "report", "--tenant", "other"},
			ex:       exchange{method: "GET", path: "/v1/cost", query: "by=tenant&tenant=other", status: 403, body: `{"code":"Forbidden","field":"tenant","message":"a tenant token sees only its own cost"}`},
			wantCode: ExitUsage, wantErr: []string{"Forbidden", "tenant"}},
	})
	isolate(t)
	if _, errOut, code := runCLI(t, "cost", "report", "--by", "rack", "--server", "http://127.0.0.1:1"); code != ExitUsage || !strings.Contains(errOut, "--by") {
		t.Errorf("--by rack: exit %d, %s", code, errOut)
	}
	cmd := newCostCmd()
	for _, c := range cmd.Commands() {
		if c.Long == "" || c.Example == "" || c.InheritedFlags().Lookup("output") == nil {
			t.Errorf("cost %s: want Long, Example and -o", c.Name())
		}
	}
}
