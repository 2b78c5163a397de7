package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// budgetFresh is how old the month's costs may be before a submit of a
// tenant with a hard stop, or a cost report, adds them up again.
const budgetFresh = 2 * time.Second

// budgetEvery is how often the month's costs are added up for the alerts.
const budgetEvery = 15 * time.Second

// maxBudgetEvents bounds the budget alerts kept in memory.
const maxBudgetEvents = 256

// CodeBudgetExceeded refuses new work of a tenant whose month's cost has
// reached its budget, when the budget has a hard stop.
const CodeBudgetExceeded Code = "BudgetExceeded"

// BudgetStatus is where a tenant stands against its budget this month.
type BudgetStatus struct {
	Tenant      string
	USDPerMonth float64
	HardStop    bool
	Month       time.Time // start of the calendar month (UTC)
	SpentUSD    float64   // the month's cost so far
	// Alert is the highest threshold reached this month: 0, 80 or 100.
	Alert int
}

// BudgetEvent is a tenant's month's cost crossing 80 % or 100 % of its
// budget.
type BudgetEvent struct {
	Tenant      string    `json:"tenant"`
	Threshold   int       `json:"threshold"` // 80 or 100
	At          time.Time `json:"at"`
	SpentUSD    float64   `json:"spent_usd"`
	USDPerMonth float64   `json:"usd_per_month"`
}

// prefixBudgetAlerts holds one record per budget alert raised: a tenant,
// a month and a threshold, the event as JSON. A threshold is raised by the
// server whose transaction creates its record, so each is raised once a
// month, whichever server adds the costs up and however often they
// restart.
const prefixBudgetAlerts = "/budget-alerts/"

// budgetAlertKey is the record of tenant reaching threshold in month.
func budgetAlertKey(month time.Time, tenant string, threshold int) string {
	return fmt.Sprintf("%s%s/%s/%d", prefixBudgetAlerts, month.Format("2006-01"), tenant, threshold)
}

// budgetBook holds the month's cost of the tenants that have a budget, in
// memory, and the month's alerts as last read from the store.
type budgetBook struct {
	mu      sync.Mutex // guards the fields below; held while costs are added up
	at      time.Time  // when status was added up; zero: never
	status  map[string]BudgetStatus
	reached map[string]int // highest threshold alerted this month
	month   time.Time
	events  []BudgetEvent // oldest first
}

func newBudgetBook() *budgetBook {
	return &budgetBook{status: map[string]BudgetStatus{}, reached: map[string]int{}}
}

var (
	descTenantCost = prometheus.NewDesc("allot_tenant_cost_usd",
		"What the tenant's work cost this calendar month (UTC) so far, in USD; tenants with a budget only.",
		[]string{"tenant"}, nil)
	descTenantBudget = prometheus.NewDesc("allot_tenant_budget_usd",
		"The tenant's monthly budget in USD (tenants file budget:).",
		[]string{"tenant"}, nil)
)

// budgetCollector exposes the month's cost and the budget of each tenant
// that has one. A scrape adds the month's costs up again only when they are
// older than budgetEvery (one pass over the job records).
type budgetCollector struct{ s *Server }

func (budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTenantCost
	ch <- descTenantBudget
}

func (c budgetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, _, err := c.s.budgets(ctx, c.s.clock.Now(), budgetEvery)
	if err != nil {
		c.s.log.Warn("add up budgets for /metrics", "err", err)
		return
	}
	for _, b := range st {
		ch <- prometheus.MustNewConstMetric(descTenantCost, prometheus.GaugeValue, b.SpentUSD, b.Tenant)
		ch <- prometheus.MustNewConstMetric(descTenantBudget, prometheus.GaugeValue, b.USDPerMonth, b.Tenant)
	}
}

// monthStart is the start of the calendar month (UTC) of t.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// budgets returns the status of every tenant with a budget, adding the
// month's costs up again when they are older than maxAge, and the budget
// alerts of this month.
func (s *Server) budgets(ctx context.Context, now time.Time, maxAge time.Duration) (map[string]BudgetStatus, []BudgetEvent, error) {
	b := s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() || now.Sub(b.at) >= maxAge || now.Before(b.at) || !monthStart(now).Equal(b.month) {
		if err := s.addUpBudgets(ctx, now); err != nil {
			return nil, nil, err
		}
	}
	st := make(map[string]BudgetStatus, len(b.status))
	for k, v := range b.status {
		st[k] = v
	}
	return st, append([]BudgetEvent(nil), b.events...), nil
}

// addUpBudgets adds up this month's cost of every tenant with a budget,
// and logs and records each threshold newly reached.
// b.mu is held.
func (s *Server) addUpBudgets(ctx context.Context, now time.Time) error {
	b := s.budget
	limits := map[string]model.Budget{}
	for _, t := range s.cfg.Tenancy.Tenants {
		if t.Budget.Set() {
			limits[t.Name] = t.Budget
		}
	}
	month := monthStart(now)
	b.month = month
	if err := s.readBudgetAlerts(ctx, month); err != nil {
		return err
	}
	status := map[string]BudgetStatus{}
	if len(limits) > 0 {
		rows, err := s.costRows(ctx, CostQuery{Since: month, Until: now, By: ByTenant}, func(tenant string) bool {
			_, ok := limits[tenant]
			return ok
		})
		if err != nil {
			return err
		}
		for name, l := range limits {
			spent := 0.0
			if r, ok := rows[(&CostRow{Tenant: name}).key()]; ok {
				spent = r.USD
			}
			st := BudgetStatus{Tenant: name, USDPerMonth: l.USDPerMonth, HardStop: l.HardStop, Month: month, SpentUSD: spent}
			switch {
			case spent >= l.USDPerMonth:
				st.Alert = 100
			case spent >= 0.8*l.USDPerMonth:
				st.Alert = 80
			}
			// Each threshold newly reached is one event, both when one
			// adding-up passes 80 and 100 at once.
			for _, th := range []int{80, 100} {
				if th > st.Alert || th <= b.reached[name] {
					continue
				}
				ev := BudgetEvent{Tenant: name, Threshold: th, At: now, SpentUSD: spent, USDPerMonth: l.USDPerMonth}
				raised, err := s.raiseBudgetAlert(ctx, month, ev)
				if err != nil {
					return err
				}
				b.reached[name] = th
				if !raised {
					continue // another server raised it first
				}
				if len(b.events) == maxBudgetEvents {
					b.events = b.events[1:]
				}
				b.events = append(b.events, ev)
				s.log.Warn("budget alert", "tenant", name, "threshold_percent", th, "spent_usd", spent,
					"budget_usd", l.USDPerMonth, "hard_stop", l.HardStop && th == 100)
			}
			status[name] = st
		}
	}
	b.status, b.at = status, now
	return nil
}

