package cli

import "testing"

func TestSKUList(t *testing.T) {
	body := `{"skus":[{"name":"ND96-H100x8-IB","series":"ND","gpu_model":"H100","gpus_per_node":8,"region":"eastus",
"nodes":8,"free_nodes":3,"reserved_nodes":2,"free_gpus":27.5,"price_per_hour":98.32,"spot_price_per_hour":29.5}]}`
	runCases(t, []commandCase{
		{name: "table", args: []string{"sku", "list", "--region", "eastus", "--series", "ND"},
			ex:      exchange{method: "GET", path: "/v1/skus", query: "region=eastus&series=ND", status: 200, body: body},
			wantOut: []string{"FREE GPUS", "RESERVED", "ND96-H100x8-IB", "H100", "27.5", "98.32", "29.50"}},
		{name: "json", args: []string{"sku", "list", "--region", "eastus", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/skus", query: "region=eastus", status: 200, body: body},
			wantOut: []string{`"skus": [`, `"free_gpus": 27.5`, `"reserved_nodes": 2`}},
		{name: "every region", args: []string{"sku", "ls"},
			ex:      exchange{method: "GET", path: "/v1/skus", status: 200, body: body},
			wantOut: []string{"REGION", "eastus", "ND96-H100x8-IB"}},
	})
}
