// Package schedtest builds fleets, tenancies and jobs for tests and
// benchmarks of the scheduling core and its drivers, and checks the
// invariants every committed plan must keep, so tests read as the scenario
// they check.
package schedtest
