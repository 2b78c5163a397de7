package e2e

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
)

// reservationReport is the part of 'allot reservation show -o json' the
// tests read.
type reservationReport struct {
	Name  string              `json:"name"`
	Start *time.Time          `json:"start"`
	Use   wire.ReservationUse `json:"use"`
}

// windowJob is the part of 'allot job show -o json' the tests read.
type windowJob struct {
	ID, State, Reason, Detail string
	AttemptHistory            []struct {
		Started *time.Time `json:"started"`
		Ended   *time.Time `json:"ended"`
	} `json:"attempt_history"`
}

// TestReservationWindow drives reservations through the CLI against 'allot
// up' with the example fleet: before a reservation's window the nodes it
// will take refuse work with no bounded end and take work whose
// retry.timeout ends it before the start, and spot work; 'reservation
// show' reports GPU-hours bought and used that the test recomputes from the
// job's attempts; bad windows and counts are refused naming the field, and
// nothing is created.
func TestReservationWindow(t *testing.T) {
	needServer(t)
	url, admin := startUp(t, t.TempDir())
	globex := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "globex"))
	acme := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "acme"))
	show := func(token, id string) windowJob {
		t.Helper()
		var j windowJob
		if out := allotMust(t, url, token, "job", "show", id, "-o", "json"); json.Unmarshal([]byte(out), &j) != nil {
			t.Fatalf("job show %s -o json:\n%s", id, out)
		}
		return j
	}
	wait := func(token, id, what string, done func(windowJob) bool) windowJob {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			j := show(token, id)
			if done(j) {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s never %s; last %+v", id, what, j)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	submitJob := func(token, name, body string) string {
		t.Helper()
		out := allotMust(t, url, token, "job", "submit", "-f", writeFile(t, name+".yaml", body), "-o", "json")
		var v struct{ ID string }
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
			t.Fatalf("job submit -o json printed %q (%v)", out, err)
		}
		return v.ID
	}

	// 1. Before the start. Every T4 node of westeurope (2 × NC4-T4x1, 2 ×
	// NC64-T4x4) goes to acme in an hour, for an hour.
	for _, sku := range []string{"NC4-T4x1", "NC64-T4x4"} {
		allotMust(t, url, admin, "reservation", "create", "--sku", sku, "--region", "westeurope", "--count", "2",
			"--start", "+1h", "--end", "+2h", "--owner", "acme", "--name", "acme-eu-"+strings.ToLower(sku))
	}
	t4 := func(name, extra string) string {
		return "name: " + name + "\ntenant: globex\ncommand: [sleep, \"600\"]\nresources: {gpus_per_instance: 1, gpu_models: [T4]}\n" +
			"placement: {regions: [westeurope]}\n" + extra
	}
	unbounded := submitJob(globex, "unbounded", t4("unbounded", ""))
	estimated := submitJob(globex, "estimated", t4("estimated", "duration: 10m\n"))
	bounded := submitJob(globex, "bounded", t4("bounded", "retry: {timeout: 20m}\n"))
	tooLong := submitJob(globex, "too-long", t4("too-long", "retry: {timeout: 90m}\n"))
	spot := submitJob(globex, "spot", t4("spot", "priority: spot\n"))
	for _, id := range []string{bounded, spot} {
		wait(globex, id, "Running", func(j windowJob) bool { return j.State == "Running" })
	}
	// globex reads why without learning whose reservation it is
	// (docs/security.md); the administrator reads the names.
	for _, id := range []string{unbounded, estimated, tooLong} {
		j := show(globex, id)
		if j.State != "Queued" || j.Reason != "InsufficientCapacity" ||
			!strings.Contains(j.Detail, `"another tenant's reservation" of another tenant (2 × NC4-T4x1 in westeurope`) ||
			!strings.Contains(j.Detail, "retry.timeout") || strings.Contains(j.Detail, "acme") {
			t.Errorf("job %s is %s (%s: %s), want Queued, kept off the nodes reservations take in an hour", id, j.State, j.Reason, j.Detail)
		}
		if j := show(admin, id); !strings.Contains(j.Detail, `"acme-eu-nc4-t4x1" of acme`) {
			t.Errorf("job %s as the administrator reads %q, want the reservation named", id, j.Detail)
		}
	}
	if out := allotMust(t, url, globex, "job", "why", unbounded); !strings.Contains(out, "nodes kept for reservation") || strings.Contains(out, "acme") {
		t.Errorf("job why of the unbounded job does not say nodes are kept, or names their owner:\n%s", out)
	}
	// Ahead of its window the report says when it starts and that nothing
	// is bought yet.
	var ahead reservationReport
	if out := allotMust(t, url, acme, "reservation", "show", "acme-eu-nc4-t4x1", "-o", "json"); json.Unmarshal([]byte(out), &ahead) != nil {
		t.Fatalf("reservation show -o json:\n%s", out)
	}
	u := ahead.Use
	if u.Active || u.StartsInHours == nil || *u.StartsInHours <= 0.9 || *u.StartsInHours > 1 || u.BoughtGPUHours == nil || *u.BoughtGPUHours != 0 ||
		u.BoughtTotalGPUHours == nil || *u.BoughtTotalGPUHours != 2 || u.UsedPercent != nil || u.GPUs != 2 {
		t.Errorf("report ahead of the window: %+v", u)
	}

	// 2. Bought against used. One NC24-A100x1 of westeurope is acme's from
	// now for an hour; an acme job naming it runs 3 s ('allot up' runs the
	// command).
	allotMust(t, url, admin, "reservation", "create", "--sku", "NC24-A100x1", "--region", "westeurope", "--count", "1",
		"--start", "now", "--end", "+1h", "--owner", "acme", "--name", "acme-now")
	own := submitJob(acme, "own", "name: own\ntenant: acme\ncommand: [sleep, \"3\"]\n"+
		"resources: {gpus_per_instance: 1, gpu_models: [A100]}\nplacement: {reservation: acme-now}\n")
	j := wait(acme, own, "Succeeded", func(j windowJob) bool { return j.State == "Succeeded" })
	var rep reservationReport
	out := allotMust(t, url, acme, "reservation", "show", "acme-now", "-o", "json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Start == nil {
		t.Fatalf("reservation show -o json: %v\n%s", err, out)
	}
	u = rep.Use
	// Recomputed: 1 GPU × the attempt's time inside the window; bought is 1
	// node × 1 GPU × the window's time so far.
	var used float64
	for _, a := range j.AttemptHistory {
		from := *a.Started
		if from.Before(*rep.Start) {
			from = *rep.Start
		}
		used += a.Ended.Sub(from).Hours()
	}
	bought := u.AsOf.Sub(*rep.Start).Hours()
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	switch {
	case !u.Active || u.GPUs != 1 || u.Jobs != 1:
		t.Errorf("report %+v, want active, 1 GPU, 1 job", u)
	case used < 2.5/3600 || !near(u.UsedGPUHours, used):
		t.Errorf("used %.9f GPU-hours, recomputed from the attempts %.9f", u.UsedGPUHours, used)
	case u.BoughtGPUHours == nil || !near(*u.BoughtGPUHours, bought):
		t.Errorf("bought %v GPU-hours, recomputed %.9f", u.BoughtGPUHours, bought)
	case u.UsedPercent == nil || !near(*u.UsedPercent, 100*used/bought) || *u.UsedPercent <= 0 || *u.UsedPercent > 100:
		t.Errorf("used %v %%, recomputed %.6f", u.UsedPercent, 100*used/bought)
	case u.BoughtTotalGPUHours == nil || !near(*u.BoughtTotalGPUHours, 1):
		t.Errorf("bought over the window %v GPU-hours, want 1", u.BoughtTotalGPUHours)
	case u.Pricing != "reserved-1y" || u.USDPerGPUHour == nil || *u.USDPerGPUHour <= 0 || u.CommittedUSD == nil ||
		!near(*u.CommittedUSD, bought**u.USDPerGPUHour) || u.UsedUSD == nil || !near(*u.UsedUSD, used**u.USDPerGPUHour) ||
		u.IdleUSD == nil || !near(*u.IdleUSD, (bought-used)**u.USDPerGPUHour):
		t.Errorf("commitment: %s at %v per GPU-hour, committed %v, used %v, idle %v; want bought and used GPU-hours at the rate",
			u.Pricing, u.USDPerGPUHour, u.CommittedUSD, u.UsedUSD, u.IdleUSD)
	}
	table := allotMust(t, url, acme, "reservation", "show", "acme-now")
	for _, want := range []string{"Bought:", "GPU-hours so far", "1.00 over the window", "Used:", "by 1 of the owner's jobs", "State:", "active",
		"Commitment:", "per GPU-hour (reserved-1y)", "idle"} {
		if !strings.Contains(table, want) {
			t.Errorf("reservation show lacks %q:\n%s", want, table)
		}
	}
	if r := allotAt(t, url, globex, "reservation", "show", "acme-now"); r.code == 0 || !strings.Contains(r.err, "another tenant") {
		t.Errorf("globex shows acme's reservation: exit %d\n%s%s", r.code, r.out, r.err)
	}

	// 3. Bad input: refused naming the field, nothing created.
	before := allotMust(t, url, admin, "reservation", "list", "-o", "json")
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "bad-window", "owner": "acme", "sku": "NC4-T4x1", "region": "westus", "count": 1,
			"start": "2031-02-01T00:00:00Z", "end": "2031-01-01T00:00:00Z"}, "end"},
		{map[string]any{"name": "bad-count", "owner": "acme", "sku": "NC4-T4x1", "region": "westus", "count": -1}, "count"},
	} {
		code, body := send(t, url, "POST", "/v1/reservations", admin, tc.body)
		var e struct{ Code, Field, Message string }
		_ = json.Unmarshal(body, &e)
		if code != 400 || e.Field != tc.field || e.Message == "" {
			t.Errorf("POST %v: %d %s, want 400 naming %q", tc.body, code, body, tc.field)
		}
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--count", "-1", "--start", "now", "--end", "+1h"}, "--count -1"},
		{[]string{"--count", "1", "--start", "+2h", "--end", "+1h"}, "is not after --start"},
	} {
		r := allotAt(t, url, admin, append([]string{"reservation", "create", "--sku", "NC4-T4x1", "--region", "westus",
			"--owner", "acme", "--name", "bad-cli"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.err, tc.says) {
			t.Errorf("reservation create %v: exit %d, want 2 saying %q\n%s%s", tc.args, r.code, tc.says, r.out, r.err)
		}
	}
	if after := allotMust(t, url, admin, "reservation", "list", "-o", "json"); after != before {
		t.Errorf("bad input changed the reservations:\nbefore %s\nafter  %s", before, after)
	}
}
