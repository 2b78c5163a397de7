package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/server"
)

type baselineResult struct {
	Clients int     `json:"clients"`
	Rate    float64 `json:"rate"`
	P99Ms   float64 `json:"p99_ms"`
	Cycle   struct {
		MaxMs float64 `json:"max_ms"`
	} `json:"cycle"`
}

var baselineFigures = []figure{
	{"clients", sameSetting},
	{"rate", higherIsBetter},
	{"p99_ms", lowerIsBetter},
	{"cycle.max_ms", lowerIsBetter},
}

func writeBaseline(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "base.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func baselineSample(clients int, rate, p99, cycleMax float64) baselineResult {
	r := baselineResult{Clients: clients, Rate: rate, P99Ms: p99}
	r.Cycle.MaxMs = cycleMax
	return r
}

func TestBaselineCompares(t *testing.T) {
	const base = `{"clients": 8, "rate": 1000, "p99_ms": 20, "cycle": {"max_ms": 50}, "other": "ignored"}`
	tests := []struct {
		name  string
		cur   baselineResult
		worse []string // figures printed as regressions; none: nil error
	}{
		{"same", baselineSample(8, 1000, 20, 50), nil},
		{"better", baselineSample(8, 5000, 2, 10), nil},
		{"worse within 20 %", baselineSample(8, 801, 23.9, 59.9), nil},
		{"rate down 25 %", baselineSample(8, 750, 20, 50), []string{"rate"}},
		{"latencies up", baselineSample(8, 1000, 30, 61), []string{"p99_ms", "cycle.max_ms"}},
		{"all worse", baselineSample(8, 10, 100, 100), []string{"rate", "p99_ms", "cycle.max_ms"}},
	}
	path := writeBaseline(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectRegressions(t, path, baselineFigures, tt.cur, tt.worse) })
	}
}

// expectRegressions checks cur against the baseline at path: no error and
// nothing printed when worse is empty, else a regression naming exactly
// the figures of worse, in order, each on a line of its own.
func expectRegressions(t *testing.T, path string, figures []figure, cur any, worse []string) {
	t.Helper()
	b, err := loadBaseline(path, figures)
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	err = b.check(&w, cur)
	if len(worse) == 0 {
		if err != nil || w.Len() != 0 {
			t.Fatalf("err %v, printed %q; want neither", err, w.String())
		}
		return
	}
	var re *regressionError
	if !errors.As(err, &re) {
		t.Fatalf("err %v; want a regression", err)
	}
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	if len(lines) != len(worse) || len(re.worse) != len(worse) {
		t.Fatalf("printed %q; want regressions of %v", w.String(), worse)
	}
	for i, name := range worse {
		if !strings.HasPrefix(lines[i], "regression: "+name+" ") || !strings.HasPrefix(re.worse[i], name+" ") {
			t.Errorf("regression %d = %q (printed %q); want figure %s", i, re.worse[i], lines[i], name)
		}
	}
}

// A figure that was 0 and grows cannot be compared as a fraction: a
// lower-is-better one counts as worse, a higher-is-better one never.
func TestBaselineFromZero(t *testing.T) {
	b, err := loadBaseline(writeBaseline(t, `{"clients": 1, "rate": 0, "p99_ms": 0, "cycle": {"max_ms": 0}}`), baselineFigures)
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	var re *regressionError
	if err := b.check(&w, baselineSample(1, 0, 3, 0)); !errors.As(err, &re) || len(re.worse) != 1 ||
		!strings.Contains(w.String(), "p99_ms 0 → 3 (up from 0") {
		t.Fatalf("err %v, printed %q", err, w.String())
	}
	if err := b.check(&bytes.Buffer{}, baselineSample(1, 5, 0, 0)); err != nil {
		t.Fatal(err)
	}
}

