package engine

import "github.com/allot-dev/allot/internal/sched"

// Commit applies a Plan made by hand to the live jobs now, as a cycle
// commits the core's, and asks for a cycle: for tests of what the core
// does not decide on its own.
func (e *Engine) Commit(plan sched.Plan) error {
	e.dirty = true
	return e.commit(plan, e.now)
}
