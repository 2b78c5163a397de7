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

// OneDomainOff makes preempt run its whole search where the first domain
// with room would decide it (onedomain.go), until the returned function is
// called.
func OneDomainOff() (restore func()) {
	noOneDomain = true
	return func() { noOneDomain = false }
}

// CountOneDomain counts the preemptions the first domain with room decides
// until restore is called.
func CountOneDomain() (count func() int, restore func()) {
	n := 0
	oneDomainAnswered = func() { n++ }
	return func() int { return n }, func() { oneDomainAnswered = nil }
}
