package scenario_test

import (
	"context"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/scenario"
)

// TestRunCostsEachTenant checks the cost per tenant against its GPU-hours:
// the trainer's whole-node on-demand H100 gang pays the catalog's
// on-demand price per GPU-hour, and no tenant pays more per GPU-hour than
// the dearest on-demand GPU nor less than the cheapest spot floor.
func TestRunCostsEachTenant(t *testing.T) {
	res, err := scenario.Run(context.Background(), small(t), scenario.Options{Strategy: model.StrategyStatic})
	if err != nil {
		t.Fatal(err)
	}
	cat := model.BuiltinCatalog()
	h100, t4 := cat["ND96-H100x8-IB"], cat["NC64-T4x4"]
	most := max(h100.PricePerHour/8, t4.PricePerHour/4)
	least := min(h100.SpotPrice/8, t4.SpotPrice/4)
	for _, tu := range res.Tenants {
		if tu.GPUHours == 0 {
			if tu.USD != 0 {
				t.Errorf("%s ran nothing and pays $%.2f", tu.Tenant, tu.USD)
			}
			continue
		}
		per := tu.USD / tu.GPUHours
		if per < least-0.01 || per > most+0.01 {
			t.Errorf("%s pays $%.4f per GPU-hour, outside [%.4f, %.4f]", tu.Tenant, per, least, most)
		}
		if tu.Tenant == "trainer" && (per < h100.PricePerHour/8-0.01 || per > h100.PricePerHour/8+0.01) {
			t.Errorf("trainer pays $%.4f per GPU-hour, want on-demand H100 $%.4f", per, h100.PricePerHour/8)
		}
	}
}
