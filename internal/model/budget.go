package model

// Budget is what a tenant may spend per calendar month (UTC), in USD.
// Alerts fire at 80 % and 100 % of it; with HardStop, once the month's cost
// reaches it, new work that would not run inside a reservation is refused
// until the month ends or the budget is raised. The zero value is no
// budget.
type Budget struct {
	USDPerMonth float64
	HardStop    bool
}

// Set reports whether b is a budget at all.
func (b Budget) Set() bool { return b.USDPerMonth > 0 }

func (b Budget) validate(field string) error {
	switch {
	case !validPrice(b.USDPerMonth):
		return fieldErr(field+".usd_per_month", "must be a positive amount in USD, got %v", b.USDPerMonth)
	case b.HardStop && b.USDPerMonth == 0:
		return fieldErr(field+".hard_stop", "needs usd_per_month")
	}
	return nil
}
