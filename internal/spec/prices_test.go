package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

// priceFleet is a one-region fleet whose prices: list starts on line 9.
const priceFleet = `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: c
        fabric: ethernet
        racks: [{name: k, nodes: [{prefix: t4-, count: 2, sku: NC4-T4x1}]}]
prices:
`

func TestParseFleetPrices(t *testing.T) {
	f, err := ParseFleet("fleet.yaml", doc(priceFleet+`  - {sku: NC4-T4x1, region: eastus, on_demand: 0.6, spot_floor: 0.1}
  - {sku: ND96-H100x8-IB, region: eastus, on_demand: 100, reserved_1y: 60, reserved_3y: 40, spot_floor: 30}
`))
	if err != nil {
		t.Fatal(err)
	}
	t4 := model.BuiltinCatalog()["NC4-T4x1"]
	want := []model.Price{
		// Rates left out are the catalog's.
		{SKU: "NC4-T4x1", Region: "eastus", OnDemand: 0.6, Reserved1Y: t4.ReservedRate, Reserved3Y: t4.ReservedRate * 0.7, SpotFloor: 0.1},
		{SKU: "ND96-H100x8-IB", Region: "eastus", OnDemand: 100, Reserved1Y: 60, Reserved3Y: 40, SpotFloor: 30},
	}
	if len(f.Prices) != len(want) {
		t.Fatalf("prices = %+v, want %+v", f.Prices, want)
	}
	for i := range want {
		if f.Prices[i] != want[i] {
			t.Errorf("prices[%d] = %+v, want %+v", i, f.Prices[i], want[i])
		}
	}
}

func TestParseFleetPriceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, entry, field, msg string
	}{
		{"unknown SKU", `{sku: NC4-T4x2, region: eastus, on_demand: 1}`, "prices[0].sku", `unknown SKU "NC4-T4x2"`},
		{"unknown region", `{sku: NC4-T4x1, region: westus, on_demand: 1}`, "prices[0].region", `unknown region "westus"`},
		{"negative on-demand", `{sku: NC4-T4x1, region: eastus, on_demand: -1, spot_floor: 0}`, "prices[0].on_demand", "0 or more"},
		{"negative reserved", `{sku: NC4-T4x1, region: eastus, reserved_3y: -0.5}`, "prices[0].reserved_3y", "0 or more"},
		{"not a number", `{sku: NC4-T4x1, region: eastus, on_demand: .nan}`, "prices[0].on_demand", "finite number"},
		{"spot above on-demand", `{sku: NC4-T4x1, region: eastus, on_demand: 1, spot_floor: 2}`, "prices[0].spot_floor", "never costs more"},
		{"unknown field", `{sku: NC4-T4x1, region: eastus, ondemand: 1}`, "prices[0].ondemand", `unknown field "ondemand"`},
		{"a word for a price", `{sku: NC4-T4x1, region: eastus, on_demand: cheap}`, "prices[0].on_demand", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFleet("fleet.yaml", doc(priceFleet+"  - "+tc.entry+"\n"))
			wantError(t, err, "fleet.yaml", 9, tc.field, tc.msg)
		})
	}
	t.Run("set twice", func(t *testing.T) {
		_, err := ParseFleet("fleet.yaml", doc(priceFleet+`  - {sku: NC4-T4x1, region: eastus, on_demand: 1}
  - {sku: NC4-T4x1, region: eastus, on_demand: 2}
`))
		wantError(t, err, "fleet.yaml", 10, "prices[1].region", "set twice")
	})
}

