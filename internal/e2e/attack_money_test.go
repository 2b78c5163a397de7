package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attacks that hold GPUs without paying for them (issue 43, defects 1 to
// 3), and the test that the cost report adds up to what the attempts ran.

// stubborn is a job command that ignores SIGTERM (its children inherit
// the ignored signal) and runs until killed.
const stubborn = `["sh", "-c", 'trap "" TERM; echo up; while true; do sleep 0.1; done']`

// Attack 43.1: a job with a year of grace ignores SIGTERM. When it is
// preempted its processes would keep their GPUs for the whole grace,
// `cancel` would not stop them, and the job placed in its stead would be
// billed from its placement while it waited for them. The server's
// --max-grace bounds the grace at submit (jobs and instances), a second
// cancel or `cancel --force` kills at once, the victim is billed until
// its processes are gone and the newcomer from when it runs.
func TestAttackUnboundedGrace(t *testing.T) {
	lab := startLab(t, "--max-grace", "1m")
	year := writeFile(t, "year.yaml", `name: squatter
tenant: team
command: `+stubborn+`
resources: {gpus_per_instance: 8}
checkpoint: {grace: 8760h}
`)
	r := lab.run(t, lab.team, "job", "submit", "-f", year)
	if r.code != 2 || !strings.Contains(r.err, "checkpoint.grace") || !strings.Contains(r.err, "--max-grace") {
		t.Fatalf("submit with grace 8760h: exit %d\n%s%s\nwant exit 2 naming checkpoint.grace and --max-grace", r.code, r.out, r.err)
	}
	r = lab.run(t, lab.team, "instance", "create", "--sku", "ND96-H100x8-IB", "--region", "lab", "--priority", "spot", "--grace", "30m")
	if r.code != 2 || !strings.Contains(r.err, "grace") || !strings.Contains(r.err, "--max-grace") {
		t.Fatalf("instance with grace 30m over --max-grace 1m: exit %d\n%s%s\nwant exit 2 naming grace", r.code, r.out, r.err)
	}

	// The victim fills the lab and ignores SIGTERM within the longest
	// grace allowed; a standard job of another tenant preempts it.
	victim := lab.submit(t, `name: squatter
tenant: team
priority: spot
command: `+stubborn+`
resources: {instance_count: 3, gpus_per_instance: 8}
checkpoint: {grace: 1m}
`)
	defer lab.cancelAll(t, victim)
	lab.waitState(t, victim, "Running", 15*time.Second)
	rival := strings.TrimSpace(lab.must(t, lab.admin, "token", "create", "--tenant", "rival"))
	out := lab.must(t, rival, "job", "submit", "-f", writeFile(t, "new.yaml", `name: newcomer
tenant: rival
command: ["sleep", "600"]
resources: {gpus_per_instance: 8}
`), "-o", "json")
	var nj struct{ ID string }
	if err := json.Unmarshal([]byte(out), &nj); err != nil {
		t.Fatalf("submit newcomer: %v\n%s", err, out)
	}
	newcomer := func() labJob {
		var j labJob
		if err := json.Unmarshal([]byte(lab.must(t, rival, "job", "show", nj.ID, "-o", "json")), &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	defer lab.run(t, rival, "job", "cancel", "--force", nj.ID)
	v := lab.waitState(t, victim, "Preempted", 15*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	n := newcomer()
	for n.State != "Preparing" && time.Now().Before(deadline) {
		time.Sleep(150 * time.Millisecond)
		n = newcomer()
	}
	if n.State != "Preparing" {
		t.Fatalf("newcomer %s (%s), want Preparing while the victim's processes hold the GPUs", n.State, n.Detail)
	}
	// Billing while the victim's processes hold the GPUs: the victim's
	// attempt runs on, the newcomer's has not started.
	if a := v.AttemptHistory[0]; !a.Ended.IsZero() {
		t.Errorf("preempted victim's attempt ended %v while its processes run: its GPUs are unbilled from then", a.Ended)
	}
	if a := n.AttemptHistory[0]; !a.Started.IsZero() {
		t.Errorf("newcomer's attempt started %v while it waits in Preparing: billed for GPUs it cannot use", a.Started)
	}

	// One cancel gives the victim its grace; a second kills at once.
	lab.must(t, lab.team, "job", "cancel", victim)
	time.Sleep(time.Second)
	if j := lab.job(t, victim); j.State != "Preempted" || newcomer().State != "Preparing" {
		t.Fatalf("after one cancel the victim is %s (%s): want Preempted (Canceling) within its grace", j.State, j.Detail)
	}
	killAt := time.Now()
	lab.must(t, lab.team, "job", "cancel", victim)
	v = lab.waitState(t, victim, "Canceled", 5*time.Second)
	deadline = time.Now().Add(5 * time.Second)
	for n = newcomer(); n.State != "Running" && time.Now().Before(deadline); n = newcomer() {
		time.Sleep(100 * time.Millisecond)
	}
	if n.State != "Running" {
		t.Fatalf("newcomer %s (%s) 5s after the second cancel, want Running", n.State, n.Detail)
	}
	end, start := v.AttemptHistory[0].Ended, n.AttemptHistory[0].Started
	if end.Before(killAt.Add(-time.Second)) {
		t.Errorf("victim's attempt ended %v, before the kill (%v): its grace went unbilled", end, killAt)
	}
	if start.Before(end.Add(-time.Second)) {
		t.Errorf("newcomer's attempt started %v, before the victim's processes were gone (%v)", start, end)
	}

	// cancel --force kills a running job at once.
	id := lab.submit(t, `name: stubborn
tenant: team
command: `+stubborn+`
resources: {gpus_per_instance: 8}
checkpoint: {grace: 1m}
`)
	defer lab.cancelAll(t, id)
	lab.waitState(t, id, "Running", 15*time.Second)
	lab.waitLog(t, id, 1, "up", 5*time.Second)
	lab.must(t, lab.team, "job", "cancel", "--force", id)
	lab.waitState(t, id, "Canceled", 5*time.Second)
}

// moneyServer starts a server of its own on the money fleet and tenants
// (testdata/money-*.yaml) with simulated nodes, and returns its URL, its
// admin token and a token for each tenant.
func moneyServer(t *testing.T, extra ...string) (url, admin string, token func(tenant string) string) {
	t.Helper()
	needServer(t)
	dir := t.TempDir()
	log := &syncBuffer{}
	data := filepath.Join(dir, "data")
	args := append([]string{"server", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "internal/e2e/testdata/money-fleet.yaml"),
		"--tenants", filepath.Join(root, "internal/e2e/testdata/money-tenants.yaml"),
		"--agents", "simulated", "--tick", "200ms", "--rate-limit", "0"}, extra...)
	url, admin, stop, err := startServerArgs(data, log, args...)
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("server log (last 8 KiB):\n%s", tail(log.String(), 8<<10))
		}
	})
	tokens := map[string]string{}
	return url, admin, func(tenant string) string {
		if tokens[tenant] == "" {
			tokens[tenant] = strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", tenant))
		}
		return tokens[tenant]
	}
}

