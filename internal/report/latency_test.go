package report

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// minutes is a p95 series of n minutes around base ms, with minute nan
// without requests.
func minutes(n int, base float64, nan int) []float64 {
	s := make([]float64, n)
	for m := range s {
		s[m] = base * (1 + 0.5*math.Sin(float64(m)/30))
	}
	if nan >= 0 && nan < n {
		s[nan] = math.NaN()
	}
	return s
}

func TestWriteLatency(t *testing.T) {
	dir := t.TempDir()
	runs := []Run{
		{Name: "allot", SampleHours: 1, Utilisation: []float64{0.5, 0.6},
			Endpoints: []EndpointSeries{
				{Name: "chat", SLOMs: 500, Metric: "ttft", P95Ms: minutes(600, 300, 42)},
				{Name: "a/b c", SLOMs: 2000, Metric: "request", P95Ms: minutes(600, 1500, 0)},
			}},
		{Name: "fifo", SampleHours: 1,
			Endpoints: []EndpointSeries{
				{Name: "chat", SLOMs: 500, Metric: "ttft", P95Ms: minutes(90, 0, 89)}, // 0 ms: clamped to the floor
				{Name: "idle", SLOMs: 500, Metric: "ttft", P95Ms: []float64{}},
			}},
	}
	if err := Write(dir, "week", runs); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"latency-1-chat.png", "latency-1-a_b_c.png", "latency-2-chat.png", "latency-2-idle.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s has no PNG header", f)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s is not a PNG: %v", f, err)
		}
		if !strings.Contains(string(html), `src="`+f+`"`) {
			t.Errorf("index.html lacks %s", f)
		}
	}
	// The latency plots follow their run's tenant plot, under their names.
	page := string(html)
	for _, want := range []string{`src="tenants-1.png"`, "<h3>chat</h3>", `src="latency-1-chat.png"`,
		"<h3>a/b c</h3>", `src="latency-1-a_b_c.png"`, `src="tenants-2.png"`, `src="latency-2-chat.png"`,
		"<h3>idle</h3>", `src="latency-2-idle.png"`} {
		i := strings.Index(page, want)
		if i < 0 {
			t.Fatalf("index.html lacks %s in order", want)
		}
		page = page[i+len(want):]
	}
}

func TestWriteWithoutEndpoints(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, "replay", []Run{{Name: "fifo", SampleHours: 1}}); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(html), "latency") || strings.Contains(string(html), "<h3>") {
		t.Errorf("index.html of a run without endpoints shows latency:\n%s", html)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "latency-*")); len(m) > 0 {
		t.Errorf("latency plots without endpoints: %v", m)
	}
}

func TestLatencyFile(t *testing.T) {
	used := map[string]bool{}
	for _, tc := range []struct{ name, want string }{
		{"chat", "latency-3-chat.png"},
		{"a/b c", "latency-3-a_b_c.png"},
		{"a b/c", "latency-3-a_b_c-2.png"}, // same safe name: no overwrite
		{"llama-3.1_8B", "latency-3-llama-3.1_8B.png"},
		{"../etc", "latency-3-.._etc.png"},
		{"  déjà vu ", "latency-3-_d_j_vu_.png"},
		{"", "latency-3-endpoint.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := latencyFile(3, tc.name, used); got != tc.want {
				t.Errorf("latencyFile(3, %q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestUtilisationTitle(t *testing.T) {
	for _, tc := range []struct {
		runs   []Run
		hourly bool
	}{
		{[]Run{{SampleHours: 1}, {SampleHours: 1}}, true},
		{nil, true},
		{[]Run{{SampleHours: 1}, {SampleHours: 12}}, false},
	} {
		if got := utilisationTitle(tc.runs); strings.Contains(got, "hourly") != tc.hourly {
			t.Errorf("utilisationTitle(%v) = %q", tc.runs, got)
		}
	}
}
