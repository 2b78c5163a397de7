package wire

import "time"

// CostReport is the body of GET /v1/cost: what work accrued over
// [Since, Until) at the prices of how it ran, grouped By tenant, region,
// sku or job; and the budgets of the tenants the token sees with this
// month's budget alerts. Amounts are USD to the cent; USD is the total of
// the unrounded rows, so it may differ from the rows' sum by a cent.
type CostReport struct {
	Since        time.Time     `json:"since"`
	Until        time.Time     `json:"until"`
	By           string        `json:"by"`
	Rows         []CostRow     `json:"rows"`
	USD          float64       `json:"usd"`
	GPUHours     float64       `json:"gpu_hours"`
	CPUHours     float64       `json:"cpu_hours"`
	Budgets      []Budget      `json:"budgets"`
	BudgetEvents []BudgetEvent `json:"budget_events"`
	// Reservations are the commitments of reservations in the period:
	// their used part is in the rows (work naming them pays the reserved
	// rate), their idle part is not.
	Reservations []ReservationCost `json:"reservations"`
}

// ReservationCost is what a reservation committed its owner to within a
// report's period (the part of its window inside it, up to now), at its
// reserved rate per GPU-hour, and how much of that work naming it used.
type ReservationCost struct {
	Name           string   `json:"name"`
	Owner          string   `json:"owner"`
	SKU            string   `json:"sku"`
	Region         string   `json:"region"`
	Pricing        string   `json:"pricing"`
	USDPerGPUHour  *float64 `json:"usd_per_gpu_hour"` // null without a price for the SKU
	BoughtGPUHours float64  `json:"bought_gpu_hours"`
	UsedGPUHours   float64  `json:"used_gpu_hours"`
	CommittedUSD   float64  `json:"committed_usd"`
	UsedUSD        float64  `json:"used_usd"`
	IdleUSD        float64  `json:"idle_usd"`
}

// CostRow is what one tenant, region, SKU or job accrued, in all and by
// how the work ran (on-demand, reserved at either term, spot).
type CostRow struct {
	Tenant      string  `json:"tenant,omitempty"`
	Region      string  `json:"region,omitempty"`
	SKU         string  `json:"sku,omitempty"`
	Job         string  `json:"job,omitempty"`
	Name        string  `json:"name,omitempty"`
	Attempts    int     `json:"attempts"`
	GPUHours    float64 `json:"gpu_hours"`
	CPUHours    float64 `json:"cpu_hours"` // vCPU-hours of the CPU the work asked for
	USD         float64 `json:"usd"`
	OnDemandUSD float64 `json:"on_demand_usd"`
	ReservedUSD float64 `json:"reserved_usd"`
	SpotUSD     float64 `json:"spot_usd"`
}

// Budget is where a tenant stands this calendar month (UTC) against its
// budget: Alert is the highest threshold reached, 0, 80 or 100; with
// HardStop, at 100 new work outside reservations is refused
// (BudgetExceeded).
type Budget struct {
	Tenant      string    `json:"tenant"`
	USDPerMonth float64   `json:"usd_per_month"`
	HardStop    bool      `json:"hard_stop"`
	Month       time.Time `json:"month"`
	SpentUSD    float64   `json:"spent_usd"`
	Percent     float64   `json:"percent"`
	Alert       int       `json:"alert"`
}

// BudgetEvent is a tenant's month's cost reaching 80 % or 100 % of its
// budget.
type BudgetEvent struct {
	Tenant      string    `json:"tenant"`
	Threshold   int       `json:"threshold"`
	At          time.Time `json:"at"`
	SpentUSD    float64   `json:"spent_usd"`
	USDPerMonth float64   `json:"usd_per_month"`
}
