package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// A short `allot bench api` run acknowledges durable submits and reports
// the figures BENCHMARKS.md quotes.
func TestBenchAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and submits for a second")
	}
	out, errOut, code := run(t, "bench", "api", "--clients", "2", "--duration", "1s", "--warmup", "100ms",
		"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Clients       int     `json:"clients"`
		Submits       int     `json:"submits"`
		Errors        int     `json:"errors"`
		SubmitsPerSec float64 `json:"submits_per_sec"`
		P99Ms         float64 `json:"p99_ms"`
		JobsAtEnd     int     `json:"jobs_at_end"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Clients != 2 || r.Submits == 0 || r.Errors != 0 || r.SubmitsPerSec <= 0 || r.P99Ms <= 0 || r.JobsAtEnd < r.Submits {
		t.Fatalf("report %+v", r)
	}
}

// bench api compares with --baseline: a baseline far out of reach exits
// with ExitRegressed, after the result.
func TestBenchAPIBaseline(t *testing.T) {
	base := writeBaseline(t, `{"clients": 2, "submits_per_sec": 1e12, "p50_ms": 1e9, "p99_ms": 1e9}`)
	out, errOut, code := run(t, "bench", "api", "--clients", "2", "--duration", "200ms", "--warmup", "50ms",
		"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml", "--baseline", base)
	if code != ExitRegressed || !strings.Contains(out, "submits/s") ||
		!strings.Contains(errOut, "regression: submits_per_sec 1000000000000 → ") || strings.Contains(errOut, "p99_ms") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
