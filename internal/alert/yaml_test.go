package alert

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestRulesMatchPrometheus ties each built-in rule to the alert of the same
// name in deploy/prometheus/rules.yaml: the same set of names, severities,
// `for` durations, compared numbers and range windows.
func TestRulesMatchPrometheus(t *testing.T) {
	text, err := os.ReadFile("../../deploy/prometheus/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Expr   string            `yaml:"expr"`
				For    string            `yaml:"for"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(text, &file); err != nil {
		t.Fatal(err)
	}
	byName := map[string]Rule{}
	for _, r := range Rules {
		byName[r.Name] = r
	}
	compared := regexp.MustCompile(`(?:[<>]=?|==|!=)\s*([0-9][0-9.]*)`)
	window := regexp.MustCompile(`\[([0-9]+[smh])\]`)
	quant := regexp.MustCompile(`histogram_quantile\(\s*([0-9.]+)`)
	var names []string
	for _, g := range file.Groups {
		for _, y := range g.Rules {
			names = append(names, y.Alert)
			r, ok := byName[y.Alert]
			if !ok {
				t.Errorf("rules.yaml alert %s has no built-in rule", y.Alert)
				continue
			}
			var wantFor time.Duration
			if y.For != "" {
				if wantFor, err = time.ParseDuration(y.For); err != nil {
					t.Fatalf("%s: for %q: %v", y.Alert, y.For, err)
				}
			}
			if r.For != wantFor {
				t.Errorf("%s: for %v, rules.yaml %v", r.Name, r.For, wantFor)
			}
			if r.Severity != y.Labels["severity"] {
				t.Errorf("%s: severity %q, rules.yaml %q", r.Name, r.Severity, y.Labels["severity"])
			}
			var nums []float64
			for _, m := range compared.FindAllStringSubmatch(y.Expr, -1) {
				f, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					t.Fatalf("%s: %q: %v", y.Alert, m[0], err)
				}
				nums = append(nums, f)
			}
			if !slices.Equal(nums, r.Thresholds) {
				t.Errorf("%s: thresholds %v, rules.yaml compares with %v", r.Name, r.Thresholds, nums)
			}
			var wantWindow time.Duration
			if m := window.FindStringSubmatch(y.Expr); m != nil {
				wantWindow, _ = time.ParseDuration(m[1])
			}
			if r.Window != wantWindow {
				t.Errorf("%s: window %v, rules.yaml %v", r.Name, r.Window, wantWindow)
			}
			if m := quant.FindStringSubmatch(y.Expr); m != nil {
				if q, _ := strconv.ParseFloat(m[1], 64); math.Abs(q-cycleQuantile) > 1e-12 {
					t.Errorf("%s: quantile %v, rules.yaml %v", r.Name, cycleQuantile, q)
				}
			}
		}
	}
	for _, r := range Rules {
		if !slices.Contains(names, r.Name) {
			t.Errorf("built-in rule %s is not in rules.yaml", r.Name)
		}
	}
}
