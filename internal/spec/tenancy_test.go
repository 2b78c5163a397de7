package spec

import (
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// tenancyFleet has 32 H100 GPUs in eastus and 16 A100 GPUs in westus.
const tenancyFleet = `
regions:
  - name: eastus
    residency: us
    clusters:
      - name: eastus-ib1
        fabric: infiniband
        racks:
          - name: r1
            nodes: [{prefix: eastus-h100-, count: 4, sku: ND96-H100x8-IB}]
  - name: westus
    residency: us
    clusters:
      - name: westus-ib1
        fabric: infiniband
        racks:
          - name: r2
            nodes: [{prefix: westus-a100-, count: 2, sku: ND96-A100x8-IB}]
`

const goodTenancy = `
partitions:
  - name: internal-ai
    tier: internal
    guarantees:
      - {region: eastus, gpu_model: H100, percent: 90, borrow_limit: 16, lend_limit: 8}
      - {region: westus, gpu_model: A100, gpus: 16}
  - name: elastic
    tier: shared
tenants:
  - {name: copilot, kind: internal, partition: internal-ai, weight: 2, reservation: {max_count: 3}}
  - {name: acme, kind: customer, partition: elastic, reservation: {max_count: 2, max_duration: 48h}}
  - {name: vip, kind: customer, partition: elastic, classes: [standard, Reserved]}
quotas:
  - {tenant: acme, region: eastus, series: ND, gpus: 32}
reservations:
  - {name: acme-h100, owner: acme, sku: ND96-H100x8-IB, region: eastus, count: 2, start: "2026-01-01T00:00:00Z", end: 2027-01-01}
`

func TestParseTenancy(t *testing.T) {
	f, err := ParseFleet("fleet.yaml", doc(tenancyFleet))
	if err != nil {
		t.Fatal(err)
	}
	ten, err := ParseTenancy("tenants.yaml", doc(goodTenancy), f)
	if err != nil {
		t.Fatal(err)
	}
	g := ten.Partitions[0].Guarantees[0]
	if g.GPUs != 28 || g.Percent != 90 || g.BorrowLimit == nil || *g.BorrowLimit != 16 || g.LendLimit == nil || *g.LendLimit != 8 {
		t.Errorf("percent guarantee = %+v, want 28 GPUs (90%% of 32), borrow 16, lend 8", g)
	}
	if g := ten.Partitions[0].Guarantees[1]; g.GPUs != 16 || g.BorrowLimit != nil || g.LendLimit != nil {
		t.Errorf("count guarantee = %+v", g)
	}
	if ten.Partitions[1].Tier != "shared" || len(ten.Partitions[1].Guarantees) != 0 {
		t.Errorf("elastic = %+v", ten.Partitions[1])
	}
	if x := ten.Tenants[0]; x.Name != "copilot" || x.Weight != 2 || x.Partition != "internal-ai" {
		t.Errorf("tenant 0 = %+v", x)
	}
	if l := ten.Tenants[0].Reserve; l.MaxCount != 3 || l.MaxDuration != model.DefaultReserveDuration {
		t.Errorf("copilot's reservation limits = %+v, want 3 nodes for the default duration", l)
	}
	if l := ten.Tenants[1].Reserve; l.MaxCount != 2 || l.MaxDuration != 48*time.Hour {
		t.Errorf("acme's reservation limits = %+v, want 2 nodes for 48h", l)
	}
	if w := ten.Tenants[1].Weight; w != 1 {
		t.Errorf("default weight = %v, want 1", w)
	}
	for _, c := range []struct {
		tenant string
		want   []model.Class
	}{
		{"copilot", model.Classes}, // its partition has a guarantee
		{"acme", []model.Class{model.ClassSpot, model.ClassStandard}},
		{"vip", []model.Class{model.ClassStandard, model.ClassReserved}}, // as the file says
	} {
		if got := ten.AllowedClasses(c.tenant); !slices.Equal(got, c.want) {
			t.Errorf("%s may use %v, want %v", c.tenant, got, c.want)
		}
	}
	if q := ten.Quotas[0]; q.Tenant != "acme" || q.Series != "ND" || q.GPUs != 32 {
		t.Errorf("quota = %+v", q)
	}
	r := ten.Reservations[0]
	if !r.Start.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !r.End.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || r.Count != 2 {
		t.Errorf("reservation = %+v", r)
	}
}

func TestParseTenancyErrors(t *testing.T) {
	f, err := ParseFleet("fleet.yaml", doc(tenancyFleet))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"empty", "", 0, "", "file is empty"},
		{"unknown field", `
tenants:
  - {name: acme, kind: customer, partiton: elastic}
`, 2, "tenants[0].partiton", `unknown field "partiton"`},
		{"negative reservation max_count", `
tenants:
  - name: acme
    kind: customer
    reservation: {max_count: -1}
`, 4, "tenants[0].reservation.max_count", "must not be negative"},
		{"string for percent", `
partitions:
  - name: p
    guarantees:
      - region: eastus
        gpu_model: H100
        percent: ninety
`, 6, "partitions[0].guarantees[0].percent", "want a number"},
		{"bad timestamp", `
tenants:
  - {name: acme, kind: customer}
reservations:
  - name: r
    owner: acme
    sku: ND96-H100x8-IB
    region: eastus
    count: 1
    start: next tuesday
`, 9, "reservations[0].start", "want a time"},
		{"unknown region in guarantee", `
partitions:
  - name: p
    guarantees:
      - {region: eastus, gpu_model: H100, gpus: 8}
      - {region: northpole, gpu_model: H100, gpus: 8}
`, 5, "partitions[0].guarantees[1].region", `unknown region "northpole"`},
		{"percent out of range", `
partitions:
  - name: p
    guarantees:
      - region: eastus
        gpu_model: H100
        percent: 120
`, 6, "partitions[0].guarantees[0].percent", "between 0 and 100"},
		{"over-promised pool", `
partitions:
  - name: a
    guarantees:
      - {region: eastus, gpu_model: H100, gpus: 24}
  - name: b
    guarantees:
      - {region: westus, gpu_model: A100, gpus: 8}
      - region: eastus
        gpu_model: H100
        gpus: 16
`, 10, "partitions[1].guarantees[1].gpus", "partitions promise 40 H100 GPUs in eastus, the fleet has 32"},
		{"over-promised by percent", `
partitions:
  - {name: a, guarantees: [{region: eastus, gpu_model: H100, percent: 80}]}
  - {name: b, guarantees: [{region: eastus, gpu_model: H100, percent: 30}]}
`, 3, "partitions[1].guarantees[0].gpus", "partitions promise"},
		{"lend above guarantee", `
partitions:
  - name: p
    guarantees:
      - {region: eastus, gpu_model: H100, gpus: 8, lend_limit: 9}
`, 4, "partitions[0].guarantees[0].lend_limit", "between 0 and the guarantee (8)"},
		{"unknown partition", `
tenants:
  - name: acme
    kind: customer
    partition: nowhere
`, 4, "tenants[0].partition", `unknown partition "nowhere"`},
		{"unknown class", `
tenants:
  - name: acme
    kind: customer
    classes: [spot, premium]
`, 4, "tenants[0].classes[1]", `unknown priority class "premium"`},
		{"class with a value", `
tenants:
  - {name: acme, kind: customer, classes: ["standard:10"]}
`, 2, "tenants[0].classes[0]", `unknown priority class "standard:10"`},
		{"class twice", `
tenants:
  - {name: acme, kind: customer, classes: [spot, spot]}
`, 2, "tenants[0].classes[1]", "class spot is named twice"},
		{"classes not a list of names", `
tenants:
  - {name: acme, kind: customer, classes: [{class: spot}]}
`, 2, "tenants[0].classes[0]", "want a class"},
		{"bad kind", `
tenants:
  - {name: acme, kind: partner}
`, 2, "tenants[0].kind", "must be internal or customer"},
		{"quota for unknown tenant", `
tenants:
  - {name: acme, kind: customer}
quotas:
  - {tenant: acme, region: eastus, series: ND, gpus: 8}
  - {tenant: globex, region: eastus, series: ND, gpus: 8}
`, 5, "quotas[1].tenant", `unknown tenant "globex"`},
		{"reservation too large", `
tenants:
  - {name: acme, kind: customer}
reservations:
  - name: r
    owner: acme
    sku: ND96-H100x8-IB
    region: eastus
    count: 5
`, 8, "reservations[0].count", "region eastus has 4 nodes of ND96-H100x8-IB, 5 asked"},
		{"reservation ends before start", `
tenants:
  - {name: acme, kind: customer}
reservations:
  - {name: r, owner: acme, sku: ND96-H100x8-IB, region: eastus, count: 1, start: 2027-01-01, end: 2026-01-01}
`, 4, "reservations[0].end", "must be after start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ten, err := ParseTenancy("tenants.yaml", doc(tc.yaml), f)
			if err == nil {
				t.Fatalf("ParseTenancy = %+v, want an error", ten)
			}
			wantError(t, err, "tenants.yaml", tc.line, tc.field, tc.msg)
		})
	}
}

func TestParseTenancyNeedsFleet(t *testing.T) {
	_, err := ParseTenancy("tenants.yaml", doc(goodTenancy), nil)
	wantError(t, err, "tenants.yaml", 0, "", "a fleet is needed")
}
