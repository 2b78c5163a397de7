package cli

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/server"
)

// exposition writes allot_cycle_phase_seconds for every phase with the
// given per-bucket counts (not cumulative) over bounds 1, 2, 4 ms and
// +Inf, and the other series bench e2e reads.
func exposition(counts map[string][4]float64, cycles, cpu float64) string {
	var b strings.Builder
	b.WriteString("# HELP allot_cycle_phase_seconds x\n# TYPE allot_cycle_phase_seconds histogram\n")
	for _, p := range server.CyclePhases {
		c := counts[p]
		cum, sum := 0.0, 0.0
		for i, le := range []string{"0.001", "0.002", "0.004", "+Inf"} {
			cum += c[i]
			sum += c[i] * []float64{0.0005, 0.0015, 0.003, 0.01}[i]
			b.WriteString(`allot_cycle_phase_seconds_bucket{phase="` + p + `",le="` + le + `"} ` + ftoa(cum) + "\n")
		}
		b.WriteString(`allot_cycle_phase_seconds_sum{phase="` + p + `"} ` + ftoa(sum) + "\n")
		b.WriteString(`allot_cycle_phase_seconds_count{phase="` + p + `"} ` + ftoa(cum) + "\n")
	}
	b.WriteString("allot_cycle_duration_seconds_count " + ftoa(cycles) + "\n")
	b.WriteString("process_cpu_seconds_total " + ftoa(cpu) + "\nprocess_resident_memory_bytes 1.048576e+08\n")
	b.WriteString(`allot_gpus{region="r",cluster="c",gpu_model="H100",health="Ready"} 8` + "\n")
	return b.String()
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// The split is the difference of two scrapes, phase by phase: the mean
// exact, the quantiles interpolated within their bucket, the +Inf bucket
// read as the highest finite bound.
func TestCycleSplit(t *testing.T) {
	before, err := readScrape(strings.NewReader(exposition(map[string][4]float64{"plan": {5, 0, 0, 0}}, 3, 1.5)))
	if err != nil {
		t.Fatal(err)
	}
	after, err := readScrape(strings.NewReader(exposition(map[string][4]float64{
		"plan":   {5, 50, 50, 0}, // 100 new: 50 in (1, 2] ms, 50 in (2, 4] ms
		"commit": {0, 0, 99, 1},  // the p99 in (2, 4], one above 4 ms
		"watch":  {0, 0, 0, 2},   // all in +Inf
	}, 10, 2.5)))
	if err != nil {
		t.Fatal(err)
	}
	if after.cycles != 10 || after.cpuS != 2.5 || after.rssMiB != 100 || !after.hasProcess {
		t.Fatalf("scrape %+v", after)
	}
	split, err := cycleSplit(before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]phaseFigures{
		"plan":     {Count: 100, MeanMs: 2.25, P50Ms: 2, P99Ms: 3.96},
		"commit":   {Count: 100, MeanMs: 3.07, P50Ms: 3.01, P99Ms: 4},
		"watch":    {Count: 2, MeanMs: 10, P50Ms: 4, P99Ms: 4},
		"snapshot": {},
	}
	for p, w := range want {
		if got := split[p]; got != w {
			t.Errorf("%s: %+v, want %+v", p, got, w)
		}
	}
	if len(split) != len(server.CyclePhases) {
		t.Errorf("split has %d phases, want %d", len(split), len(server.CyclePhases))
	}
	// A server without the phases (an older one) cannot be split.
	old, err := readScrape(strings.NewReader("allot_cycle_duration_seconds_count 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cycleSplit(old, old); err == nil || !strings.Contains(err.Error(), "allot_cycle_phase_seconds") {
		t.Fatalf("no phases: %v", err)
	}
}

func TestParseSample(t *testing.T) {
	tests := []struct {
		line   string
		name   string
		labels map[string]string
		value  float64
		bad    bool
	}{
		{line: "process_cpu_seconds_total 12.5", name: "process_cpu_seconds_total", value: 12.5},
		{line: `a_bucket{phase="plan",le="+Inf"} 7`, name: "a_bucket", labels: map[string]string{"phase": "plan", "le": "+Inf"}, value: 7},
		{line: `a{l="q\"uote\\",m="x\ny"} 1 1700000000000`, name: "a", labels: map[string]string{"l": `q"uote\`, "m": "x\ny"}, value: 1},
		{line: `a{} NaN`, name: "a", value: math.NaN()},
		{line: `{l="x"} 1`, bad: true},
		{line: `a{l="x} 1`, bad: true},
		{line: `a{l} 1`, bad: true},
		{line: `a one`, bad: true},
		{line: `a`, bad: true},
		{line: `a 1 2 3`, bad: true},
	}
	for _, tt := range tests {
		name, labels, v, err := parseSample(tt.line)
		if tt.bad {
			if err == nil {
				t.Errorf("%q: no error", tt.line)
			}
			continue
		}
		if err != nil || name != tt.name || len(labels) != len(tt.labels) || !(v == tt.value || math.IsNaN(v) && math.IsNaN(tt.value)) {
			t.Errorf("%q: %q %v %v %v", tt.line, name, labels, v, err)
			continue
		}
		for k, want := range tt.labels {
			if labels[k] != want {
				t.Errorf("%q: label %s = %q, want %q", tt.line, k, labels[k], want)
			}
		}
	}
}

func FuzzParseSample(f *testing.F) {
	f.Add(`allot_cycle_phase_seconds_bucket{phase="plan",le="0.0015"} 12`)
	f.Add(`a{l="\\\"",m=""} -Inf 5`)
	f.Add("process_cpu_seconds_total 1e3")
	f.Fuzz(func(t *testing.T, line string) {
		name, _, _, err := parseSample(line)
		if err == nil && (name == "" || strings.ContainsAny(name, "{ ")) {
			t.Fatalf("%q: accepted name %q", line, name)
		}
		_, _ = readScrape(strings.NewReader("allot_cycle_phase_seconds" + line + "\n"))
	})
}

// A scrape taken after a cycle committed but before it published and ended
// is not settled: the split would count a commit without its publish.
func TestCyclesEnded(t *testing.T) {
	scrape := func(commit, publish, cycles float64) serverScrape {
		return serverScrape{cycles: cycles, phases: map[string]*histogram{"commit": {count: commit}, "publish": {count: publish}}}
	}
	before := scrape(4, 4, 10)
	for _, tc := range []struct {
		after serverScrape
		want  bool
	}{
		{scrape(4, 4, 10), true},  // nothing committed since
		{scrape(5, 4, 10), false}, // committed, not published
		{scrape(5, 5, 10), false}, // published, not yet counted
		{scrape(5, 5, 11), true},
		{scrape(7, 7, 12), true},
	} {
		if got := cyclesEnded(before, tc.after); got != tc.want {
			t.Errorf("after %+v: %v, want %v", tc.after, got, tc.want)
		}
	}
}
