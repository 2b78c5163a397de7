package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listedPrice is the cost test's price table (testdata/cost-fleet.yaml),
// USD per node-hour, with each SKU's GPUs per node; the test prices from
// it, not from the server.
var listedPrice = map[string]struct {
	gpus                                        int
	onDemand, reserved1Y, reserved3Y, spotFloor float64
}{
	"east-h100-": {8, 36000, 21600, 14400, 7200},
	"east-t4-":   {4, 14400, 9000, 7200, 3600},
}

// costJob is one job of the cost test: its file, how it is billed, and
// the milli-GPU each instance holds. An instance (instance set) is leased
// with 'allot instance create' and has no file: it is a job record too,
// billed like one.
type costJob struct {
	name, doc, kind string
	milli           int64
	instance        []string // 'allot instance create' flags
	id              string
}

// attemptEvents is what 'allot job show -o json' says of a job's runs.
type attemptEvents struct {
	State    string `json:"state"`
	Attempts []struct {
		Nodes   []string  `json:"nodes"`
		Started time.Time `json:"started"`
		Ended   time.Time `json:"ended"`
	} `json:"attempt_history"`
}

// nodePrice returns the listed prices of node's SKU, its GPUs per node
// and the prefix of its nodes' names.
func nodePrice(t *testing.T, node string) (gpus int, rates map[string]float64, prefix string) {
	t.Helper()
	for prefix, p := range listedPrice {
		if strings.HasPrefix(node, prefix) {
			return p.gpus, map[string]float64{"on-demand": p.onDemand, "reserved-1y": p.reserved1Y,
				"reserved-3y": p.reserved3Y, "spot": p.spotFloor}, prefix
		}
	}
	t.Fatalf("node %s is not in the cost fleet", node)
	return 0, nil, ""
}

