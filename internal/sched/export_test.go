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

// OneNodeOff makes preempt run its whole search where one node's victims
// would decide it (onenode.go), until the returned function is called.
func OneNodeOff() (restore func()) {
	noOneNode = true
	return func() { noOneNode = false }
}

// CountOneNode counts the preemptions one node's victims decide until
// restore is called.
func CountOneNode() (count func() int, restore func()) {
	n := 0
	oneNodeAnswered = func() { n++ }
	return func() int { return n }, func() { oneNodeAnswered = nil }
}