// readBudgetAlerts sets the book's alerts of month from the store: the
// events, oldest first, and the highest threshold reached per tenant.
// b.mu is held.
func (s *Server) readBudgetAlerts(ctx context.Context, month time.Time) error {
	b := s.budget
	kvs, _, err := s.st.List(ctx, prefixBudgetAlerts+month.Format("2006-01")+"/")
	if err != nil {
		return fmt.Errorf("read budget alerts: %w", err)
	}
	b.reached, b.events = map[string]int{}, b.events[:0]
	for _, kv := range kvs {
		var ev BudgetEvent
		if err := json.Unmarshal(kv.Value, &ev); err != nil {
			return fmt.Errorf("decode budget alert %s: %w", kv.Key, err)
		}
		b.events = append(b.events, ev)
		b.reached[ev.Tenant] = max(b.reached[ev.Tenant], ev.Threshold)
	}
	slices.SortStableFunc(b.events, func(x, y BudgetEvent) int {
		if c := x.At.Compare(y.At); c != 0 {
			return c
		}
		return x.Threshold - y.Threshold
	})
	if n := len(b.events); n > maxBudgetEvents {
		b.events = b.events[n-maxBudgetEvents:]
	}
	return nil
}

// raiseBudgetAlert stores ev unless its threshold was stored already this
// month, and reports whether this call stored it.
func (s *Server) raiseBudgetAlert(ctx context.Context, month time.Time, ev BudgetEvent) (bool, error) {
	key := budgetAlertKey(month, ev.Tenant, ev.Threshold)
	val, err := json.Marshal(ev)
	if err != nil {
		return false, fmt.Errorf("encode budget alert: %w", err)
	}
	_, err = s.st.Txn(ctx, store.Txn{If: []store.Cond{store.Absent(key)}, Then: []store.Op{store.PutOp(key, val)}})
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store budget alert: %w", err)
	}
	return true, nil
}

// budgetAllows refuses a submit of spec when its tenant's budget has a
// hard stop and this month's cost has reached it; work that runs inside a
// reservation (paid for already) passes.
func (s *Server) budgetAllows(spec *model.JobSpec, now time.Time) error {
	if spec.Placement.Reservation != "" {
		return nil
	}
	return s.budgetStops(spec.Tenant, "tenant", "new work", now)
}

// budgetStops refuses, naming field, what of tenant's (what) its budget
// stops: when the budget has a hard stop and this month's cost reached it.
func (s *Server) budgetStops(tenant, field, what string, now time.Time) error {
	var limit model.Budget
	for _, t := range s.cfg.Tenancy.Tenants {
		if t.Name == tenant {
			limit = t.Budget
		}
	}
	if !limit.HardStop {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, _, err := s.budgets(ctx, now, budgetFresh)
	if err != nil {
		return err
	}
	if b := st[tenant]; b.SpentUSD >= b.USDPerMonth {
		how := "run inside a reservation, wait for next month, or ask an administrator to raise the budget"
		if what != "new work" {
			how = "wait for next month, or ask an administrator to raise the budget"
		}
		return refuse(CodeBudgetExceeded, field, "tenant %q has spent $%.2f of its $%.2f budget for %s and its budget (hard_stop) stops %s; %s",
			tenant, b.SpentUSD, b.USDPerMonth, b.Month.Format("January 2006"), what, how)
	}
	return nil
}

// checkBudgetsEvery adds up the month's costs every budgetEvery, so that
// thresholds are logged and recorded as they are reached, until ctx ends.
func (s *Server) checkBudgetsEvery(ctx context.Context) {
	t := time.NewTicker(budgetEvery)
	defer t.Stop()
	for {
		if _, _, err := s.budgets(ctx, s.clock.Now(), 0); err != nil && ctx.Err() == nil {
			s.log.Warn("add up budgets", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Budgets returns the budgets p may see (of tenant only, when set), as
// of now, and this month's budget alerts among them.
func (s *Server) Budgets(ctx context.Context, p Principal, tenant string, now time.Time) ([]BudgetStatus, []BudgetEvent, error) {
	st, ev, err := s.budgets(ctx, now, budgetFresh)
	if err != nil {
		return nil, nil, err
	}
	keep := func(t string) bool { return p.Sees(t) && (tenant == "" || t == tenant) }
	var out []BudgetStatus
	for _, b := range st {
		if keep(b.Tenant) {
			out = append(out, b)
		}
	}
	var events []BudgetEvent
	for _, e := range ev {
		if keep(e.Tenant) {
			events = append(events, e)
		}
	}
	return out, events, nil
}
