package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// TenantKind tells internal product teams from external customers.
type TenantKind string

const (
	TenantInternal TenantKind = "internal"
	TenantCustomer TenantKind = "customer"
)

// Tenant is a team or customer that submits work.
type Tenant struct {
	Name      string
	Kind      TenantKind
	Partition string  // the partition whose guarantees the tenant draws on
	Weight    float64 // fair-share weight inside its partition (default 1)
	// Reserve limits the reservations the tenant may buy itself through the
	// API; the zero value allows none (an administrator reserves for it).
	Reserve ReserveLimits
	// Labels describe the tenant's work to operator policies (e.g.
	// workload: developer); every job of the tenant carries them unless the
	// job sets the same key itself.
	Labels map[string]string
	// Budget is what the tenant may spend per month (budget.go).
	Budget Budget
	// Classes are the priority classes the tenant's jobs and endpoints may
	// ask for; nil means the default (Tenancy.AllowedClasses). Inside one
	// of its own reservations a job may ask for any class.
	Classes []Class
}

// DefaultReserveDuration is ReserveLimits.MaxDuration when a tenant may
// reserve but the tenants file names no duration.
const DefaultReserveDuration = 30 * 24 * time.Hour

// ReserveLimits bounds a tenant's own reservations: at most MaxCount nodes
// held at any one time over all of them, each for at most MaxDuration (from
// its start, or from now when it starts in the past). Reserved GPUs also
// count against the tenant's quota of the SKU's series in the region.
type ReserveLimits struct {
	MaxCount    int
	MaxDuration time.Duration
}

// Partition is a slice of the fleet promised to a group of tenants.
type Partition struct {
	Name       string
	Tier       string // free text for people, e.g. "internal-ai", "customer-critical", "elastic"
	Guarantees []Guarantee
	// Labels describe the partition's work to operator policies; its
	// tenants' jobs carry them unless the tenant or the job sets the key.
	Labels map[string]string
}

// Guarantee promises a partition GPUs of one model in one region. Either GPUs
// or Percent (of the fleet's GPUs of that model in that region) is set;
// Resolve turns Percent into GPUs.
type Guarantee struct {
	Region   string
	GPUModel string
	GPUs     int
	Percent  float64
	// BorrowLimit caps how many GPUs beyond the guarantee the partition may
	// borrow from idle capacity; nil means no cap, 0 forbids borrowing.
	BorrowLimit *int
	// LendLimit caps how many of the guaranteed GPUs others may borrow while
	// they are idle; nil means all of them.
	LendLimit *int
}

// Quota is a tenant's hard ceiling of GPUs of one series in one region.
type Quota struct {
	Tenant string
	Region string
	Series string
	GPUs   int
}

// Reservation is capacity bought ahead: Count nodes of SKU in Region held for
// Owner between Start and End (zero times mean open-ended). Before Start the
// scheduling core keeps the nodes it will take for it (package sched, step 2:
// earmarks).
type Reservation struct {
	Name   string
	Owner  string
	SKU    string
	Region string
	Count  int
	Start  time.Time
	End    time.Time
}

// ActiveAt reports whether the reservation holds capacity at t.
func (r Reservation) ActiveAt(t time.Time) bool {
	return (r.Start.IsZero() || !t.Before(r.Start)) && (r.End.IsZero() || t.Before(r.End))
}

// Tenancy is everything about who may use what.
type Tenancy struct {
	// Strategy is how the fleet shares capacity between partitions
	// (static, dynamic or hybrid; empty means the tenancy as written).
	// Package strategy turns it into what the core is given;
	// docs/strategies.md.
	Strategy     Strategy
	Tenants      []Tenant
	Partitions   []Partition
	Quotas       []Quota
	Reservations []Reservation
}

// Tenant returns the tenant named name.
func (t *Tenancy) Tenant(name string) (Tenant, bool) {
	for _, x := range t.Tenants {
		if x.Name == name {
			return x, true
		}
	}
	return Tenant{}, false
}

// AllowedClasses are the classes tenant may ask for outside its
// reservations, lowest first: those the tenants file names for it, else
// spot and standard, and reserved too when its partition has a guarantee
// (reserved is the class of guaranteed or bought-ahead capacity: a tenant
// without either would preempt others' standard work at the on-demand
// price). An unknown tenant may use none.
func (t *Tenancy) AllowedClasses(tenant string) []Class {
	x, ok := t.Tenant(tenant)
	switch {
	case !ok:
		return nil
	case len(x.Classes) > 0:
		return x.Classes
	}
	for _, p := range t.Partitions {
		if p.Name == x.Partition && slices.ContainsFunc(p.Guarantees, func(g Guarantee) bool { return g.GPUs > 0 }) {
			return Classes
		}
	}
	return []Class{ClassSpot, ClassStandard}
}

