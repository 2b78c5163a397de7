package server

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// costHarness is a harness over the example fleet with the eastus T4
// prices set in the test and a budget for copilot.
func costHarness(t *testing.T, budget model.Budget) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: NewManualClock(t0)}
	fleet, ten := servertest.Example(t)
	fleet.Prices = append(fleet.Prices,
		model.Price{SKU: "NC4-T4x1", Region: "eastus", OnDemand: 0.80, Reserved1Y: 0.5, Reserved3Y: 0.4, SpotFloor: 0.20},
		model.Price{SKU: "NC64-T4x4", Region: "eastus", OnDemand: 4.00, Reserved1Y: 2.5, Reserved3Y: 2.0, SpotFloor: 1.00})
	for i := range ten.Tenants {
		if ten.Tenants[i].Name == "copilot" {
			ten.Tenants[i].Budget = budget
		}
	}
	h.st = servertest.Store(t, h.dir)
	var err error
	h.srv, err = New(context.Background(), Config{Store: h.st, Fleet: fleet, Tenancy: ten, Clock: h.clock, CheckIncremental: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// listed is the on-demand and spot floor of the test's eastus T4 prices.
var listed = map[string][2]float64{"NC4-T4x1": {0.80, 0.20}, "NC64-T4x4": {4.00, 1.00}}

// eastusGPUs is the example fleet's GPUs in eastus: 8 ND96 H100 nodes,
// 2 NC24 A100, 2 NC64 T4x4, 2 NC4 T4x1.
const eastusGPUs = 8*8 + 2 + 2*4 + 2

func TestAttemptPricedAtStart(t *testing.T) {
	h := costHarness(t, model.Budget{})
	chat := h.submit(copilot, `{name: chat, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4], cpu: 2, memory: 8Gi}, placement: {regions: [eastus]}}`)
	h.cycle()
	spot := h.submit(copilot, `{name: batch, tenant: copilot, priority: spot, resources: {gpus_per_instance: 1, gpu_models: [T4], cpu: 1, memory: 1Gi}, placement: {regions: [eastus]}}`)
	res := h.submit(Principal{Tenant: "globex"}, `{name: big, tenant: globex, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [westeurope], reservation: globex-h100}}`)
	h.clock.Advance(time.Minute)
	h.cycle()

	sku := func(j *model.Job) model.SKU {
		n := h.srv.world().nodes[j.Status.Attempts[0].Nodes[0]]
		return h.srv.cfg.Fleet.Catalog[n.SKU]
	}
	for _, c := range []struct {
		name    string
		id      string
		pricing string
		rate    func(j *model.Job) float64
	}{
		{"on-demand, a quarter GPU", chat.ID, "on-demand", func(j *model.Job) float64 {
			s := sku(j)
			return listed[s.Name][0] * 0.25 / float64(s.GPUs)
		}},
		{"spot at the utilisation it started at", spot.ID, "spot", func(j *model.Job) float64 {
			s := sku(j)
			u := 0.25 / eastusGPUs // the chat job's quarter GPU
			od, floor := listed[s.Name][0], listed[s.Name][1]
			return (floor + (od-floor)*u*u) / float64(s.GPUs)
		}},
		{"inside a two-year reservation", res.ID, "reserved-1y", func(*model.Job) float64 {
			// examples/fleet.yaml prices westeurope's H100 nodes.
			for _, p := range h.srv.cfg.Fleet.Prices {
				if p.SKU == "ND96-H100x8-IB" && p.Region == "westeurope" {
					return p.Reserved1Y
				}
			}
			return model.BuiltinCatalog()["ND96-H100x8-IB"].ReservedRate
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := h.job(c.id)
			if len(j.Status.Attempts) != 1 {
				t.Fatalf("%s: %s (%s), want one attempt", j.ID, j.Status.State, j.Status.Detail)
			}
			a := j.Status.Attempts[0]
			if a.Pricing != c.pricing || len(a.Rates) != 1 || math.Abs(a.Rates[0]-c.rate(j)) > 1e-12 {
				t.Errorf("attempt priced %q at %v, want %q at %v", a.Pricing, a.Rates, c.pricing, c.rate(j))
			}
		})
	}
	// The price survives a restart (it is in the record).
	h.restart()
	if a := h.job(spot.ID).Status.Attempts[0]; a.Pricing != "spot" || len(a.Rates) != 1 {
		t.Errorf("after a restart the attempt reads %q %v", a.Pricing, a.Rates)
	}
}

func TestCostReport(t *testing.T) {
	h := costHarness(t, model.Budget{})
	a := h.submit(copilot, `{name: a, tenant: copilot, resources: {gpus_per_instance: 1, gpu_models: [T4], cpu: 1, memory: 1Gi}, placement: {regions: [eastus]}}`)
	b := h.submit(copilot, `{name: b, tenant: copilot, resources: {instance_count: 2, gpu_milli: 500, gpus_per_instance: 1, gpu_models: [T4], cpu: 1, memory: 1Gi}, placement: {regions: [eastus]}}`)
	h.submit(Principal{Tenant: "research"}, `{name: r, tenant: research, resources: {gpus_per_instance: 1, gpu_models: [T4], cpu: 1, memory: 1Gi}, placement: {regions: [eastus]}}`)
	h.cycle()
	start := t0
	h.clock.Advance(90 * time.Minute)
	if _, err := h.srv.Cancel(context.Background(), copilot, a.ID); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(30 * time.Minute)
	until := h.clock.Now()

	// Independently: each instance's listed price × its share × its hours.
	want := 0.0
	for _, id := range []string{a.ID, b.ID} {
		j := h.job(id)
		at := j.Status.Attempts[0]
		end := until
		if !at.Ended.IsZero() {
			end = at.Ended
		}
		for _, name := range at.Nodes {
			s := h.srv.cfg.Fleet.Catalog[h.srv.world().nodes[name].SKU]
			want += listed[s.Name][0] * float64(j.Spec.Resources.MilliPerInstance()) / 1000 / float64(s.GPUs) * end.Sub(at.Started).Hours()
		}
	}
	for _, by := range []string{ByTenant, ByJob, ByRegion, BySKU} {
		t.Run(by, func(t *testing.T) {
			rows, err := h.srv.Cost(context.Background(), copilot, CostQuery{Since: start, Until: until, By: by})
			if err != nil {
				t.Fatal(err)
			}
			got := 0.0
			for _, r := range rows {
				got += r.USD
				if r.ByKind[price.OnDemand] != r.USD {
					t.Errorf("row %+v: all of it is on-demand", r)
				}
				if r.Tenant != "" && r.Tenant != "copilot" {
					t.Errorf("a tenant sees %s's cost", r.Tenant)
				}
			}
			if price.Cents(got) != price.Cents(want) || want == 0 {
				t.Errorf("cost by %s = %.4f, want %.4f", by, got, want)
			}
		})
	}
	// A period that cuts the runs counts only what is inside it.
	rows, err := h.srv.Cost(context.Background(), admin, CostQuery{Tenant: "copilot", Since: start.Add(60 * time.Minute), Until: start.Add(61 * time.Minute), By: ByTenant})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %+v, err %v", rows, err)
	}
	if full, _ := h.srv.Cost(context.Background(), admin, CostQuery{Tenant: "copilot", Since: start, Until: start.Add(90 * time.Minute), By: ByTenant}); math.Abs(rows[0].USD*90-full[0].USD) > 1e-9 {
		t.Errorf("one minute costs %v, ninety %v", rows[0].USD, full[0].USD)
	}
	for _, c := range []struct {
		p     Principal
		q     CostQuery
		code  Code
		field string
	}{
		{copilot, CostQuery{Tenant: "research", Since: start, Until: until, By: ByTenant}, CodeForbidden, "tenant"},
		{admin, CostQuery{Since: start, Until: until, By: "rack"}, CodeInvalidSpec, "by"},
		{admin, CostQuery{Since: until, Until: start, By: ByTenant}, CodeInvalidSpec, "since"},
	} {
		_, err := h.srv.Cost(context.Background(), c.p, c.q)
		if e, ok := err.(*Error); !ok || e.Code != c.code || e.Field != c.field {
			t.Errorf("Cost(%+v) = %v, want %s naming %s", c.q, err, c.code, c.field)
		}
	}
}

func TestBudgetAlertsAndHardStop(t *testing.T) {
	// One T4 on an NC4-T4x1 costs $0.80 an hour, on an NC64-T4x4 $1.00.
	h := costHarness(t, model.Budget{USDPerMonth: 2, HardStop: true})
	const one = `{name: one, tenant: copilot, resources: {gpus_per_instance: 1, gpu_models: [T4], cpu: 1, memory: 1Gi}, placement: {regions: [eastus]}}`
	j := h.submit(copilot, one)
	h.cycle()
	rate := h.job(j.ID).Status.Attempts[0].Rates[0]
	ctx := context.Background()
	// Just under 80 %, then past it, then past 100 %.
	h.clock.Advance(time.Duration(1.5 / rate * float64(time.Hour)))
	st, ev, err := h.srv.budgets(ctx, h.clock.Now(), 0)
	if err != nil || st["copilot"].Alert != 0 || len(ev) != 0 {
		t.Fatalf("at $1.50 of $2: %+v, events %+v, err %v", st["copilot"], ev, err)
	}
	h.clock.Advance(time.Duration(0.2 / rate * float64(time.Hour)))
	st, ev, _ = h.srv.budgets(ctx, h.clock.Now(), 0)
	if st["copilot"].Alert != 80 || len(ev) != 1 || ev[0].Threshold != 80 {
		t.Fatalf("at $1.70 of $2: %+v, events %+v", st["copilot"], ev)
	}
	if _, err := h.srv.Submit(ctx, copilot, h.parse(one)); err != nil {
		t.Fatalf("under budget, a submit is refused: %v", err)
	}
	h.clock.Advance(time.Duration(0.4 / rate * float64(time.Hour)))
	_, err = h.srv.Submit(ctx, copilot, h.parse(one))
	if e, ok := err.(*Error); !ok || e.Code != CodeBudgetExceeded || e.Field != "tenant" {
		t.Fatalf("over budget with a hard stop: submit = %v, want BudgetExceeded", err)
	}
	st, ev, _ = h.srv.budgets(ctx, h.clock.Now(), time.Hour)
	if st["copilot"].Alert != 100 || len(ev) != 2 || ev[1].Threshold != 100 {
		t.Fatalf("over budget: %+v, events %+v", st["copilot"], ev)
	}
	// Other tenants still pass.
	if _, err := h.srv.Submit(ctx, Principal{Tenant: "research"}, h.parse(`{name: r, tenant: research, resources: {gpus_per_instance: 1, gpu_models: [T4]}, placement: {regions: [eastus]}}`)); err != nil {
		t.Errorf("research refused: %v", err)
	}
	// A new month starts afresh.
	h.clock.Set(time.Date(2026, 7, 1, 0, 0, 1, 0, time.UTC))
	if _, err := h.srv.Submit(ctx, copilot, h.parse(one)); err != nil {
		t.Errorf("in a new month the submit is refused: %v", err)
	}
}

func (h *harness) parse(doc string) model.JobSpec {
	h.t.Helper()
	specs, err := spec.ParseJobs("test", []byte(doc), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return specs[0]
}

func TestBudgetPassedAtOnce(t *testing.T) {
	h := costHarness(t, model.Budget{USDPerMonth: 1})
	h.submit(copilot, `{name: one, tenant: copilot, resources: {gpus_per_instance: 1, gpu_models: [T4], cpu: 1, memory: 1Gi}, placement: {regions: [eastus]}}`)
	h.cycle()
	h.clock.Advance(3 * time.Hour) // at least $2.40 of $1
	st, ev, err := h.srv.budgets(context.Background(), h.clock.Now(), 0)
	if err != nil || st["copilot"].Alert != 100 || len(ev) != 2 || ev[0].Threshold != 80 || ev[1].Threshold != 100 {
		t.Fatalf("status %+v, events %+v, err %v; want both thresholds", st["copilot"], ev, err)
	}
	// A second server on the store (another replica, or this one after a
	// restart) reads the alerts from it: none is raised again, and both
	// are still listed.
	cfg := h.srv.cfg
	cfg.Registry = nil
	again, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	st, ev, err = again.budgets(context.Background(), h.clock.Now(), 0)
	if err != nil || st["copilot"].Alert != 100 || len(ev) != 2 || ev[0].Threshold != 80 || ev[1].Threshold != 100 {
		t.Fatalf("after a restart: status %+v, events %+v, err %v; want the same two events", st["copilot"], ev, err)
	}
	if kvs, _, err := h.st.List(context.Background(), prefixBudgetAlerts); err != nil || len(kvs) != 2 {
		t.Fatalf("%d alert records (%v), want 2", len(kvs), err)
	}
	// Without a hard stop, work is still taken.
	if _, err := h.srv.Submit(context.Background(), copilot, h.parse(`{name: two, tenant: copilot, resources: {gpus_per_instance: 1, gpu_models: [T4]}}`)); err != nil {
		t.Errorf("a budget without hard_stop refused a submit: %v", err)
	}
}

func TestSKUOffersPriced(t *testing.T) {
	h := costHarness(t, model.Budget{})
	offer := func(region, sku string) SKUOffer {
		for _, o := range h.srv.SKUs(region, "") {
			if o.SKU.Name == sku {
				return o
			}
		}
		t.Fatalf("no offer of %s in %s", sku, region)
		return SKUOffer{}
	}
	if o := offer("eastus", "NC4-T4x1"); o.OnDemand != 0.80 || o.Spot != 0.20 {
		t.Errorf("idle eastus: NC4-T4x1 at %v, spot %v; want the fleet's 0.80 and floor 0.20", o.OnDemand, o.Spot)
	}
	h100 := model.BuiltinCatalog()["ND96-H100x8-IB"]
	if o := offer("westus", "NC4-T4x1"); o.OnDemand != model.BuiltinCatalog()["NC4-T4x1"].PricePerHour {
		t.Errorf("westus has no prices: entry, offer %v", o.OnDemand)
	}
	h.submit(copilot, `{name: big, tenant: copilot, resources: {instance_count: 4, gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`)
	h.cycle()
	u := 32.0 / eastusGPUs
	if o := offer("eastus", "ND96-H100x8-IB"); math.Abs(o.Spot-(h100.SpotPrice+(h100.PricePerHour-h100.SpotPrice)*u*u)) > 1e-9 {
		t.Errorf("with 32 of %d GPUs held, spot %v", eastusGPUs, o.Spot)
	}
}

func TestRatesPacked(t *testing.T) {
	for _, r := range [][]float64{nil, {1.5}, {2, 2, 2}, {1, 2, 1}} {
		p := packRates(r)
		if len(r) > 1 && r[0] == r[len(r)-1] && r[1] == r[0] && len(p) != 1 {
			t.Errorf("packRates(%v) = %v, want one value", r, p)
		}
		got := unpackRates(p, len(r))
		if len(got) != len(r) {
			t.Fatalf("unpackRates(packRates(%v)) = %v", r, got)
		}
		for i := range r {
			if got[i] != r[i] {
				t.Errorf("unpackRates(packRates(%v)) = %v", r, got)
			}
		}
	}
	// A gang's record stores one rate and reads back one per instance.
	h := costHarness(t, model.Budget{})
	j := h.submit(copilot, `{name: gang, tenant: copilot, resources: {instance_count: 4, gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`)
	h.cycle()
	h.restart()
	a := h.job(j.ID).Status.Attempts[0]
	if len(a.Rates) != 4 || a.Rates[0] != model.BuiltinCatalog()["ND96-H100x8-IB"].PricePerHour || a.Rates[3] != a.Rates[0] {
		t.Errorf("after a restart the gang's rates are %v", a.Rates)
	}
}

// An offer counts the nodes that reservations active now hold: the
// example's globex-h100 (2 westeurope H100 nodes, 2026-2028) now, and
// acme-a100-2027 (2 westus A100 nodes from March 2027) only once open.
func TestSKUOffersReserved(t *testing.T) {
	h := newHarness(t)
	reserved := func(region, sku string) int {
		t.Helper()
		for _, o := range h.srv.SKUs(region, "") {
			if o.SKU.Name == sku {
				return o.ReservedNodes
			}
		}
		t.Fatalf("no offer of %s in %s", sku, region)
		return 0
	}
	if got := reserved("westeurope", "ND96-H100x8-IB"); got != 2 {
		t.Errorf("westeurope H100: %d reserved nodes, want globex-h100's 2", got)
	}
	if got := reserved("westus", "ND96-A100x8-IB"); got != 0 {
		t.Errorf("westus A100 before March 2027: %d reserved nodes, want 0", got)
	}
	h.clock.Advance(time.Date(2027, 3, 2, 0, 0, 0, 0, time.UTC).Sub(h.clock.Now()))
	if got := reserved("westus", "ND96-A100x8-IB"); got != 2 {
		t.Errorf("westus A100 in March 2027: %d reserved nodes, want acme-a100-2027's 2", got)
	}
}
