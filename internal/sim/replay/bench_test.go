package replay

import (
	"context"
	"testing"
)

// BenchmarkReplay replays the whole trace at --cluster-scale 0.25, one
// replay per iteration; profile it with -cpuprofile to see where a cycle
// spends its time.
func BenchmarkReplay(b *testing.B) {
	if testing.Short() {
		b.Skip("full replay")
	}
	jobs, vcs := loadTrace(b)
	for _, c := range []struct {
		policy  string
		sharing Sharing
	}{{"fifo", Static}, {"allot", Static}, {"allot", Borrow}} {
		b.Run(c.policy+"-"+string(c.sharing), func(b *testing.B) {
			cfg := sliceConfig(jobs, vcs, c.policy, c.sharing)
			cfg.Limit = 0
			var r *Result
			for b.Loop() {
				var err error
				if r, err = Run(context.Background(), cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Cycles), "cycles")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(r.Cycles)*1e6, "µs/cycle")
		})
	}
}
