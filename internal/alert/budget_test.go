package alert

import (
	"math"
	"testing"
)

func TestBudgetRules(t *testing.T) {
	v := Values{}
	for tenant, x := range map[string][2]float64{"t1": {850, 1000}, "t2": {110, 100}, "t3": {50, 100}, "t4": {10, 0}} {
		v.Add("allot_tenant_cost_usd", x[0], "tenant", tenant)
		v.Add("allot_tenant_budget_usd", x[1], "tenant", tenant)
	}
	for _, c := range []struct {
		rule string
		want map[string]float64
	}{
		{"AllotTenantBudgetNear", map[string]float64{"t1": 0.85}},
		{"AllotTenantBudgetSpent", map[string]float64{"t2": 1.1}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			changed := New(only(t, c.rule), Options{}).Evaluate(v, t0)
			if len(changed) != len(c.want) {
				t.Fatalf("alerts %+v, want %v", changed, c.want)
			}
			for _, a := range changed {
				if w, ok := c.want[a.Labels["tenant"]]; !ok || math.Abs(a.Value-w) > 1e-9 || a.State != Firing {
					t.Errorf("alert %+v, want %v", a, c.want)
				}
			}
		})
	}
}
