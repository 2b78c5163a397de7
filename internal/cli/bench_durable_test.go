package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
)

// The load of BenchmarkSubmit: bench e2e's defaults, 8,000 one-GPU jobs on
// a fleet with room for all of them, from 16 concurrent HTTP clients, so
// the bolt figures compare with BENCHMARKS.md's bench e2e runs.
const (
	durableNodes   = 1000 // 8,000 GPUs
	durableJobs    = 8000 // every one fits: all end Running
	durableClients = 16
)

// BenchmarkSubmit is allot bench e2e on each durable store: bolt with fsync
// on every commit, and an embedded etcd of 1 and of 3 members on loopback
// (package etcdtest, in this process) with fsync on and the server's
// leader election on, as allot server --store etcd://… runs. Each
// iteration is a whole run on a new store; the metrics are means over
// the iterations:
//
//	submits/s       acknowledged (201) POST /v1/jobs per second, from the
//	                first submit to the last acknowledgement
//	running-jobs/s  jobs Running per second, from the first submit until
//	                /metrics shows them all Running
//	p50-ms, p99-ms  started_at - submitted_at of the jobs, as the API shows
//	cpu-ms/job      the process's CPU time over the same span per job: the
//	                server, the clients and, for etcd, the members
//
// Run it with:
//
//	go test -run '^$' -bench 'BenchmarkSubmit' -benchtime 1x ./internal/cli/
func BenchmarkSubmit(b *testing.B) {
	for _, tc := range []struct {
		name    string
		members int // 0: bolt
	}{{"bolt", 0}, {"etcd-1", 1}, {"etcd-3", 3}} {
		b.Run(tc.name, func(b *testing.B) {
			f := benchE2EFlags{nodes: durableNodes, jobs: durableJobs, clients: durableClients, timeout: 5 * time.Minute,
				output: "json"}
			if tc.members > 0 {
				c := etcdtest.Start(b, tc.members, etcdtest.Fsync())
				f.store = "etcd://" + strings.Join(c.HostPorts(), ",")
			}
			var submits, jobs, p50, p99, cpu float64
			for range b.N {
				r := durableRun(b, f)
				submits += r.SubmitsPerS
				jobs += r.JobsPerS
				p50 += r.LatencyP50Ms
				p99 += r.LatencyP99Ms
				cpu += r.CPUPerJobMs
			}
			n := float64(b.N)
			b.ReportMetric(submits/n, "submits/s")
			b.ReportMetric(jobs/n, "running-jobs/s")
			b.ReportMetric(p50/n, "p50-ms")
			b.ReportMetric(p99/n, "p99-ms")
			b.ReportMetric(cpu/n, "cpu-ms/job")
		})
	}
}

// durableRun runs bench e2e once with f and fails b unless every job was
// acknowledged and Running at the end.
func durableRun(b *testing.B, f benchE2EFlags) benchE2EResult {
	b.Helper()
	var out, errOut bytes.Buffer
	if err := runBenchE2E(b.Context(), &out, &errOut, f); err != nil {
		b.Fatalf("bench e2e: %v\n%s", err, errOut.String())
	}
	var r benchE2EResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		b.Fatalf("%v: %s", err, out.String())
	}
	if r.Submitted != f.jobs || r.Errors != 0 || r.Running != f.jobs {
		b.Fatalf("%d of %d acknowledged, %d refused, %d Running: %s", r.Submitted, f.jobs, r.Errors, r.Running, errOut.String())
	}
	b.Logf("%s: load average at start %s", r.Store, r.LoadAvgAtStart)
	return r
}