func TestParseTenancyBudget(t *testing.T) {
	fleet, err := ParseFleet("fleet.yaml", doc(priceFleet+"  []\n"))
	if err != nil {
		t.Fatal(err)
	}
	const head = "tenants:\n"
	ten, err := ParseTenancy("tenants.yaml", []byte(head+"  - {name: a, kind: customer, budget: {usd_per_month: 250.5, hard_stop: true}}\n  - {name: b, kind: internal}\n"), fleet)
	if err != nil {
		t.Fatal(err)
	}
	if got := ten.Tenants[0].Budget; got != (model.Budget{USDPerMonth: 250.5, HardStop: true}) || ten.Tenants[1].Budget.Set() {
		t.Errorf("budgets = %+v, %+v", got, ten.Tenants[1].Budget)
	}
	for _, tc := range []struct{ name, budget, field, msg string }{
		{"negative", `{usd_per_month: -5}`, "tenants[0].budget.usd_per_month", "positive amount"},
		{"hard stop without amount", `{hard_stop: true}`, "tenants[0].budget.hard_stop", "needs usd_per_month"},
		{"unknown field", `{usd: 5}`, "tenants[0].budget.usd", `unknown field "usd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTenancy("tenants.yaml", []byte(head+"  - {name: a, kind: customer, budget: "+tc.budget+"}\n"), fleet)
			wantError(t, err, "tenants.yaml", 2, tc.field, tc.msg)
		})
	}
}

func FuzzParseFleetPrices(f *testing.F) {
	f.Add("{sku: NC4-T4x1, region: eastus, on_demand: 0.6, spot_floor: 0.1}")
	f.Add("{sku: NC4-T4x1, region: eastus, reserved_1y: 1e308, reserved_3y: -0}")
	f.Add("{sku: NC4-T4x1, region: eastus, spot_floor: .inf}")
	f.Add("[1, 2]")
	f.Fuzz(func(t *testing.T, entry string) {
		if strings.ContainsAny(entry, "\n\r") {
			return
		}
		fl, err := ParseFleet("fleet.yaml", doc(priceFleet+"  - "+entry+"\n"))
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if err := fl.Validate(); err != nil {
			t.Fatalf("ParseFleet returned a fleet that fails Validate: %v", err)
		}
		for _, p := range fl.Prices {
			if p.SpotFloor > p.OnDemand || p.OnDemand < 0 || p.Reserved1Y < 0 || p.Reserved3Y < 0 {
				t.Fatalf("accepted a price that breaks its rules: %+v", p)
			}
		}
	})
}

func FuzzParseTenancyBudget(f *testing.F) {
	fleet, err := ParseFleet("fleet.yaml", doc(priceFleet+"  []\n"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"{usd_per_month: 100}", "{usd_per_month: 1e309, hard_stop: true}", "{hard_stop: yes}",
		"{usd_per_month: -0}", "{usd_per_month: .nan}", "12", "{usd_per_month: [1]}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, budget string) {
		if strings.ContainsAny(budget, "\n\r") {
			return
		}
		ten, err := ParseTenancy("tenants.yaml", []byte("tenants:\n  - {name: a, kind: customer, budget: "+budget+"}\n"), fleet)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		b := ten.Tenants[0].Budget
		if b.USDPerMonth < 0 || b.HardStop && !b.Set() {
			t.Fatalf("accepted budget %+v", b)
		}
	})
}

// TestSKUResourcePrices: a SKU's CPU and memory prices are read, and a
// negative or absurd one is refused naming its field.
func TestSKUResourcePrices(t *testing.T) {
	const sku = "skus:\n  - {name: X, series: NC, gpu_model: T4, gpu_memory_gib: 16, gpus: 1, vcpu: 4, memory_gib: 28, interconnect: ethernet, %s}\n" +
		"regions:\n  - {name: r, residency: us, clusters: [{name: c, fabric: ethernet, racks: [{name: k, nodes: [{prefix: n, count: 1, sku: X}]}]}]}\n"
	fl, err := ParseFleet("fleet.yaml", []byte(fmt.Sprintf(sku, "price_per_vcpu_hour: 0.05, price_per_gib_hour: 0.01")))
	if err != nil {
		t.Fatal(err)
	}
	if s := fl.Catalog["X"]; s.VCPUPrice != 0.05 || s.MemoryPrice != 0.01 {
		t.Errorf("SKU X prices %v per vCPU-hour, %v per GiB-hour; want 0.05, 0.01", s.VCPUPrice, s.MemoryPrice)
	}
	for field, v := range map[string]string{"price_per_vcpu_hour": "price_per_vcpu_hour: -1", "price_per_gib_hour": "price_per_gib_hour: 1e9"} {
		if _, err := ParseFleet("fleet.yaml", []byte(fmt.Sprintf(sku, v))); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", v, err, field)
		}
	}
}
