package endpoint

import "time"

// EachP95 hands the operator policies (the server's policies.go) the p95
// latency of endpoints: for every endpoint, each sample of its window later
// than after(endpoint), oldest first, as add(endpoint, at, seconds). A
// sample without requests (P95Ms 0: nothing was measured) is left out, so
// the value before it stays in force. add must not call into the Book.
func (b *Book) EachP95(after func(endpoint string) time.Time, add func(endpoint string, at time.Time, seconds float64)) {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	for name, w := range b.windows {
		since := after(name)
		for _, sm := range w {
			if sm.At.After(since) && sm.P95Ms > 0 {
				add(name, sm.At, sm.P95Ms/1000)
			}
		}
	}
}
