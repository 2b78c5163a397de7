package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
)

func TestWhyPrinter(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	w := client.Why{ID: "x-1", State: "Queued", Reason: "InsufficientCapacity", Detail: "d",
		EstimatedStart: client.Time{Time: now.Add(time.Hour)}, EstimateHow: "core run forward over 2 events",
		Region: "westus", Regions: []client.RegionEstimate{
			{Region: "westus", EstimatedStart: client.Time{Time: now.Add(time.Hour)}, PricePerGPUHour: 0.53, Distance: 1, Score: 1.63, Chosen: true},
			{Region: "eastus", NoEstimate: "never", PricePerGPUHour: 0.53, Score: 168.13},
		}}
	var b strings.Builder
	if err := whyPrinter(w, now).print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Region:           westus", "Estimated start:  2026-12-01T03:00:00Z (in 1h)",
		"Estimated by:     core run forward over 2 events", "REGION  ESTIMATED START", "westus  2026-12-01T03:00:00Z  $0.53",
		"eastus  unknown", "168.13"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "westus" || f[0] == "eastus") &&
			strings.HasSuffix(line, "*") != (f[0] == "westus") {
			t.Errorf("chosen mark wrong in %q", line)
		}
	}
	// No estimate: the reason; one region: no table.
	w = client.Why{ID: "y", State: "Queued", EstimateNone: "nothing left to happen"}
	b.Reset()
	if err := whyPrinter(w, now).print(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "Estimated start:  unknown: nothing left to happen") || strings.Contains(out, "REGION") {
		t.Errorf("no estimate:\n%s", out)
	}
	// A job that ended has no start to estimate.
	w = client.Why{ID: "z", State: "Failed", Reason: "Failed", Detail: "attempt 1, rank 0 on n1 exited with code 3"}
	b.Reset()
	if err := whyPrinter(w, now).print(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "Estimated start") || !strings.Contains(out, "exited with code 3") {
		t.Errorf("ended job:\n%s", out)
	}
}

// TestWhyPrinterRunning: a running job says where it runs, since when,
// its protection and what may preempt it; a job with an expected run says
// how long and on what.
func TestWhyPrinterRunning(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	w := client.Why{ID: "r", State: "Running", RunningOn: []string{"h-1", "h-2"},
		RunningSince: client.Time{Time: now.Add(-5 * time.Minute)}, ProtectedUntil: client.Time{Time: now.Add(5 * time.Minute)},
		PreemptibleBy:      []string{"reserved work of its own partition p only", "its own tenant's standard work of a priority at least 10 higher"},
		ExpectedRunSeconds: 7200, ExpectedRunBasis: "history of the same job: the median of 3 runs of t/train"}
	var b strings.Builder
	if err := whyPrinter(w, now).print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Runs on:          h-1, h-2", "Since:            2026-12-01T01:55:00Z (5m ago)",
		"Protected until:  2026-12-01T02:05:00Z", "Preemptible by:   reserved work of its own partition p only",
		"its own tenant's standard work", "Expected run:     2h (history of the same job: the median of 3 runs of t/train)"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}
