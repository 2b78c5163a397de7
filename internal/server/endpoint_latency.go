package server

import "time"

// eachP95 hands the operator policies (policies.go) the p95 latency of
// endpoints: for every endpoint, each sample of its window later than
// after(endpoint), oldest first, as add(endpoint, at, seconds). A sample
// without requests (P95Ms 0: nothing was measured) is left out, so the
// value before it stays in force. add must not call into the endpoint
// book.
func (b *endpointBook) eachP95(after func(endpoint string) time.Time, add func(endpoint string, at time.Time, seconds float64)) {
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
