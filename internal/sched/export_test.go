package sched

// SpareOneByOne makes preempt spare victims one trial each, as it does when
// trials are not monotone, until the returned function is called.
func SpareOneByOne() (restore func()) {
	spareOneByOne = true
	return func() { spareOneByOne = false }
}
