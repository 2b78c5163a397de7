package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The checks of deploy/: the alert rules, their unit tests and the Grafana
// dashboard name only series the server exports (scrapeLoaded,
// metrics_doc_test.go).

// seriesRef matches the allot series an expression names.
var seriesRef = regexp.MustCompile(`\ballot_[a-zA-Z0-9_:]*`)

// unknownSeries returns the allot_* names in expr that are neither an
// exported family nor a histogram's _bucket, _sum or _count.
func unknownSeries(expr string, fams map[string]*family) []string {
	var out []string
	for _, name := range seriesRef.FindAllString(expr, -1) {
		if fams[name] != nil {
			continue
		}
		known := false
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && fams[b] != nil && fams[b].typ == "histogram" {
				known = true
			}
		}
		if !known {
			out = append(out, name)
		}
	}
	return out
}

// ruleFile is the part of a Prometheus rules file the checks read.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// checkRules checks a rules file: every rule is an alert with an
// expression, a severity and a summary, every `for` is a duration, and
// every series an expression names is exported. It returns the alert names.
func checkRules(data []byte, fams map[string]*family) ([]string, error) {
	var rf ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	var names []string
	var errs []error
	for gi, g := range rf.Groups {
		for ri, r := range g.Rules {
			at := fmt.Sprintf("groups[%d].rules[%d]", gi, ri)
			switch {
			case r.Alert == "" || r.Record != "":
				errs = append(errs, fmt.Errorf("%s.alert: every rule must be an alert", at))
			case slices.Contains(names, r.Alert):
				errs = append(errs, fmt.Errorf("%s.alert: %s is defined twice", at, r.Alert))
			case strings.TrimSpace(r.Expr) == "":
				errs = append(errs, fmt.Errorf("%s.expr: must not be empty", at))
			case r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical":
				errs = append(errs, fmt.Errorf("%s.labels.severity: want warning or critical, got %q", at, r.Labels["severity"]))
			case r.Annotations["summary"] == "":
				errs = append(errs, fmt.Errorf("%s.annotations.summary: must not be empty", at))
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					errs = append(errs, fmt.Errorf("%s.for: %w", at, err))
				}
			}
			if u := unknownSeries(r.Expr, fams); len(u) > 0 {
				errs = append(errs, fmt.Errorf("%s.expr (%s): names series the server does not export: %v", at, r.Alert, u))
			}
			names = append(names, r.Alert)
		}
	}
	return names, errors.Join(errs...)
}

// dashboardExprs returns every PromQL expression of a Grafana dashboard:
// the panels' targets' expr and the template variables' queries.
func dashboardExprs(data []byte) ([]string, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if len(d.Panels) == 0 {
		return nil, errors.New("dashboard: no panels")
	}
	var out []string
	for i, p := range d.Panels {
		if len(p.Targets) == 0 {
			return nil, fmt.Errorf("dashboard: panels[%d] (%s): no targets", i, p.Title)
		}
		for j, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				return nil, fmt.Errorf("dashboard: panels[%d].targets[%d].expr: must not be empty", i, j)
			}
			out = append(out, tg.Expr)
		}
	}
	for i, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			return nil, fmt.Errorf("dashboard: templating.list[%d].query: %w", i, err)
		}
		out = append(out, q.Query)
	}
	return out, nil
}

// TestMetricsRulesAndDashboard checks deploy/: the alert rules and the
// Grafana dashboard name only series the server exports, so neither can
// drift from the code.
func TestMetricsRulesAndDashboard(t *testing.T) {
	fams := scrapeLoaded(t)
	rules, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names, err := checkRules(rules, fams)
	if err != nil {
		t.Error(err)
	}
	for _, want := range []string{"AllotGPUAllocationHigh", "AllotPartitionBelowGuarantee", "AllotEndpointSLOBreach",
		"AllotNodeNotReady", "AllotCycleSlow"} {
		if !slices.Contains(names, want) {
			t.Errorf("rules.yaml has no alert %s", want)
		}
	}
	// The rules' unit tests (promtool test rules) feed series by name too.
	rt, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "prometheus", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if u := unknownSeries(string(rt), fams); len(u) > 0 {
		t.Errorf("rules_test.yaml feeds series the server does not export: %v", u)
	}
	board, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "grafana", "allot.json"))
	if err != nil {
		t.Fatal(err)
	}
	exprs, err := dashboardExprs(board)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exprs {
		if u := unknownSeries(e, fams); len(u) > 0 {
			t.Errorf("dashboard expression %q names series the server does not export: %v", e, u)
		}
	}
}

// The shipped scrape configuration reads /metrics with a metrics-reader
// token from a file: without one, the series of tenants are not served.
func TestPrometheusScrapeConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			Authorization struct {
				Type            string `yaml:"type"`
				CredentialsFile string `yaml:"credentials_file"`
			} `yaml:"authorization"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	if len(cfg.ScrapeConfigs) != 1 {
		t.Fatalf("prometheus.yml: %d scrape configs, want the one of allot", len(cfg.ScrapeConfigs))
	}
	sc := cfg.ScrapeConfigs[0]
	if sc.MetricsPath != "/metrics" || sc.Authorization.Type != "Bearer" || sc.Authorization.CredentialsFile == "" {
		t.Errorf("scrape config %+v: want /metrics with a Bearer token read from credentials_file", sc)
	}
	if !strings.Contains(string(raw), "token create --metrics") {
		t.Error("prometheus.yml does not say how to make its token (allot token create --metrics)")
	}
}
