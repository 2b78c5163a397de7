package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// instanceView is the part of the API's Instance the tests look at.
type instanceView struct {
	ID               string     `json:"id"`
	Tenant           string     `json:"tenant"`
	SKU              string     `json:"sku"`
	Region           string     `json:"region"`
	Count            int        `json:"count"`
	Priority         string     `json:"priority"`
	State            string     `json:"state"`
	Reason           string     `json:"reason"`
	Detail           string     `json:"detail"`
	Nodes            []string   `json:"nodes"`
	Evictions        int        `json:"evictions"`
	EvictionDeadline *time.Time `json:"eviction_deadline"`
}

func decodeInstance(t *testing.T, out string) instanceView {
	t.Helper()
	var v instanceView
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
		t.Fatalf("instance JSON: %v\n%s", err, out)
	}
	return v
}

// instanceIDs lists the instances token sees, ended ones included.
func instanceIDs(t *testing.T, url, token string) []string {
	t.Helper()
	var v struct{ Instances []instanceView }
	out := allotMust(t, url, token, "instance", "list", "--all", "-o", "json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("instance list: %v\n%s", err, out)
	}
	ids := make([]string, len(v.Instances))
	for i, x := range v.Instances {
		ids[i] = x.ID
	}
	return ids
}

// TestInstanceCreateAnswers drives 'allot instance create' against 'allot
// up' with the example fleet: a placed instance, AllocationFailed on a
// full region naming where the SKU is free now, SkuNotAvailable, both
// kinds of QuotaExceeded, and bad input refused with the field named and
// nothing created.
func TestInstanceCreateAnswers(t *testing.T) {
	needServer(t)
	url, admin := startUp(t, t.TempDir())
	copilot := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "copilot"))
	acme := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "acme"))

	// eastus has two NC24-A100x1 nodes: both leased, the region is full.
	got := decodeInstance(t, allotMust(t, url, copilot, "instance", "create", "--sku", "NC24-A100x1", "--region", "eastus",
		"--count", "2", "-o", "json"))
	if got.State != "Running" && got.State != "Preparing" || len(got.Nodes) != 2 || got.SKU != "NC24-A100x1" {
		t.Fatalf("first instance: %+v, want placed on 2 nodes", got)
	}
	for _, n := range got.Nodes {
		if !strings.HasPrefix(n, "eastus-a100x1-") {
			t.Errorf("instance of NC24-A100x1 placed on %s, not a node of that SKU", n)
		}
	}
	before := instanceIDs(t, url, copilot)

	r := allotAt(t, url, copilot, "instance", "create", "--sku", "NC24-A100x1", "--region", "eastus")
	if r.code != 2 || !strings.Contains(r.err, "AllocationFailed") {
		t.Fatalf("instance on a full region: exit %d\n%s%s\nwant AllocationFailed (exit 2)", r.code, r.out, r.err)
	}
	// westus and westeurope each have two idle NC24-A100x1 nodes.
	if !strings.Contains(r.err, "soonest: free now in westus") || !strings.Contains(r.err, "free now in westeurope") {
		t.Errorf("AllocationFailed does not name the regions free now:\n%s", r.err)
	}
	if after := instanceIDs(t, url, copilot); len(after) != len(before)+1 {
		t.Errorf("instances %v after AllocationFailed, want the refused one recorded (ended) beside %v", after, before)
	}
	if out := allotMust(t, url, copilot, "instance", "list", "-o", "json"); strings.Count(out, `"id"`) != 1 {
		t.Errorf("instance list shows more than the one live instance after AllocationFailed:\n%s", out)
	}
	// The refused instance holds nothing and is not queued: the same
	// request in another region is placed at once.
	west := decodeInstance(t, allotMust(t, url, copilot, "instance", "create", "--sku", "NC24-A100x1", "--region", "westus", "-o", "json"))
	if west.State != "Running" && west.State != "Preparing" {
		t.Errorf("instance in westus: %+v, want placed", west)
	}

	refusals := []struct {
		name, code, field string
		token             string
		args              []string
	}{
		{"unknown SKU", "SkuNotAvailable", "field sku", copilot, []string{"--sku", "ND96-H200x8", "--region", "eastus"}},
		{"SKU not sold there", "SkuNotAvailable", "field region", copilot, []string{"--sku", "ND96-A100x8-IB", "--region", "eastus"}},
		{"over quota at once", "QuotaExceeded", "", acme, []string{"--sku", "ND96-H100x8-IB", "--region", "eastus", "--count", "3"}},
		{"zero count", "InvalidSpec", "field count", copilot, []string{"--sku", "NC24-A100x1", "--region", "westus", "--count", "0"}},
		{"negative count", "InvalidSpec", "field count", copilot, []string{"--sku", "NC24-A100x1", "--region", "westus", "--count", "-2"}},
		{"unknown region", "InvalidSpec", "field region", copilot, []string{"--sku", "NC24-A100x1", "--region", "mars"}},
		{"negative grace", "InvalidSpec", "field grace", copilot, []string{"--sku", "NC24-A100x1", "--region", "westus", "--grace", "-1s"}},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			before := instanceIDs(t, url, tc.token)
			r := allotAt(t, url, tc.token, append([]string{"instance", "create"}, tc.args...)...)
			if r.code != 2 || !strings.Contains(r.err, tc.code) || !strings.Contains(r.err, tc.field) {
				t.Fatalf("exit %d\n%s%s\nwant %s naming %q (exit 2)", r.code, r.out, r.err, tc.code, tc.field)
			}
			if after := instanceIDs(t, url, tc.token); len(after) != len(before) {
				t.Errorf("refused request created an instance: %v, was %v", after, before)
			}
		})
	}

	// The API answers bad bodies with 400 naming the field.
	for _, body := range []map[string]any{
		{"sku": "NC24-A100x1", "region": "westus", "count": 0},
		{"sku": "NC24-A100x1", "region": "westus", "count": -1},
		{"sku": "NC24-A100x1", "region": "nowhere"},
		{"sku": "NC24-A100x1", "region": "westus", "priority": "gold"},
		{"sku": "NC24-A100x1", "region": "westus", "grace": "soon"},
		{"sku": "NC24-A100x1", "region": "westus", "colour": "red"},
	} {
		code, b := send(t, url, "POST", "/v1/instances", copilot, body)
		var e struct{ Code, Field string }
		_ = json.Unmarshal(b, &e)
		if code != 400 || e.Field == "" {
			t.Errorf("POST /v1/instances %v: %d %s, want 400 naming the field", body, code, b)
		}
	}

	// Within acme's quota of 16 ND GPUs in eastus two H100 nodes fit; a
	// third is over the quota as it stands.
	two := decodeInstance(t, allotMust(t, url, acme, "instance", "create", "--sku", "ND96-H100x8-IB", "--region", "eastus",
		"--count", "2", "-o", "json"))
	if two.State != "Running" && two.State != "Preparing" {
		t.Fatalf("acme's two H100 nodes: %+v, want placed", two)
	}
	r = allotAt(t, url, acme, "instance", "create", "--sku", "ND96-H100x8-IB", "--region", "eastus")
	if r.code != 2 || !strings.Contains(r.err, "QuotaExceeded") || !strings.Contains(r.err, "16 GPUs of 16 GPUs used") {
		t.Errorf("a third H100 node for acme: exit %d\n%s%s\nwant QuotaExceeded with the quota's use", r.code, r.out, r.err)
	}

	// Deleting frees the nodes: the region that was full takes a new one.
	allotMust(t, url, copilot, "instance", "delete", got.ID)
	if r := allotAt(t, url, copilot, "instance", "delete", got.ID); r.code != 2 || !strings.Contains(r.err, "Conflict") {
		t.Errorf("deleting twice: exit %d %s, want Conflict", r.code, r.err)
	}
	again := decodeInstance(t, allotMust(t, url, copilot, "instance", "create", "--sku", "NC24-A100x1", "--region", "eastus", "-o", "json"))
	if again.State != "Running" && again.State != "Preparing" {
		t.Errorf("instance after the delete: %+v, want placed", again)
	}
	for _, id := range []string{west.ID, again.ID} {
		allotMust(t, url, copilot, "instance", "delete", id)
	}
	allotMust(t, url, acme, "instance", "delete", two.ID)
}