// CheckClass refuses a job of tenant that asks for class c outside what
// AllowedClasses grants it, naming the field priority; a job that names a
// reservation its tenant owns (reservation) may ask for any class.
func (t *Tenancy) CheckClass(tenant string, c Class, reservation string) error {
	allowed := t.AllowedClasses(tenant)
	if slices.Contains(allowed, c) {
		return nil
	}
	if reservation != "" && slices.ContainsFunc(t.Reservations, func(r Reservation) bool {
		return r.Name == reservation && r.Owner == tenant
	}) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = a.String()
	}
	return fieldErr("priority", "class %q is not allowed for tenant %q (allowed: %s): reserved is for partitions with a guarantee "+
		"and inside the tenant's own reservations (placement.reservation); the tenants file's classes grants a tenant others",
		c.String(), tenant, strings.Join(names, ", "))
}

// Validate checks the tenancy against the fleet and resolves percentage
// guarantees into GPU counts.
func (t *Tenancy) Validate(f *Fleet) error {
	if !t.Strategy.Valid() {
		return fieldErr("strategy", "must be static, dynamic or hybrid, got %q", t.Strategy)
	}
	parts := map[string]bool{}
	for i := range t.Partitions {
		p := &t.Partitions[i]
		fp := fmt.Sprintf("partitions[%d]", i)
		if p.Name == "" {
			return fieldErr(fp+".name", "must not be empty")
		}
		if parts[p.Name] {
			return fieldErr(fp+".name", "partition %q is defined twice", p.Name)
		}
		parts[p.Name] = true
		if err := ValidateLabels(fp+".labels", p.Labels); err != nil {
			return err
		}
		for j := range p.Guarantees {
			if err := p.Guarantees[j].resolve(f); err != nil {
				return Prefix(fmt.Sprintf("%s.guarantees[%d]", fp, j), err)
			}
		}
	}
	// The guarantees on one pool must not promise more than the pool has.
	promised := map[[2]string]int{}
	for i, p := range t.Partitions {
		for j, g := range p.Guarantees {
			k := [2]string{g.Region, g.GPUModel}
			promised[k] += g.GPUs
			if have := f.GPUCount(g.Region, g.GPUModel); promised[k] > have {
				return fieldErr(fmt.Sprintf("partitions[%d].guarantees[%d].gpus", i, j),
					"partitions promise %d %s GPUs in %s, the fleet has %d", promised[k], g.GPUModel, g.Region, have)
			}
		}
	}
	tenants := map[string]bool{}
	for i, x := range t.Tenants {
		fp := fmt.Sprintf("tenants[%d]", i)
		switch {
		case x.Name == "":
			return fieldErr(fp+".name", "must not be empty")
		case tenants[x.Name]:
			return fieldErr(fp+".name", "tenant %q is defined twice", x.Name)
		case x.Kind != TenantInternal && x.Kind != TenantCustomer:
			return fieldErr(fp+".kind", "must be internal or customer, got %q", x.Kind)
		case x.Partition != "" && !parts[x.Partition]:
			return fieldErr(fp+".partition", "unknown partition %q", x.Partition)
		case x.Weight < 0 || math.IsNaN(x.Weight) || math.IsInf(x.Weight, 0):
			return fieldErr(fp+".weight", "must be a positive number")
		case x.Reserve.MaxCount < 0:
			return fieldErr(fp+".reservation.max_count", "must not be negative")
		case x.Reserve.MaxDuration < 0:
			return fieldErr(fp+".reservation.max_duration", "must not be negative")
		}
		if err := ValidateLabels(fp+".labels", x.Labels); err != nil {
			return err
		}
		if err := x.Budget.validate(fp + ".budget"); err != nil {
			return err
		}
		if err := validClasses(fp+".classes", x.Classes); err != nil {
			return err
		}
		if x.Weight == 0 {
			t.Tenants[i].Weight = 1
		}
		if x.Reserve.MaxCount > 0 && x.Reserve.MaxDuration == 0 {
			t.Tenants[i].Reserve.MaxDuration = DefaultReserveDuration
		}
		tenants[x.Name] = true
	}
	for i, q := range t.Quotas {
		fp := fmt.Sprintf("quotas[%d]", i)
		switch {
		case !tenants[q.Tenant]:
			return fieldErr(fp+".tenant", "unknown tenant %q", q.Tenant)
		case !hasRegion(f, q.Region):
			return fieldErr(fp+".region", "unknown region %q%s", q.Region, DidYouMean(q.Region, f.RegionNames()))
		case q.Series == "":
			return fieldErr(fp+".series", "must not be empty (e.g. ND, NC)")
		case q.GPUs < 0:
			return fieldErr(fp+".gpus", "must not be negative")
		}
	}
	names := map[string]bool{}
	for i, r := range t.Reservations {
		if err := r.Validate(f, tenants); err != nil {
			return Prefix(fmt.Sprintf("reservations[%d]", i), err)
		}
		if names[r.Name] {
			return fieldErr(fmt.Sprintf("reservations[%d].name", i), "reservation %q is defined twice", r.Name)
		}
		names[r.Name] = true
	}
	return nil
}

