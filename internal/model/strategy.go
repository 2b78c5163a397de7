package model

// Strategy is how a fleet shares capacity between its partitions
// (docs/strategies.md).
type Strategy string

const (
	// StrategyStatic: each partition runs only on its guarantees, which it
	// lends to no one; capacity no partition is guaranteed is shared by the
	// tenants without a partition.
	StrategyStatic Strategy = "static"
	// StrategyDynamic: one pool; guarantees are not enforced, priority
	// classes, operator policies and preemption decide.
	StrategyDynamic Strategy = "dynamic"
	// StrategyHybrid: guarantees as the base layer, idle guaranteed
	// capacity lent and reclaimed, and non-urgent work (batch, developer,
	// spot) run as spot on whatever is idle, in any region it may use.
	StrategyHybrid Strategy = "hybrid"
)

// Strategies lists the strategies in the order reports show them.
var Strategies = []Strategy{StrategyStatic, StrategyDynamic, StrategyHybrid}

// Valid reports whether s is a known strategy or empty (none: the
// tenancy as written, guarantees lent and reclaimed, no overflow).
func (s Strategy) Valid() bool {
	return s == "" || s == StrategyStatic || s == StrategyDynamic || s == StrategyHybrid
}