func TestBaselineRefuses(t *testing.T) {
	tests := []struct {
		name, body string // body "" means no file
		want       string
	}{
		{"missing file", "", "no such file"},
		{"not JSON", "submits 1000\n", "not the JSON object"},
		{"a list", `[{"rate": 1}]`, "not the JSON object"},
		{"another command's output", `{"clients": 8, "submits_per_sec": 1000, "p99_ms": 20}`, `figure "rate" is missing`},
		{"string figure", `{"clients": 8, "rate": "fast", "p99_ms": 20, "cycle": {"max_ms": 1}}`, `figure "rate" is a string, not a number`},
		{"flat where nested", `{"clients": 8, "rate": 1, "p99_ms": 20, "cycle": 3}`, `figure "cycle.max_ms": cycle is not an object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "absent.json")
			if tt.body != "" {
				path = writeBaseline(t, tt.body)
			}
			b, err := loadBaseline(path, baselineFigures)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) || b != nil {
				t.Fatalf("err %v; want a usage error containing %q", err, tt.want)
			}
		})
	}
}

// A baseline measured with other settings compares nothing: a usage error.
func TestBaselineSettingsMustMatch(t *testing.T) {
	b, err := loadBaseline(writeBaseline(t, `{"clients": 8, "rate": 1000, "p99_ms": 20, "cycle": {"max_ms": 50}}`), baselineFigures)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{b.sameSettings(baselineSample(64, 0, 0, 0)), b.check(&bytes.Buffer{}, baselineSample(64, 1000, 20, 50))} {
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "clients 8, this run has 64") {
			t.Fatalf("err %v", err)
		}
	}
	if err := b.sameSettings(baselineSample(8, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
}

// No --baseline: nothing is read and nothing compared.
func TestBaselineNone(t *testing.T) {
	b, err := loadBaseline("", baselineFigures)
	if err != nil || b != nil {
		t.Fatalf("%v %v", b, err)
	}
	if err := b.check(&bytes.Buffer{}, baselineSample(1, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
}

// Through the command line, a regression exits with ExitRegressed after the
// result is printed.
func TestBaselineExitCode(t *testing.T) {
	// A tiny run's own JSON, with a rate out of reach.
	first, errOut, code := run(t, "bench", "e2e", "--nodes", "2", "--jobs", "8", "--clients", "2", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(first), &fields); err != nil {
		t.Fatal(err)
	}
	fields["jobs_per_s"] = 1e12
	far, _ := json.Marshal(fields)
	base := writeBaseline(t, string(far))
	out, errOut, code := run(t, "bench", "e2e", "--nodes", "2", "--jobs", "8", "--clients", "2", "-o", "json", "--baseline", base)
	if code != ExitRegressed || !strings.Contains(out, `"jobs_per_s"`) || !strings.Contains(errOut, "regression: jobs_per_s ") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	_, errOut, code = run(t, "bench", "e2e", "--nodes", "2", "--jobs", "8", "--baseline", filepath.Join(t.TempDir(), "none.json"))
	if code != ExitUsage || !strings.Contains(errOut, "no such file") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Other settings fail before the bench runs: nothing on stdout.
	out, errOut, code = run(t, "bench", "e2e", "--nodes", "3", "--jobs", "8", "--clients", "2", "--baseline", base)
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "nodes 2, this run has 3") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// e2eSample is a bench e2e result with every figure --baseline compares.
func e2eSample() benchE2EResult {
	r := benchE2EResult{Nodes: 1000, GPUsPerNode: 8, Jobs: 8000, Clients: 16, Server: "external", JobsPerS: 6000,
		SubmitsPerS: 6200, LatencyP50Ms: 30, LatencyP99Ms: 70, CPUPerJobMs: 0.12, RSSPeakMiB: 110,
		CycleSplit: map[string]phaseFigures{}}
	for i, p := range server.CyclePhases {
		r.CycleSplit[p] = phaseFigures{Count: 12, MeanMs: float64(i + 1), P50Ms: float64(i + 1), P99Ms: float64(2 * (i + 1))}
	}
	return r
}

// bench e2e's --baseline: the same result is no regression; a figure 25 %
// worse is flagged, the cycle split's included; a faster one is not; a
// baseline of another server kind or without the split is refused.
func TestBaselineE2E(t *testing.T) {
	same := e2eSample()
	data, err := json.Marshal(same)
	if err != nil {
		t.Fatal(err)
	}
	path := writeBaseline(t, string(data))
	worse := func(change func(r *benchE2EResult)) benchE2EResult {
		r := e2eSample()
		change(&r)
		return r
	}
	phase := func(p string, change func(f *phaseFigures)) func(r *benchE2EResult) {
		return func(r *benchE2EResult) {
			f := r.CycleSplit[p]
			change(&f)
			r.CycleSplit[p] = f
		}
	}
	tests := []struct {
		name  string
		cur   benchE2EResult
		worse []string
	}{
		{"same", same, nil},
		{"within 20 %", worse(func(r *benchE2EResult) { r.JobsPerS, r.LatencyP99Ms = 4900, 83 }), nil},
		{"faster plan", worse(phase("plan", func(f *phaseFigures) { f.MeanMs, f.P99Ms = 0.5, 1 })), nil},
		{"rate down 25 %", worse(func(r *benchE2EResult) { r.JobsPerS = 4500 }), []string{"jobs_per_s"}},
		{"commit p99 up 25 %", worse(phase("commit", func(f *phaseFigures) { f.P99Ms *= 1.25 })), []string{"cycle_split.commit.p99_ms"}},
		{"watch slower", worse(phase("watch", func(f *phaseFigures) { f.MeanMs, f.P99Ms = f.MeanMs*2, f.P99Ms*2 })),
			[]string{"cycle_split.watch.mean_ms", "cycle_split.watch.p99_ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectRegressions(t, path, benchE2EFigures, tt.cur, tt.worse) })
	}
	inProcess := e2eSample()
	inProcess.Server = "in-process"
	b, err := loadBaseline(path, benchE2EFigures)
	if err != nil {
		t.Fatal(err)
	}
	var ue usageError
	if err := b.check(&bytes.Buffer{}, inProcess); !errors.As(err, &ue) || !strings.Contains(err.Error(), `server "external", this run has "in-process"`) {
		t.Fatalf("against another kind of server: %v", err)
	}
	var old map[string]any
	_ = json.Unmarshal(data, &old)
	delete(old, "cycle_split")
	noSplit, _ := json.Marshal(old)
	if _, err := loadBaseline(writeBaseline(t, string(noSplit)), benchE2EFigures); !errors.As(err, &ue) ||
		!strings.Contains(err.Error(), `figure "cycle_split.snapshot.mean_ms" is missing`) {
		t.Fatalf("a baseline without the cycle split: %v", err)
	}
}