// moneyJob is what the money tests read of 'allot job show -o json'.
type moneyJob struct {
	ID, State, Reason, Detail string
	Attempts                  []struct {
		Nodes   []string  `json:"nodes"`
		Started time.Time `json:"started"`
		Ended   time.Time `json:"ended"`
		Reason  string    `json:"reason"`
		Detail  string    `json:"detail"`
		Pricing string    `json:"pricing"`
		Rates   []float64 `json:"usd_per_hour"`
	} `json:"attempt_history"`
}

func showMoneyJob(t *testing.T, url, token, id string) moneyJob {
	t.Helper()
	var j moneyJob
	if err := json.Unmarshal([]byte(allotMust(t, url, token, "job", "show", id, "-o", "json")), &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// submitAt submits the jobs of doc as token and returns their IDs.
func submitAt(t *testing.T, url, token, doc string) []string {
	t.Helper()
	out := allotMust(t, url, token, "job", "submit", "-f", writeFile(t, "job.yaml", doc), "-o", "json")
	var one struct{ ID string }
	if json.Unmarshal([]byte(out), &one) == nil && one.ID != "" {
		return []string{one.ID}
	}
	var many []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &many); err != nil || len(many) == 0 {
		var wrapped struct{ Jobs []struct{ ID string } }
		if err := json.Unmarshal([]byte(out), &wrapped); err != nil || len(wrapped.Jobs) == 0 {
			t.Fatalf("job submit printed %q", out)
		}
		many = wrapped.Jobs
	}
	ids := make([]string, len(many))
	for i, j := range many {
		ids[i] = j.ID
	}
	return ids
}

// within polls ok every 100 ms for up to d.
func within(d time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// Attack 43.2: CPU-only work (no GPU, all 96 vCPU) as an array of four
// takes every node of the region at $0/h, and the guaranteed partition's
// 8-GPU job then waits for ever. CPU and memory are now billed per
// vCPU-hour and GiB-hour, and work that needs a GPU node's GPUs evicts
// CPU-only work there (GPUWorkFirst).
func TestAttackCPUOnlyWork(t *testing.T) {
	url, _, token := moneyServer(t)
	miner := token("miner")
	ids := submitAt(t, url, miner, `name: mine
tenant: miner
array: "0-3"
command: ["sleep", "600"]
resources: {gpus_per_instance: 0, cpu: 96}
placement: {regions: [east]}
`)
	if len(ids) != 4 {
		t.Fatalf("the array made %d jobs, want 4", len(ids))
	}
	if !within(10*time.Second, func() bool {
		for _, id := range ids {
			if showMoneyJob(t, url, miner, id).State != "Running" {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the four CPU-only jobs did not all run within 10s")
	}
	// 96 vCPU at the default $0.0316 per vCPU-hour (docs/cost.md).
	for _, id := range ids {
		j := showMoneyJob(t, url, miner, id)
		if a := j.Attempts[0]; len(a.Rates) != 1 || math.Abs(a.Rates[0]-96*0.0316) > 1e-9 {
			t.Errorf("CPU-only job %s on %v accrues %v USD/h, want 96 vCPU × $0.0316 = $3.0336", id, a.Nodes, a.Rates)
		}
	}
	core := token("core-team")
	gpu := submitAt(t, url, core, `name: train
tenant: core-team
command: ["sleep", "600"]
resources: {gpus_per_instance: 8, gpu_models: [H100], cpu: 8}
`)[0]
	var j moneyJob
	if !within(10*time.Second, func() bool { j = showMoneyJob(t, url, core, gpu); return j.State == "Running" }) {
		t.Fatalf("the guaranteed 8-GPU job is %s (%s: %s) with CPU-only work on every node; want it Running", j.State, j.Reason, j.Detail)
	}
	evicted := 0
	for _, id := range ids {
		for _, a := range showMoneyJob(t, url, miner, id).Attempts {
			if a.Reason == "Preempted" && strings.Contains(a.Detail, "GPUWorkFirst") {
				evicted++
			}
		}
	}
	if evicted != 1 {
		t.Errorf("%d CPU-only jobs were evicted naming GPUWorkFirst, want 1", evicted)
	}
}

// Attack 43.3: a reservation that starts in 2999 keeps nodes from everyone
// today at no cost; a tenant past its hard-stopped budget reserves and
// runs inside; a reservation deleted inside its window stops its bill.
// Now a reservation starts at most --max-reservation-lead ahead, keeps
// nodes only --reservation-earmark before its start, is refused past a
// hard stop naming the budget, and is billed to its end when its owner
// deletes it inside the window.
func TestAttackReservationFreeRide(t *testing.T) {
	url, _, token := moneyServer(t)
	buyer := token("buyer")
	reserve := func(tok string, body map[string]any) (int, string) {
		code, b := send(t, url, "POST", "/v1/reservations", tok, body)
		return code, string(b)
	}
	far := map[string]any{"name": "far", "sku": "ND96-A100x8-IB", "region": "east", "count": 2,
		"start": "2999-01-01T00:00:00Z", "end": "2999-01-01T01:00:00Z"}
	if code, body := reserve(buyer, far); code != http.StatusBadRequest || !strings.Contains(body, `"start"`) ||
		!strings.Contains(body, "--max-reservation-lead") {
		t.Fatalf("a reservation for 2999: %d %s, want 400 naming start and --max-reservation-lead", code, body)
	}
	month := time.Now().UTC().Add(30 * 24 * time.Hour).Truncate(time.Second)
	ahead := map[string]any{"name": "ahead", "sku": "ND96-A100x8-IB", "region": "east", "count": 2,
		"start": month.Format(time.RFC3339), "end": month.Add(time.Hour).Format(time.RFC3339)}
	if code, body := reserve(buyer, ahead); code != http.StatusCreated {
		t.Fatalf("a reservation a month ahead: %d %s", code, body)
	}
	// A month ahead, its A100 nodes take other work meanwhile.
	miner := token("miner")
	wide := submitAt(t, url, miner, `name: wide
tenant: miner
command: ["sleep", "600"]
resources: {instance_count: 2, gpus_per_instance: 8, gpu_models: [A100]}
`)[0]
	var j moneyJob
	if !within(10*time.Second, func() bool { j = showMoneyJob(t, url, miner, wide); return j.State == "Running" }) {
		t.Errorf("a job on the A100 nodes of a reservation a month ahead is %s (%s: %s), want Running", j.State, j.Reason, j.Detail)
	}
	allotMust(t, url, miner, "job", "cancel", wide)

	// spender spends its $1 budget (hard stop) on an H100 node at $1/s.
	spender := token("spender")
	burn := submitAt(t, url, spender, `name: burn
tenant: spender
command: ["sleep", "600"]
resources: {gpus_per_instance: 8, gpu_models: [H100]}
`)[0]
	spent := func() bool {
		var rep struct {
			Budgets []struct{ Alert int } `json:"budgets"`
		}
		_ = json.Unmarshal([]byte(allotMust(t, url, spender, "cost", "report", "-o", "json")), &rep)
		return len(rep.Budgets) == 1 && rep.Budgets[0].Alert == 100
	}
	if !within(15*time.Second, spent) {
		t.Fatal("spender did not reach its budget within 15s")
	}
	allotMust(t, url, spender, "job", "cancel", burn)
	now := time.Now().UTC()
	inside := map[string]any{"name": "inside", "sku": "ND96-H100x8-IB", "region": "east", "count": 1,
		"start": now.Format(time.RFC3339), "end": now.Add(720 * time.Hour).Format(time.RFC3339)}
	if code, body := reserve(spender, inside); code != http.StatusPaymentRequired || !strings.Contains(body, "budget") {
		t.Fatalf("a reservation past a spent hard-stopped budget: %d %s, want 402 naming the budget", code, body)
	}

	// buyer reserves an H100 node from now for an hour and deletes it a
	// second later: the hour stays owed, accruing as the window passes.
	early := map[string]any{"name": "early", "sku": "ND96-H100x8-IB", "region": "east", "count": 1,
		"end": now.Add(time.Hour).Format(time.RFC3339)}
	code, body := reserve(buyer, early)
	if code != http.StatusCreated {
		t.Fatalf("reserve early: %d %s", code, body)
	}
	var made struct {
		Start time.Time `json:"start"`
	}
	_ = json.Unmarshal([]byte(body), &made)
	time.Sleep(time.Second)
	if code, body := send(t, url, "DELETE", "/v1/reservations/early", buyer, nil); code != http.StatusNoContent {
		t.Fatalf("delete early: %d %s", code, body)
	}
	deleted := time.Now()
	time.Sleep(time.Second)
	var rep struct {
		Reservations []struct {
			Name         string  `json:"name"`
			Bought       float64 `json:"bought_gpu_hours"`
			CommittedUSD float64 `json:"committed_usd"`
		} `json:"reservations"`
	}
	out := allotMust(t, url, buyer, "cost", "report", "-o", "json", "--since", made.Start.Add(-time.Minute).Format(time.RFC3339))
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Reservations {
		if r.Name == "early" {
			if least := 8 * deleted.Sub(made.Start).Hours(); r.Bought <= least {
				t.Errorf("reservation early bought %.4f GPU-hours in the report, want more than the %.4f up to its delete", r.Bought, least)
			}
			return
		}
	}
	t.Errorf("the cost report lists no reservation early after its owner deleted it inside its window:\n%s", out)
}

// labPrice is the price list of testdata/money-lab-fleet.yaml (USD per
// node-hour, per vCPU-hour and per GiB-hour): the cost test prices from
// it, not from the server.
var labPrice = struct {
	gpus                            int
	onDemand, reserved1Y, spotFloor float64
	vcpu, gib                       float64
}{8, 36000, 21600, 7200, 360, 36}

// TestCostReportMatchesAttempts runs, on real agents, a tenant's spot job
// preempted with a grace it uses, a job inside the tenant's reservation
// and a CPU-only job (8 vCPU, 16 GiB) that are canceled, and the
// reservation deleted inside its window; then checks that 'allot cost
// report' gives, to the cent, the USD, GPU-hours and CPU-hours the test
// adds up itself from the attempts' start and end (as 'job show' reports
// them) at the listed prices, and bills the reservation's window whole.
func TestCostReportMatchesAttempts(t *testing.T) {
	lab := startLab(t, "--fleet", filepath.Join(root, "internal/e2e/testdata/money-lab-fleet.yaml"),
		"--tenants", filepath.Join(root, "internal/e2e/testdata/money-lab-tenants.yaml"))
	since := time.Now().UTC().Add(-time.Second)
	// 1. Spot, alone: it starts in an idle region, at the spot floor.
	victim := lab.submit(t, `name: victim
tenant: team
priority: spot
command: ["sh", "-c", 'trap "sleep 1; exit 0" TERM; echo up; while true; do sleep 0.1; done']
resources: {gpus_per_instance: 8}
checkpoint: {grace: 1m}
`)
	defer lab.cancelAll(t, victim)
	lab.waitState(t, victim, "Running", 15*time.Second)
	// 2. A node reserved for an hour, and work in it; CPU-only work.
	code, body := send(t, lab.url, "POST", "/v1/reservations", lab.team, map[string]any{"name": "res", "sku": "LAB96-H100x8",
		"region": "lab", "count": 1, "end": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	if code != http.StatusCreated {
		t.Fatalf("reserve: %d %s", code, body)
	}
	var res struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	}
	_ = json.Unmarshal(body, &res)
	inres := lab.submit(t, `name: inres
tenant: team
command: ["sleep", "600"]
resources: {gpus_per_instance: 8}
placement: {reservation: res}
`)
	cpu := lab.submit(t, `name: cpu
tenant: team
command: ["sleep", "600"]
resources: {gpus_per_instance: 0, cpu: 8, memory: 16Gi}
`)
	defer lab.cancelAll(t, inres, cpu)
	lab.waitState(t, inres, "Running", 15*time.Second)
	lab.waitState(t, cpu, "Running", 15*time.Second)
	// 3. Another tenant's gang preempts the spot job, which takes a second
	// of its grace to stop.
	rival := strings.TrimSpace(lab.must(t, lab.admin, "token", "create", "--tenant", "rival"))
	var gang struct{ ID string }
	_ = json.Unmarshal([]byte(lab.must(t, rival, "job", "submit", "-f", writeFile(t, "gang.yaml", `name: gang
tenant: rival
command: ["sleep", "600"]
resources: {instance_count: 2, gpus_per_instance: 8}
`), "-o", "json")), &gang)
	defer lab.run(t, rival, "job", "cancel", "--force", gang.ID)
	lab.wait(t, victim, "preempted and stopped", 20*time.Second, func(j labJob) bool { return j.Preemptions > 0 && j.State == "Queued" })
	// 4. Cancel everything; delete the reservation inside its window.
	for _, id := range []string{victim, inres, cpu} {
		lab.must(t, lab.team, "job", "cancel", id)
	}
	for _, id := range []string{victim, inres, cpu} {
		lab.waitState(t, id, "Canceled", 15*time.Second)
	}
	if code, body := send(t, lab.url, "DELETE", "/v1/reservations/res", lab.team, nil); code != http.StatusNoContent {
		t.Fatalf("delete the reservation: %d %s", code, body)
	}
	until := time.Now().UTC()

	// The test's own bill, from each attempt's start and end.
	type attempt struct {
		Nodes       []string  `json:"nodes"`
		Started     time.Time `json:"started"`
		Ended       time.Time `json:"ended"`
		StopOrdered time.Time `json:"stop_ordered"`
	}
	jobs := []struct {
		id            string
		rate          float64 // USD per instance-hour
		gpus, vcpu    float64 // per instance
		wantAttempts  int
		billedToEnded bool
	}{
		{victim, labPrice.spotFloor, 8, 0, 1, true},
		{inres, labPrice.reserved1Y, 8, 0, 1, true},
		{cpu, 8*labPrice.vcpu + 16*labPrice.gib, 0, 8, 1, true},
	}
	var usd, gpuHours, cpuHours float64
	for _, j := range jobs {
		var v struct {
			Attempts []attempt `json:"attempt_history"`
		}
		if err := json.Unmarshal([]byte(lab.must(t, lab.team, "job", "show", j.id, "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Attempts) != j.wantAttempts {
			t.Fatalf("job %s: %d attempts, want %d: %+v", j.id, len(v.Attempts), j.wantAttempts, v.Attempts)
		}
		for _, a := range v.Attempts {
			if a.Started.IsZero() || a.Ended.IsZero() {
				t.Fatalf("job %s: attempt %+v has no start or end", j.id, a)
			}
			h := a.Ended.Sub(a.Started).Hours() * float64(len(a.Nodes))
			usd += j.rate * h
			gpuHours += j.gpus * h
			cpuHours += j.vcpu * h
		}
		if j.id == victim {
			// Billed through the grace it used: its processes took a
			// second after the stop order.
			if a := v.Attempts[0]; a.Ended.Sub(a.StopOrdered) < 900*time.Millisecond {
				t.Errorf("the preempted spot job's attempt ends %v after its stop order, want its second of grace billed", a.Ended.Sub(a.StopOrdered))
			}
		}
	}
	var rep struct {
		USD      float64 `json:"usd"`
		GPUHours float64 `json:"gpu_hours"`
		CPUHours float64 `json:"cpu_hours"`
		Rows     []struct {
			Tenant   string  `json:"tenant"`
			USD      float64 `json:"usd"`
			GPUHours float64 `json:"gpu_hours"`
			CPUHours float64 `json:"cpu_hours"`
		} `json:"rows"`
		Reservations []struct {
			Name         string  `json:"name"`
			Bought       float64 `json:"bought_gpu_hours"`
			CommittedUSD float64 `json:"committed_usd"`
		} `json:"reservations"`
	}
	out := lab.must(t, lab.team, "cost", "report", "--tenant", "team", "-o", "json",
		"--since", since.Format(time.RFC3339Nano), "--until", until.Format(time.RFC3339Nano))
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("cost report: %v\n%s", err, out)
	}
	cents := func(x float64) string { return fmt.Sprintf("%.2f", math.Round(x*100)/100) }
	if len(rep.Rows) != 1 || cents(rep.Rows[0].USD) != cents(usd) || math.Abs(rep.Rows[0].GPUHours-gpuHours) > 1e-4 ||
		math.Abs(rep.Rows[0].CPUHours-cpuHours) > 1e-4 {
		t.Errorf("cost report rows %+v; the attempts add up to $%s, %.4f GPU-hours, %.4f CPU-hours", rep.Rows, cents(usd), gpuHours, cpuHours)
	}
	if cpuHours == 0 || gpuHours == 0 {
		t.Errorf("the attempts add up to %.4f GPU-hours and %.4f CPU-hours; want both", gpuHours, cpuHours)
	}
	// The reservation, deleted a few seconds into its hour, is billed for
	// its window up to until (and on to its end as time passes).
	found := false
	for _, r := range rep.Reservations {
		if r.Name != "res" {
			continue
		}
		found = true
		bought := float64(labPrice.gpus) * until.Sub(res.Start).Hours()
		if math.Abs(r.Bought-bought) > 1e-4 || cents(r.CommittedUSD) != cents(bought*labPrice.reserved1Y/float64(labPrice.gpus)) {
			t.Errorf("reservation res: bought %.4f GPU-hours for $%.2f; its window to until is %.4f GPU-hours, $%s",
				r.Bought, r.CommittedUSD, bought, cents(bought*labPrice.reserved1Y/float64(labPrice.gpus)))
		}
	}
	if !found {
		t.Errorf("the cost report lists no reservation res after its owner deleted it inside its window:\n%s", out)
	}
	t.Logf("team from %s to %s: report $%.2f, %.4f GPU-h, %.4f CPU-h; attempts $%s, %.4f GPU-h, %.4f CPU-h",
		since.Format(time.RFC3339), until.Format(time.RFC3339), rep.USD, rep.GPUHours, rep.CPUHours, cents(usd), gpuHours, cpuHours)
}