// TestInstanceSpotEvictedByReservation: a spot instance of tenant rival
// runs on the lab's nodes; a reservation of all three for tenant team
// opens a few seconds later, and team's job waits for it. When the window
// opens the instance gets its eviction notice (Preempted, with the
// deadline its grace sets), keeps its node until the deadline, is then
// evicted (Queued, waiting for capacity), and team's job runs.
func TestInstanceSpotEvictedByReservation(t *testing.T) {
	lab := startLab(t)
	rival := strings.TrimSpace(lab.must(t, lab.admin, "token", "create", "--tenant", "rival"))
	const grace = 3 * time.Second

	inst := decodeInstance(t, lab.must(t, rival, "instance", "create", "--sku", "ND96-H100x8-IB", "--region", "lab",
		"--priority", "spot", "--grace", grace.String(), "-o", "json"))
	if inst.Priority != "spot" || len(inst.Nodes) != 1 {
		t.Fatalf("spot instance: %+v, want placed on one node", inst)
	}
	show := func() instanceView {
		return decodeInstance(t, lab.must(t, rival, "instance", "show", inst.ID, "-o", "json"))
	}
	waitInstance := func(what string, limit time.Duration, done func(instanceView) bool) instanceView {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			v := show()
			if done(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %s not %s within %s: %+v", inst.ID, what, limit, v)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitInstance("Running", 20*time.Second, func(v instanceView) bool { return v.State == "Running" })

	lab.must(t, lab.admin, "reservation", "create", "--sku", "ND96-H100x8-IB", "--region", "lab", "--count", "3",
		"--start", "+4s", "--end", "+1h", "--owner", "team", "--name", "lab-window")
	job := lab.submit(t, `name: owner-work
tenant: team
command: ["sleep", "600"]
resources: {instance_count: 3, gpus_per_instance: 8}
placement: {reservation: lab-window}
`)
	t.Cleanup(func() { lab.cancelAll(t, job) })
	if j := lab.job(t, job); j.State != "Queued" {
		t.Fatalf("owner's job before the window: %s %s, want Queued", j.State, j.Reason)
	}
	if v := show(); v.State != "Running" {
		t.Fatalf("spot instance before the window opens: %+v, want Running", v)
	}

	notice := waitInstance("given its eviction notice", 20*time.Second, func(v instanceView) bool { return v.State == "Preempted" })
	if notice.EvictionDeadline == nil || !strings.Contains(notice.Detail, "eviction notice") ||
		!strings.Contains(notice.Detail, notice.EvictionDeadline.UTC().Format(time.RFC3339)) {
		t.Fatalf("instance under notice: %+v, want the deadline in eviction_deadline and the detail", notice)
	}
	noticed := time.Now()
	if j := lab.job(t, job); j.State == "Running" {
		t.Errorf("owner's job Running while the spot instance still has its notice (deadline %s)", notice.EvictionDeadline)
	}

	evicted := waitInstance("evicted", grace+15*time.Second, func(v instanceView) bool { return v.State == "Queued" })
	if time.Since(noticed) < grace-time.Second {
		t.Errorf("instance stopped %s after the notice was seen; its grace is %s", time.Since(noticed), grace)
	}
	if evicted.Evictions != 1 || len(evicted.Nodes) != 0 {
		t.Errorf("evicted instance: %+v, want 1 eviction and no nodes", evicted)
	}
	lab.waitState(t, job, "Running", 20*time.Second)
	lab.must(t, rival, "instance", "delete", inst.ID)
}