// TestCostReportMatchesEvents runs a tenant's on-demand, fractional, gang,
// spot and reserved jobs and a whole-node instance (created, run a few
// seconds, deleted) on a server with a price table, and checks that
// 'allot cost report' equals, to the cent, what the test adds up itself
// from each job's and the instance's attempts (nodes, start, end) at the
// listed prices. Then
// the tenant's budget fills: the report shows its 80 % and 100 % alerts,
// the server logs them, and new work outside the reservation is refused
// with BudgetExceeded while reserved work still passes. Bad queries get a
// 4xx naming the field.
func TestCostReportMatchesEvents(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	log := &syncBuffer{}
	data := filepath.Join(dir, "data")
	url, admin, stop, err := startServerArgs(data, log, "server", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "internal/e2e/testdata/cost-fleet.yaml"),
		"--tenants", filepath.Join(root, "internal/e2e/testdata/cost-tenants.yaml"), "--agents", "simulated")
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("server log (last 8 KiB):\n%s", tail(log.String(), 8<<10))
		}
	})
	team := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "team"))
	submitAt := func(token, doc string) (string, result) {
		t.Helper()
		r := allotAt(t, url, token, "job", "submit", "-f", writeFile(t, "job.yaml", doc), "-o", "json")
		var v struct{ ID string }
		_ = json.Unmarshal([]byte(r.out), &v)
		return v.ID, r
	}
	show := func(id string) attemptEvents {
		t.Helper()
		var ev attemptEvents
		if err := json.Unmarshal([]byte(allotMust(t, url, team, "job", "show", id, "-o", "json")), &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	waitFor := func(what string, within time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("never %s within %v", what, within)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	since := time.Now().UTC().Add(-time.Second)
	jobs := []*costJob{
		// First and alone, so the region is idle as it starts: spot at its floor.
		{name: "spot", kind: "spot", milli: 1000, doc: "name: spot\ntenant: team\npriority: spot\nresources: {gpus_per_instance: 1, gpu_models: [T4]}\n"},
		// A whole T4 node (4 GPUs), on-demand: spot holds one GPU of the
		// other, so one is free. Created before frac, which then shares
		// spot's node.
		{name: "vm", kind: "on-demand", milli: 4000, instance: []string{"--sku", "NC64-T4x4", "--region", "east", "--name", "vm"}},
		{name: "frac", kind: "on-demand", milli: 500, doc: "name: frac\ntenant: team\nresources: {gpu_milli: 500, gpu_models: [T4]}\n"},
		{name: "gang", kind: "on-demand", milli: 2000, doc: "name: gang\ntenant: team\nduration: 3s\nresources: {instance_count: 2, gpus_per_instance: 2, gpu_models: [H100]}\n"},
		{name: "res", kind: "reserved-3y", milli: 8000, doc: "name: res\ntenant: team\nduration: 2s\nresources: {gpus_per_instance: 8, gpu_models: [H100]}\nplacement: {reservation: team-h100}\n"},
	}
	byName := map[string]*costJob{}
	for i, j := range jobs {
		byName[j.name] = j
		if j.instance != nil {
			vm := decodeInstance(t, allotMust(t, url, team, append([]string{"instance", "create", "-o", "json"}, j.instance...)...))
			if j.id = vm.ID; len(vm.Nodes) != 1 || !strings.HasPrefix(vm.Nodes[0], "east-t4-") {
				t.Fatalf("instance %s: %+v, want placed on one T4 node", j.name, vm)
			}
			continue
		}
		var r result
		if j.id, r = submitAt(team, j.doc); r.code != 0 || j.id == "" {
			t.Fatalf("submit %s: exit %d\n%s%s", j.name, r.code, r.out, r.err)
		}
		if i == 0 {
			waitFor("spot running", 15*time.Second, func() bool { return len(show(j.id).Attempts) > 0 })
		}
	}
	waitFor("gang and res ended", 30*time.Second, func() bool {
		return show(byName["gang"].id).State == "Succeeded" && show(byName["res"].id).State == "Succeeded"
	})
	// The instance has run a few seconds: delete it, and its attempt ends.
	vm := byName["vm"]
	if got := decodeInstance(t, allotMust(t, url, team, "instance", "delete", vm.id, "-o", "json")); got.ID != vm.id {
		t.Fatalf("instance delete %s answered %+v", vm.id, got)
	}
	waitFor("the deleted instance's attempt ended", 15*time.Second, func() bool {
		a := show(vm.id).Attempts
		return len(a) == 1 && !a[0].Ended.IsZero()
	})
	until := time.Now().UTC()

	// The test's own bill: every attempt's time inside [since, until) on
	// each node, times the node's listed price for how the job runs, times
	// the instance's share of the node (all of it for the leased instance). Spot pays floor + (on_demand −
	// floor) × u² with u the region's GPUs held by attempts running when
	// it started (none: it started alone).
	events := map[string]attemptEvents{}
	for _, j := range jobs {
		events[j.id] = show(j.id)
	}
	const regionGPUs = 2*8 + 2*4
	want := map[string]float64{} // by job ID
	bySKU := map[string]float64{}
	total := 0.0
	for _, j := range jobs {
		ev := events[j.id]
		if len(ev.Attempts) != 1 {
			t.Fatalf("%s: %d attempts, want 1", j.name, len(ev.Attempts))
		}
		for _, a := range ev.Attempts {
			end := until
			if !a.Ended.IsZero() && a.Ended.Before(until) {
				end = a.Ended
			}
			from := a.Started
			if from.Before(since) {
				from = since
			}
			if !end.After(from) {
				continue
			}
			for _, node := range a.Nodes {
				gpus, rates, prefix := nodePrice(t, node)
				rate := rates[j.kind]
				if j.kind == "spot" {
					held := 0.0
					for _, o := range jobs {
						for _, oa := range events[o.id].Attempts {
							if oa.Started.Before(a.Started) && (oa.Ended.IsZero() || oa.Ended.After(a.Started)) {
								held += float64(o.milli*int64(len(oa.Nodes))) / 1000
							}
						}
					}
					u := held / regionGPUs
					rate = rates["spot"] + (rates["on-demand"]-rates["spot"])*u*u
				}
				usd := rate * float64(j.milli) / 1000 / float64(gpus) * end.Sub(from).Seconds() / 3600
				want[j.id] += usd
				bySKU[prefix] += usd
				total += usd
			}
		}
	}
	cents := func(x float64) string { return fmt.Sprintf("%.2f", math.Round(x*100)/100) }
	report := func(token string, args ...string) costReport {
		t.Helper()
		var rep costReport
		out := allotMust(t, url, token, append([]string{"cost", "report", "-o", "json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("cost report -o json: %v\n%s", err, out)
		}
		return rep
	}
	window := []string{"--since", since.Format(time.RFC3339Nano), "--until", until.Format(time.RFC3339Nano)}
	rep := report(team, append(window, "--tenant", "team")...)
	if len(rep.Rows) != 1 || rep.Rows[0].Tenant != "team" || cents(rep.Rows[0].USD) != cents(total) || cents(rep.USD) != cents(total) {
		t.Errorf("cost report: %+v, total %.4f; the events add up to %s", rep.Rows, rep.USD, cents(total))
	}
	t.Logf("team's work from %s to %s: report $%.2f, events $%s (instance %s: $%s)", since.Format(time.RFC3339), until.Format(time.RFC3339),
		rep.USD, cents(total), byName["vm"].id, cents(want[byName["vm"].id]))
	rep = report(admin, append(window, "--by", "job")...)
	if len(rep.Rows) != len(jobs) {
		t.Errorf("by job: %d rows, want %d: %+v", len(rep.Rows), len(jobs), rep.Rows)
	}
	for _, r := range rep.Rows {
		if cents(r.USD) != cents(want[r.Job]) {
			t.Errorf("job %s (%s): report $%.2f, events $%s", r.Job, r.Name, r.USD, cents(want[r.Job]))
		}
	}
	rep = report(admin, append(window, "--by", "sku")...)
	for _, r := range rep.Rows {
		prefix := map[string]string{"ND96-H100x8-IB": "east-h100-", "NC64-T4x4": "east-t4-"}[r.SKU]
		if cents(r.USD) != cents(bySKU[prefix]) {
			t.Errorf("SKU %s: report $%.2f, events $%s", r.SKU, r.USD, cents(bySKU[prefix]))
		}
	}
	if csv := allotMust(t, url, team, append([]string{"cost", "report", "--by", "region", "-o", "csv"}, window...)...); !strings.HasPrefix(csv, "REGION,ATTEMPTS,GPU-HOURS,CPU-HOURS,ON-DEMAND,RESERVED,SPOT,USD\neast,") {
		t.Errorf("cost report -o csv:\n%s", csv)
	}

	// The budget ($30, hard stop) fills, if the instance has not already
	// filled it, as spot and frac keep running.
	waitFor("team at 100 % of its budget", 40*time.Second, func() bool {
		b := report(team).Budgets
		return len(b) == 1 && b[0].Alert == 100
	})
	rep = report(team)
	if len(rep.BudgetEvents) != 2 || rep.BudgetEvents[0].Threshold != 80 || rep.BudgetEvents[1].Threshold != 100 {
		t.Errorf("budget events %+v, want 80 then 100", rep.BudgetEvents)
	}
	if !strings.Contains(log.String(), "budget alert") {
		t.Error("the server logged no budget alert")
	}
	if out := allotMust(t, url, team, "cost", "report"); !strings.Contains(out, "stopped (BudgetExceeded)") {
		t.Errorf("cost report does not say new work is stopped:\n%s", out)
	}
	before := allotMust(t, url, admin, "job", "list", "-o", "json")
	_, r := submitAt(team, "name: more\ntenant: team\nresources: {gpus_per_instance: 1, gpu_models: [T4]}\n")
	if r.code == 0 || !strings.Contains(r.err, "BudgetExceeded") || !strings.Contains(r.err, "tenant") {
		t.Errorf("a submit over budget: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if after := allotMust(t, url, admin, "job", "list", "-o", "json"); after != before {
		t.Error("a refused submit changed the job list")
	}
	if id, r := submitAt(team, byName["res"].doc); r.code != 0 || id == "" {
		t.Errorf("reserved work over budget was refused: exit %d\n%s", r.code, r.err)
	}

	// Bad queries: a 4xx naming the field.
	for _, c := range []struct {
		token string
		args  []string
		field string
	}{
		{team, []string{"--since", "tomorrow"}, "since"},
		{team, []string{"--until", "2020-01-01", "--since", "2021-01-01"}, "since"},
		{team, []string{"--tenant", "other"}, "tenant"},
		{team, []string{"--by", "rack"}, "--by"},
	} {
		r := allotAt(t, url, c.token, append([]string{"cost", "report"}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.err, c.field) {
			t.Errorf("cost report %v: exit %d, want an error naming %s\n%s", c.args, r.code, c.field, r.err)
		}
	}
	for q, field := range map[string]string{"by=rack": "by", "since=-5x": "since", "until=soon": "until"} {
		req, _ := http.NewRequest(http.MethodGet, url+"/v1/cost?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+team)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Field string }
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Field != field {
			t.Errorf("GET /v1/cost?%s: %d %s, want 400 naming %s", q, resp.StatusCode, body, field)
		}
	}
}

// costReport is the part of 'allot cost report -o json' the test reads.
type costReport struct {
	USD  float64 `json:"usd"`
	Rows []struct {
		Tenant string  `json:"tenant"`
		SKU    string  `json:"sku"`
		Job    string  `json:"job"`
		Name   string  `json:"name"`
		USD    float64 `json:"usd"`
	} `json:"rows"`
	Budgets []struct {
		Alert int `json:"alert"`
	} `json:"budgets"`
	BudgetEvents []struct {
		Threshold int `json:"threshold"`
	} `json:"budget_events"`
}
