package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	runs := []Run{
		{Name: "fifo, static", Utilisation: []float64{0.1, 0.5, 0.9, 0.4}, SampleHours: 12,
			QueueDelays: []float64{0, 0, 10, 3600, 86400},
			Tenants:     []Tenant{{"a", 64, 30}, {"b", 16, 20}},
			Figures:     [][2]string{{"avg_jct", "1234"}}},
		{Name: "allot, borrow", SampleHours: 1}, // empty series must not break the page
	}
	if err := Write(dir, "Philly <replay>", runs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"utilisation.png", "queueing_cdf.png", "tenants-1.png", "tenants-2.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s is not a PNG: %v", f, err)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`src="utilisation.png"`, `src="queueing_cdf.png"`, `src="tenants-1.png"`,
		`src="tenants-2.png"`, "Philly &lt;replay&gt;", "<th>avg_jct</th><td>1234</td>"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
}
