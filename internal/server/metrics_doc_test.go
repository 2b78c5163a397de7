package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/api"
	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/latency"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// repoRoot is the repository, found from this file's place in it.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// family is one metric family as /metrics exposes it.
type family struct {
	typ     string
	labels  map[string]bool // label names seen on its samples, without le
	samples int
	values  map[string]float64 // by the sample's name and labels as exposed
}

// scrapeLoaded starts a server on the agent lab's fleet in agent mode,
// serves its API on a loopback port, gives it some of every kind of work
// (registered and unregistered nodes, a heartbeat, running and pending jobs,
// a reservation, an endpoint whose replicas report), and returns what GET
// /metrics exposes, by family.
func scrapeLoaded(t *testing.T) map[string]*family {
	t.Helper()
	ctx := context.Background()
	fleet, ten := servertest.Lab(t)
	ten.Tenants[0].Budget = model.Budget{USDPerMonth: 5000} // team: allot_tenant_cost_usd and _budget_usd
	clock := server.NewManualClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	srv, err := server.New(ctx, server.Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten,
		Clock: clock, Nodes: server.Agents{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, ln := api.NewServer(api.Config{Server: srv, Now: clock.Now, Logger: slog.New(slog.DiscardHandler)}, ln)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	// Two of the lab's three nodes register; one heartbeats.
	for _, n := range fleet.Nodes[:2] {
		gpus := make([]server.GPU, 8)
		for i := range gpus {
			gpus[i] = server.GPU{Index: i, Model: "H100", MemoryMiB: 81920}
		}
		if err := srv.RegisterNode(ctx, n.Name, gpus, "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Heartbeat(ctx, fleet.Nodes[0].Name); err != nil {
		t.Fatal(err)
	}
	team := server.Principal{Tenant: "team"}
	for _, doc := range []string{
		`{name: a, tenant: team, command: [sleep, "60"], resources: {gpus_per_instance: 8}}`,
		`{name: b, tenant: team, priority: spot, command: [sleep, "60"], resources: {gpus_per_instance: 4}}`,
		`{name: big, tenant: team, command: [sleep, "60"], resources: {instance_count: 3, gpus_per_instance: 8}}`,
	} {
		specs, err := spec.ParseJobs("test", []byte(doc), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Submit(ctx, team, specs[0]); err != nil {
			t.Fatalf("submit %s: %v", doc, err)
		}
	}
	if _, _, err := srv.CreateReservation(ctx, server.Principal{Admin: true}, model.Reservation{Name: "r1", Owner: "team",
		SKU: fleet.Nodes[2].SKU, Region: "lab", Count: 1}); err != nil {
		t.Fatalf("reserve: %v", err)
	}
	eps, err := spec.ParseEndpoints("test", []byte(`{name: chat, tenant: team, model: llama,
  resources: {gpu_milli: 500, gpu_models: [H100]}, min_replicas: 1, max_replicas: 2,
  slo: {p95_ms: 150}, throughput: {H100: 100}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateEndpoint(ctx, team, eps[0]); err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	for range 2 {
		if err := srv.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st, err := srv.Endpoint(ctx, team, "chat")
	if err != nil || len(st.Replicas) == 0 {
		t.Fatalf("endpoint chat: %+v, %v", st, err)
	}
	rep, err := srv.Job(ctx, team, st.Replicas[0].Job)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := srv.Authenticate(rep.Spec.Env[endpoint.EnvEndpointToken])
	if !ok {
		t.Fatal("the replica's endpoint token does not authenticate")
	}
	if err := srv.ReportEndpointMetrics(ctx, p, "chat", endpoint.Report{RequestsPerSec: 10, P95Ms: 40,
		Utilisation: 0.1, Replica: rep.ID + ".1"}); err != nil {
		t.Fatal(err)
	}
	// A gateway carried 20 requests of 30 ms to the replica 11 s ago, 4 of
	// them failed, and says now that it has 2 in flight: a minute's series,
	// out of the 10 s the autoscaler's sample reads.
	var lat latency.Histogram
	for range 20 {
		lat.Add(30 * time.Millisecond)
	}
	gw := func(r endpoint.GatewayReplicaReport) {
		r.Job, r.Routed, r.Ready = rep.ID, true, true
		if err := srv.ReportGateway(ctx, server.Principal{Admin: true}, endpoint.GatewayReport{Gateway: "gw-1",
			Endpoints: []endpoint.GatewayEndpointReport{{Endpoint: "chat", Replicas: []endpoint.GatewayReplicaReport{r}}}}); err != nil {
			t.Fatal(err)
		}
	}
	gw(endpoint.GatewayReplicaReport{Requests: 20, Errors: 4, Latency: lat, FirstByte: lat})
	clock.Advance(11 * time.Second)
	gw(endpoint.GatewayReplicaReport{InFlight: 2})
	if err := srv.ReconcileEndpoints(ctx); err != nil {
		t.Fatal(err)
	}

	base := "http://" + ln.Addr().String()
	if resp, err := http.Get(base + "/healthz"); err != nil { // a request for allot_http_requests_total to count
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	// Prometheus scrapes with a metrics-reader token: every series.
	reader, _, err := srv.CreateTokenFor(ctx, server.TokenOptions{Scope: server.ScopeMetrics, Name: "prometheus"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+reader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	fams, err := parseExposition(resp.Body)
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	return fams
}

// parseExposition reads Prometheus' text format: each family's TYPE, and
// the label names and number of its samples.
func parseExposition(r io.Reader) (map[string]*family, error) {
	fams := map[string]*family{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, ok := strings.Cut(f, " ")
			if !ok {
				return nil, fmt.Errorf("line %d: TYPE without a type", n)
			}
			fams[name] = &family{typ: typ, labels: map[string]bool{}, values: map[string]float64{}}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		f := fams[name]
		if f == nil {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suf); ok && fams[b] != nil && (fams[b].typ == "histogram" || fams[b].typ == "summary") {
					f = fams[b]
				}
			}
		}
		if f == nil {
			return nil, fmt.Errorf("line %d: sample %s of no family", n, name)
		}
		f.samples++
		if k, v, ok := strings.Cut(line, " "); ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				f.values[k] = x
			}
		}
		for _, l := range labels {
			if l != "le" || f.typ != "histogram" {
				f.labels[l] = true
			}
		}
	}
	return fams, sc.Err()
}

// parseSample returns a sample line's metric name and label names.
func parseSample(line string) (string, []string, error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, fmt.Errorf("no metric name in %q", line)
	}
	name, rest := line[:i], line[i:]
	var labels []string
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq <= 0 {
				return "", nil, fmt.Errorf("bad label in %q", line)
			}
			labels = append(labels, strings.TrimPrefix(rest[:eq], ","))
			rest = rest[eq+2:]
			for j := 0; ; j++ { // the quoted value, with \" and \\ escapes
				if j >= len(rest) {
					return "", nil, fmt.Errorf("unterminated label value in %q", line)
				}
				if rest[j] == '\\' {
					j++
					continue
				}
				if rest[j] == '"' {
					rest = strings.TrimPrefix(rest[j+1:], ",")
					break
				}
			}
		}
	}
	return name, labels, nil
}

// docSeries is one row of docs/metrics.md's table.
type docSeries struct {
	name, typ string
	labels    []string
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseMetricsDoc reads the table of docs/metrics.md whose header is
// "| name | type | labels | meaning |": the name in backquotes, a type,
// the labels as backquoted names separated by commas (or nothing), and a
// meaning. Errors name the line and the column at fault.
func parseMetricsDoc(r io.Reader) ([]docSeries, error) {
	var out []docSeries
	sc := bufio.NewScanner(r)
	in, seen := false, map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case !in:
			in = slices.Equal(cells, []string{"name", "type", "labels", "meaning"})
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		}
		if len(cells) != 4 {
			return nil, fmt.Errorf("docs/metrics.md line %d: want 4 columns, got %d", n, len(cells))
		}
		name, ok := strings.CutPrefix(cells[0], "`")
		name, ok2 := strings.CutSuffix(name, "`")
		if !ok || !ok2 || !metricName.MatchString(name) {
			return nil, fmt.Errorf("docs/metrics.md line %d: name: want a metric name in backquotes, got %q", n, cells[0])
		}
		if seen[name] {
			return nil, fmt.Errorf("docs/metrics.md line %d: name: %s is listed twice", n, name)
		}
		seen[name] = true
		if !slices.Contains([]string{"counter", "gauge", "histogram", "summary"}, cells[1]) {
			return nil, fmt.Errorf("docs/metrics.md line %d: type: want counter, gauge, histogram or summary, got %q", n, cells[1])
		}
		s := docSeries{name: name, typ: cells[1]}
		if cells[2] != "" {
			for _, l := range strings.Split(cells[2], ",") {
				l = strings.TrimSpace(l)
				v, ok := strings.CutPrefix(l, "`")
				v, ok2 := strings.CutSuffix(v, "`")
				if !ok || !ok2 || !labelName.MatchString(v) {
					return nil, fmt.Errorf("docs/metrics.md line %d: labels: want label names in backquotes, got %q", n, l)
				}
				s.labels = append(s.labels, v)
			}
		}
		if cells[3] == "" {
			return nil, fmt.Errorf("docs/metrics.md line %d: meaning: must not be empty", n)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("docs/metrics.md: no table with columns name, type, labels, meaning")
	}
	return out, nil
}

func readDoc(t *testing.T) []docSeries {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := parseMetricsDoc(f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestMetricsDocumented scrapes a working server: every series
// docs/metrics.md lists is exposed with its type and labels, and every
// allot_* series exposed is listed.
func TestMetricsDocumented(t *testing.T) {
	fams := scrapeLoaded(t)
	doc := readDoc(t)
	listed := map[string]bool{}
	for _, d := range doc {
		listed[d.name] = true
		f := fams[d.name]
		switch {
		case f == nil || f.samples == 0:
			t.Errorf("%s is documented but /metrics has no sample of it", d.name)
		case f.typ != d.typ:
			t.Errorf("%s is documented as a %s, /metrics says %s", d.name, d.typ, f.typ)
		default:
			got := slices.Sorted(func(yield func(string) bool) {
				for l := range f.labels {
					if !yield(l) {
						return
					}
				}
			})
			want := slices.Sorted(slices.Values(d.labels))
			if !slices.Equal(got, want) {
				t.Errorf("%s is documented with labels %v, /metrics has %v", d.name, want, got)
			}
		}
	}
	// The replica the gateway reported, by its series.
	replica := ""
	if f := fams["allot_endpoint_replica_gateway_in_flight"]; f != nil {
		for k := range f.values {
			_, rest, _ := strings.Cut(k, `replica="`)
			replica, _, _ = strings.Cut(rest, `"`)
		}
	}
	// What the work in scrapeLoaded shows: 8 + 4 + 0.5 GPUs held by the
	// lab partition of its 24 guaranteed, one node of three unregistered,
	// the 24-GPU gang waiting for capacity.
	for _, c := range []struct {
		family, sample string
		want           float64
	}{
		{"allot_gpus", `allot_gpus{cluster="lab-ib",gpu_model="H100",health="Ready",region="lab"}`, 16},
		{"allot_gpus", `allot_gpus{cluster="lab-ib",gpu_model="H100",health="NotReady",region="lab"}`, 8},
		{"allot_gpus_allocated", `allot_gpus_allocated{cluster="lab-ib",gpu_model="H100",partition="lab",region="lab"}`, 12.5},
		{"allot_gpus_guaranteed", `allot_gpus_guaranteed{gpu_model="H100",partition="lab",region="lab"}`, 24},
		{"allot_gpus_borrowed", `allot_gpus_borrowed{gpu_model="H100",partition="lab",region="lab"}`, 0},
		{"allot_gpus_reserved", `allot_gpus_reserved{gpu_model="H100",partition="lab",region="lab"}`, 8},
		{"allot_live_jobs", `allot_live_jobs{class="standard",state="Queued"}`, 1},
		{"allot_live_jobs", `allot_live_jobs{class="spot",state="Preparing"}`, 1},
		{"allot_queue_depth", `allot_queue_depth{class="standard",partition="lab",tenant="team"}`, 1},
		{"allot_pending_jobs", `allot_pending_jobs{reason="InsufficientCapacity"}`, 1},
		{"allot_binds_total", `allot_binds_total{class="standard"}`, 2},
		{"allot_queue_wait_seconds", `allot_queue_wait_seconds_count{class="standard",tenant="team"}`, 2},
		{"allot_node_health", `allot_node_health{cluster="lab-ib",health="NotReady",node="h100-03",region="lab"}`, 1},
		{"allot_node_health", `allot_node_health{cluster="lab-ib",health="Ready",node="h100-03",region="lab"}`, 0},
		{"allot_agent_heartbeats_total", `allot_agent_heartbeats_total`, 3},
		{"allot_endpoint_p95_latency_seconds", `allot_endpoint_p95_latency_seconds{endpoint="chat"}`, 0.04},
		{"allot_endpoint_slo_p95_seconds", `allot_endpoint_slo_p95_seconds{endpoint="chat"}`, 0.15},
		{"allot_endpoint_replicas", `allot_endpoint_replicas{endpoint="chat",kind="live"}`, 1},
		{"allot_endpoint_gateway_requests_per_second", `allot_endpoint_gateway_requests_per_second{endpoint="chat"}`, 20.0 / 11},
		{"allot_endpoint_gateway_in_flight", `allot_endpoint_gateway_in_flight{endpoint="chat"}`, 2},
		{"allot_endpoint_replica_gateway_errors_per_second", `allot_endpoint_replica_gateway_errors_per_second{endpoint="chat",replica="` + replica + `"}`, 4.0 / 11},
		{"allot_endpoint_replica_gateway_in_flight", `allot_endpoint_replica_gateway_in_flight{endpoint="chat",gateway="gw-1",replica="` + replica + `"}`, 2},
		{"allot_tenant_budget_usd", `allot_tenant_budget_usd{tenant="team"}`, 5000},
	} {
		if f := fams[c.family]; f == nil {
			continue // reported above
		} else if got, ok := f.values[c.sample]; !ok || got != c.want {
			t.Errorf("%s = %v (exposed: %v), want %v", c.sample, got, ok, c.want)
		}
	}

	var extra []string
	for name := range fams {
		if strings.HasPrefix(name, "allot_") && !listed[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("/metrics exposes series docs/metrics.md does not list: %v", extra)
	}
}

// TestMetricsChecksCatchDrift shows the checks above fail on what they
// guard against.
func TestMetricsChecksCatchDrift(t *testing.T) {
	fams := map[string]*family{"allot_jobs": {typ: "gauge"}, "allot_cycle_duration_seconds": {typ: "histogram"}}
	if u := unknownSeries(`rate(allot_cycle_duration_seconds_bucket[5m]) + allot_jobs`, fams); len(u) != 0 {
		t.Errorf("known series reported unknown: %v", u)
	}
	if u := unknownSeries(`allot_job > 0 or allot_jobs_bucket`, fams); !slices.Equal(u, []string{"allot_job", "allot_jobs_bucket"}) {
		t.Errorf("unknown series: got %v", u)
	}
	rule := "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: allot_renamed > 0\n    labels: {severity: warning}\n    annotations: {summary: s}\n"
	if _, err := checkRules([]byte(rule), fams); err == nil || !strings.Contains(err.Error(), "allot_renamed") {
		t.Errorf("a rule over an unexported series: err %v", err)
	}
	if _, err := checkRules([]byte(strings.Replace(rule, "allot_renamed", "allot_jobs", 1)+"    for: 5 minutes\n"), fams); err == nil ||
		!strings.Contains(err.Error(), "for") {
		t.Errorf("a bad for: err %v", err)
	}
	for _, c := range []struct{ doc, field string }{
		{"| name | type | labels | meaning |\n|---|---|---|---|\n| allot_x | gauge | | m |\n", "name"},
		{"| name | type | labels | meaning |\n|---|---|---|---|\n| `allot_x` | gauges | | m |\n", "type"},
		{"| name | type | labels | meaning |\n|---|---|---|---|\n| `allot_x` | gauge | tenant | m |\n", "labels"},
		{"| name | type | labels | meaning |\n|---|---|---|---|\n| `allot_x` | gauge | | |\n", "meaning"},
		{"| name | type | labels | meaning |\n|---|---|---|---|\n| `allot_x` | gauge | | m |\n| `allot_x` | gauge | | m |\n", "twice"},
		{"no table\n", "no table"},
	} {
		if _, err := parseMetricsDoc(strings.NewReader(c.doc)); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("doc %q: err %v, want one naming %s", c.doc, err, c.field)
		}
	}
	fs, err := parseExposition(strings.NewReader("# TYPE allot_x gauge\nallot_x{a=\"q\\\"},b=\",b=\"\"} 1\n"))
	if err != nil || fs["allot_x"].samples != 1 || !fs["allot_x"].labels["a"] || !fs["allot_x"].labels["b"] {
		t.Errorf("exposition with escapes: %+v, %v", fs["allot_x"], err)
	}
}

func FuzzMetricsDoc(f *testing.F) {
	f.Add("| name | type | labels | meaning |\n|---|---|---|---|\n| `allot_x` | gauge | `a`, `b` | m |\n")
	f.Add("| name | type | labels | meaning |\n| `a` |\n")
	f.Fuzz(func(t *testing.T, doc string) {
		out, err := parseMetricsDoc(strings.NewReader(doc))
		if err != nil {
			return
		}
		for _, s := range out {
			if !metricName.MatchString(s.name) {
				t.Fatalf("accepted name %q", s.name)
			}
			for _, l := range s.labels {
				if !labelName.MatchString(l) {
					t.Fatalf("accepted label %q", l)
				}
			}
		}
	})
}

func FuzzMetricsExposition(f *testing.F) {
	f.Add("# TYPE allot_x histogram\nallot_x_bucket{le=\"1\"} 2\nallot_x_sum 1\n")
	f.Add("allot_y{a=\"\\\"} 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		_, _ = parseExposition(strings.NewReader(text)) // must not panic
		_ = unknownSeries(text, map[string]*family{})
	})
}
