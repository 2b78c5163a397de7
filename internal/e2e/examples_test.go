package e2e

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// exampleOutcome is what a job of examples/jobs must come to under
// 'allot up' with nothing else submitted: a state, and for a job that is
// meant to wait, the reason it waits with. (The comments in the files tell
// the story of 'allot plan', where examples/running holds the fleet too:
// there train-llama preempts, eu-train waits for protected spot work and
// research-spot meets a rack at its power cap; on the empty fleet of
// 'allot up' the three simply run.)
type exampleOutcome struct {
	states []string // any of these
	reason string   // for Queued: the reason it must give
}

var exampleOutcomes = map[string]exampleOutcome{
	"acme-2027":      {states: []string{"Queued"}, reason: "ReservationNotActive"},
	"copilot-chat-0": {states: []string{"Running"}},
	"copilot-chat-1": {states: []string{"Running"}},
	"copilot-chat-2": {states: []string{"Running"}},
	"eu-prep":        {states: []string{"Running", "Succeeded"}},
	"eu-batch":       {states: []string{"Queued"}, reason: "InsufficientCapacity"},
	"eu-train":       {states: []string{"Running", "Succeeded"}},
	"pipe-prepare":   {states: []string{"Succeeded"}},            // 3 s of work, then pipe-train may start
	"pipe-train":     {states: []string{"Running", "Succeeded"}}, // after: [pipe-prepare]
	"research-spot":  {states: []string{"Running", "Succeeded"}},
	"train-llama":    {states: []string{"Running", "Succeeded"}},
	"westus-big":     {states: []string{"Queued"}, reason: "BorrowLimitReached"},
}

// TestExampleJobsUnderUp submits the whole of examples/jobs to 'allot up'
// as the admin would and checks that every job comes to its outcome in
// exampleOutcomes: the ones that run are started by up's agents (their
// commands are allot's demo workloads, so they really run), the others wait
// with the reason their file promises. A job file added without an entry
// fails the test, as does an entry without a job.
func TestExampleJobsUnderUp(t *testing.T) {
	needServer(t)
	url, admin := startUp(t, t.TempDir())
	allotMust(t, url, admin, "job", "submit", "-f", filepath.Join(root, "examples/jobs"))
	last := awaitExampleOutcomes(t, url, admin, 60*time.Second)
	checkExampleOutcomes(t, last)
	// eu-batch waits for eu-prep, whose spec says it runs 15 minutes:
	// its estimated start is known.
	for _, j := range last {
		if j.Name != "eu-batch" {
			continue
		}
		var why struct {
			EstimatedStart *time.Time `json:"estimated_start"`
			EstimateHow    string     `json:"estimate_how"`
		}
		if err := json.Unmarshal([]byte(allotMust(t, url, admin, "job", "why", j.ID, "-o", "json")), &why); err != nil {
			t.Fatal(err)
		}
		if why.EstimatedStart == nil || time.Until(*why.EstimatedStart) > 16*time.Minute {
			t.Errorf("eu-batch: estimated start %v (%s), want within eu-prep's 15 minutes", why.EstimatedStart, why.EstimateHow)
		}
	}
	allotMust(t, url, admin, "job", "cancel", "--state", "Queued,Running")
}

func outcomeHolds(want exampleOutcome, state, reason string) bool {
	for _, s := range want.states {
		if s == state && (s != "Queued" || reason == want.reason) {
			return true
		}
	}
	return false
}

// awaitExampleOutcomes polls the server's jobs until every job of
// examples/jobs has its outcome in exampleOutcomes or wait passes, and
// returns the last list, by name. A job exampleOutcomes does not list
// fails the test at once.
func awaitExampleOutcomes(t *testing.T, url, admin string, wait time.Duration) []job {
	t.Helper()
	var last []job
	deadline := time.Now().Add(wait)
	for {
		var page struct{ Jobs []job }
		if err := json.Unmarshal([]byte(allotMust(t, url, admin, "job", "list", "--all", "-o", "json")), &page); err != nil {
			t.Fatalf("job list -o json: %v", err)
		}
		last = page.Jobs
		settled := len(last) == len(exampleOutcomes)
		for _, j := range last {
			want, ok := exampleOutcomes[j.Name]
			if !ok {
				t.Fatalf("examples/jobs holds %q, which exampleOutcomes does not list", j.Name)
			}
			if !outcomeHolds(want, j.State, j.Reason) {
				settled = false
			}
		}
		if settled || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	sort.Slice(last, func(a, b int) bool { return last[a].Name < last[b].Name })
	return last
}

// checkExampleOutcomes logs each job of last and fails the test for one
// off its outcome, one that waits without a detail, and an entry of
// exampleOutcomes that no job answers.
func checkExampleOutcomes(t *testing.T, last []job) {
	t.Helper()
	seen := map[string]bool{}
	for _, j := range last {
		seen[j.Name] = true
		want := exampleOutcomes[j.Name]
		t.Logf("%-15s %-9s %s %s", j.Name, j.State, j.Reason, j.Detail)
		if !outcomeHolds(want, j.State, j.Reason) {
			t.Errorf("%s is %s (%s: %s); want %s %s", j.Name, j.State, j.Reason, j.Detail, strings.Join(want.states, " or "), want.reason)
		}
		if j.State == "Queued" && j.Detail == "" {
			t.Errorf("%s waits without a detail", j.Name)
		}
	}
	for name := range exampleOutcomes {
		if !seen[name] {
			t.Errorf("exampleOutcomes lists %s, which examples/jobs did not submit", name)
		}
	}
}