// Validate checks a reservation against the fleet and the known tenants.
func (r Reservation) Validate(f *Fleet, tenants map[string]bool) error {
	switch {
	case r.Name == "":
		return fieldErr("name", "must not be empty")
	case tenants != nil && !tenants[r.Owner]:
		return fieldErr("owner", "unknown tenant %q", r.Owner)
	case r.Count <= 0:
		return fieldErr("count", "must be positive, got %d", r.Count)
	case !r.End.IsZero() && !r.End.After(r.Start):
		return fieldErr("end", "must be after start")
	}
	for _, f := range []struct{ field, value string }{{"name", r.Name}, {"owner", r.Owner}, {"sku", r.SKU}, {"region", r.Region}} {
		if err := Printable(f.field, f.value); err != nil {
			return err
		}
	}
	if _, ok := f.Catalog[r.SKU]; !ok {
		return fieldErr("sku", "unknown SKU %q%s", r.SKU, DidYouMean(r.SKU, f.Catalog.Names()))
	}
	if !hasRegion(f, r.Region) {
		return fieldErr("region", "unknown region %q%s", r.Region, DidYouMean(r.Region, f.RegionNames()))
	}
	if have := f.NodeCount(r.Region, r.SKU); r.Count > have {
		return fieldErr("count", "region %s has %d nodes of %s, %d asked", r.Region, have, r.SKU, r.Count)
	}
	return nil
}

func (g *Guarantee) resolve(f *Fleet) error {
	if !hasRegion(f, g.Region) {
		return fieldErr("region", "unknown region %q%s", g.Region, DidYouMean(g.Region, f.RegionNames()))
	}
	if g.GPUModel == "" {
		return fieldErr("gpu_model", "must not be empty")
	}
	have := f.GPUCount(g.Region, g.GPUModel)
	switch {
	case g.Percent < 0 || g.Percent > 100 || math.IsNaN(g.Percent):
		return fieldErr("percent", "must be between 0 and 100")
	case g.Percent > 0:
		// Resolving twice is harmless; a different count set beside the
		// percentage is a contradiction.
		n := int(math.Floor(float64(have) * g.Percent / 100))
		if g.GPUs > 0 && g.GPUs != n {
			return fieldErr("percent", "set gpus or percent, not both")
		}
		g.GPUs = n
	case g.GPUs < 0:
		return fieldErr("gpus", "must not be negative")
	}
	if g.BorrowLimit != nil && *g.BorrowLimit < 0 {
		return fieldErr("borrow_limit", "must not be negative")
	}
	if g.LendLimit != nil && (*g.LendLimit < 0 || *g.LendLimit > g.GPUs) {
		return fieldErr("lend_limit", "must be between 0 and the guarantee (%d)", g.GPUs)
	}
	return nil
}

// validClasses checks a tenant's classes: known ones, each once.
func validClasses(field string, cs []Class) error {
	for i, c := range cs {
		switch {
		case c < ClassSpot || c > ClassReserved:
			return fieldErr(fmt.Sprintf("%s[%d]", field, i), "unknown class %d", int(c))
		case slices.Contains(cs[:i], c):
			return fieldErr(fmt.Sprintf("%s[%d]", field, i), "class %s is named twice", c)
		}
	}
	return nil
}

func hasRegion(f *Fleet, name string) bool {
	_, ok := f.Region(name)
	return ok
}
