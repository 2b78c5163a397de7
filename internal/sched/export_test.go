package sched

// SpareOneByOne makes preempt spare victims one trial each, as it does when
// trials are not monotone, until the returned function is called.
func SpareOneByOne() (restore func()) {
	spareOneByOne = true
	return func() { spareOneByOne = false }
}

// EagerMoves turns the logging of moves on cold nodes off (cold.go) and
// returns what turns it back on.
func EagerMoves() func() {
	eagerMoves = true
	return func() { eagerMoves = false }
}
