package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// uniq returns a name prefix no other test uses on the shared server.
func uniq(_ *testing.T, base string) string {
	return fmt.Sprintf("%s-%d", base, time.Now().UnixNano()%1_000_000_000)
}

// t4Job is a quarter of a T4 for research, named name.
func t4Job(name string) string {
	return "name: " + name + "\ntenant: research\ncommand: [sleep, '600']\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"
}

// listIDs runs 'job list ARGS -o json' and returns the IDs and the
// continue token.
func listIDs(t *testing.T, url, token string, args ...string) ([]string, string) {
	t.Helper()
	out := allotAtMust(t, url, token, append(append([]string{"job", "list"}, args...), "-o", "json")...)
	var v struct {
		Jobs     []job  `json:"jobs"`
		Continue string `json:"continue"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("job list -o json: %v\n%s", err, out)
	}
	ids := make([]string, len(v.Jobs))
	for i, j := range v.Jobs {
		ids[i] = j.ID
	}
	return ids, v.Continue
}

func TestJobListFiltersAndPages(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	p := uniq(t, "lst")
	var ids []string
	for _, s := range []string{"a", "b", "c"} {
		ids = append(ids, submit(t, research, writeFile(t, s+".yaml", t4Job(p+"-"+s))))
	}
	for _, id := range ids {
		waitJob(t, research, id, "ran", func(j job) bool { return j.State == "Running" })
	}
	must(t, research, "job", "cancel", ids[2])

	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--name", p}, ids[:2]}, // as squeue: what has not ended
		{[]string{"--name", p, "--all"}, ids},
		{[]string{"--name", p + "-[ab]"}, ids[:2]},
		{[]string{"--name", p + "-*", "--state", "Running"}, ids[:2]},
		{[]string{"--name", p, "--state", "Canceled,Queued"}, ids[2:]},
		{[]string{"--name", p, "--state", "Canceled", "--state", "Running"}, ids},
		{[]string{"--name", p + "-zz"}, nil},
	}
	for _, c := range cases {
		got, _ := listIDs(t, serverURL, research, c.args...)
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("job list %v = %v, want %v", c.args, got, want)
		}
	}

	// Pages of one job each, in ID order, until no continue token.
	var paged []string
	next := ""
	for range 10 {
		args := []string{"--name", p, "--limit", "1", "--all"}
		if next != "" {
			args = append(args, "--continue", next)
		}
		page, cont := listIDs(t, serverURL, research, args...)
		if len(page) > 1 {
			t.Fatalf("--limit 1 gave %d jobs", len(page))
		}
		paged = append(paged, page...)
		if cont == "" {
			break
		}
		next = cont
		if len(paged) == 1 {
			// A job submitted between pages is not seen by this listing.
			submit(t, research, writeFile(t, "late.yaml", t4Job(p+"-a0")))
		}
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(paged, want) {
		t.Errorf("paged listing = %v, want %v (ID order, one revision)", paged, want)
	}
	// The table goes to a pipe: the token is on stderr, no escape codes.
	r := allotAt(t, serverURL, research, "job", "list", "--name", p, "--limit", "2")
	if r.code != 0 || !strings.Contains(r.err, "--continue ") || strings.Contains(r.out, "\x1b") ||
		!strings.HasPrefix(r.out, "ID ") {
		t.Errorf("job list --limit 2: exit %d\n%s\n%s", r.code, r.out, r.err)
	}

	for _, bad := range []struct {
		args  []string
		field string
	}{
		{[]string{"--state", "Sleeping"}, "state"},
		{[]string{"--name", "lst-["}, "name"},
		{[]string{"--limit", "5", "--continue", "c1.bm9wZQ"}, "continue"},
		{[]string{"--limit", "5000"}, "limit"},
	} {
		r := allotAt(t, serverURL, research, append([]string{"job", "list"}, bad.args...)...)
		if r.code != 2 || !strings.Contains(r.err, "field "+bad.field) {
			t.Errorf("job list %v: exit %d, %q; want 2 naming field %s", bad.args, r.code, r.err, bad.field)
		}
	}
	r = allotAt(t, serverURL, research, "job", "list", "--tenant", "acme")
	if r.code == 0 || !strings.Contains(r.err, "Forbidden") {
		t.Errorf("research listing acme's jobs: exit %d, %q", r.code, r.err)
	}
	must(t, research, "job", "cancel", "--name", p)
}

func TestJobListWatch(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	p := uniq(t, "watch")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "job", "list", "--name", p, "--watch", "--interval", "200ms", "--token", research)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "ALLOT_SERVER="+serverURL, "HOME="+home)
	var out, errOut syncBuffer
	cmd.Stdout = writerFunc(func(b []byte) (int, error) { out.WriteString(string(b)); return len(b), nil })
	cmd.Stderr = writerFunc(func(b []byte) (int, error) { errOut.WriteString(string(b)); return len(b), nil })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	id := submit(t, research, writeFile(t, "w.yaml", t4Job(p)))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), id) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if err != nil {
		t.Errorf("job list --watch after SIGINT: %v (want exit 0)\n%s", err, errOut.String())
	}
	text := out.String()
	if !strings.Contains(text, id) {
		t.Fatalf("--watch never printed the new job %s:\n%s", id, text)
	}
	if n := strings.Count(text, "\n# "); n < 1 || strings.Count(text, "# ") > 8 {
		t.Errorf("--watch printed %d lists; want the empty one, then one per change (not one per interval):\n%s",
			strings.Count(text, "# "), text)
	}
	must(t, research, "job", "cancel", id)
}

func TestJobCancelMany(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	p := uniq(t, "cnl")
	var ids []string
	for _, s := range []string{"a", "b", "c", "d"} {
		ids = append(ids, submit(t, research, writeFile(t, s+".yaml", t4Job(p+"-"+s))))
	}
	r := allotAt(t, serverURL, research, "job", "cancel", ids[0], ids[1], "no-such-job")
	if r.code != 1 {
		t.Errorf("cancel with one unknown ID: exit %d, want 1\n%s%s", r.code, r.out, r.err)
	}
	for _, s := range []string{ids[0], ids[1], "no-such-job", "NotFound"} {
		if !strings.Contains(r.out, s) {
			t.Errorf("cancel output lacks %s:\n%s", s, r.out)
		}
	}
	out := must(t, research, "job", "cancel", "--name", p, "-o", "json")
	var v struct {
		Jobs []struct{ ID, State, Error string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Jobs) != 2 {
		t.Errorf("cancel --name %s acted on %+v, want the two jobs not yet ended", p, v.Jobs)
	}
	for _, id := range ids {
		waitJob(t, research, id, "was cancelled", func(j job) bool { return j.State == "Canceled" })
	}
	if r := allotAt(t, serverURL, research, "job", "cancel"); r.code != 2 {
		t.Errorf("cancel with neither IDs nor a filter: exit %d", r.code)
	}
	if r := allotAt(t, serverURL, research, "job", "cancel", ids[0], "--name", p); r.code != 2 {
		t.Errorf("cancel with IDs and a filter: exit %d", r.code)
	}
}

// TestHoldReleaseUpdateUsage fills eastus's two A100s, holds a job that
// waits for them, frees them, and checks that the held job stays queued
// (Held) until released; its priority changes while it waits and not once
// it runs. Then 'allot usage' counts the GPU time of both.
func TestHoldReleaseUpdateUsage(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	log := &syncBuffer{}
	url, admin, stop, err := startServer(filepath.Join(dir, "data"), log, "--tick", "200ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	defer stop()
	a100 := func(name string, n int) string {
		return fmt.Sprintf("name: %s\ntenant: research\ncommand: [sleep, '600']\n"+
			"resources: {instance_count: %d, gpus_per_instance: 1, gpu_models: [A100]}\nplacement: {regions: [eastus]}\n", name, n)
	}
	show := func(id string) job {
		var j job
		if err := json.Unmarshal([]byte(allotAtMust(t, url, admin, "job", "show", id, "-o", "json")), &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	waitFor := func(id string, ok func(job) bool) job {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			j := show(id)
			if ok(j) {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: %+v", id, j)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	started := time.Now()
	filler := strings.TrimSpace(allotAtMust(t, url, admin, "job", "submit", "-f", writeFile(t, "f.yaml", a100("filler", 2))))
	waitFor(filler, func(j job) bool { return j.State == "Running" })
	waiter := strings.TrimSpace(allotAtMust(t, url, admin, "job", "submit", "-f", writeFile(t, "w.yaml", a100("waiter", 1))))
	waitFor(waiter, func(j job) bool { return j.Reason != "" })

	allotAtMust(t, url, admin, "job", "hold", waiter)
	if j := show(waiter); j.State != "Queued" || j.Reason != "Held" {
		t.Errorf("held job: %s %s, want Queued Held", j.State, j.Reason)
	}
	if out := allotAtMust(t, url, admin, "job", "list", "--state", "Queued"); !strings.Contains(out, "Held") {
		t.Errorf("job list does not say Held:\n%s", out)
	}
	if out := allotAtMust(t, url, admin, "job", "why", waiter); !strings.Contains(out, "Held") {
		t.Errorf("job why does not say Held:\n%s", out)
	}
	out := allotAtMust(t, url, admin, "job", "update", waiter, "--priority", "standard:50", "-o", "json")
	if !strings.Contains(out, "standard:50") {
		t.Errorf("update --priority standard:50 answered:\n%s", out)
	}
	allotAtMust(t, url, admin, "job", "cancel", filler)
	time.Sleep(time.Second) // five cycles with both A100s free
	if j := show(waiter); j.State != "Queued" || j.Reason != "Held" {
		t.Fatalf("a held job was scheduled: %s %s", j.State, j.Reason)
	}
	allotAtMust(t, url, admin, "job", "release", waiter)
	waitFor(waiter, func(j job) bool { return j.State == "Running" })

	for _, args := range [][]string{{"update", waiter, "--priority", "spot"}, {"hold", waiter}} {
		r := allotAt(t, url, admin, append([]string{"job"}, args...)...)
		if r.code != 2 || !strings.Contains(r.err, "Conflict") || !strings.Contains(r.err, "Running") {
			t.Errorf("job %v on a running job: exit %d, %q; want 2, Conflict", args, r.code, r.err)
		}
	}
	if r := allotAt(t, url, admin, "job", "update", waiter, "--priority", "urgent"); r.code != 2 || !strings.Contains(r.err, "priority") {
		t.Errorf("update --priority urgent: exit %d, %q", r.code, r.err)
	}

	// Usage: the filler held 2 GPUs from its start to its cancel.
	time.Sleep(500 * time.Millisecond)
	elapsed := time.Since(started)
	var acc struct {
		Rows []struct {
			Job      string  `json:"job"`
			GPUHours float64 `json:"gpu_hours"`
		} `json:"rows"`
		GPUHours float64 `json:"gpu_hours"`
	}
	if err := json.Unmarshal([]byte(allotAtMust(t, url, admin, "usage", "--by", "job", "--since", "1h", "-o", "json")), &acc); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range acc.Rows {
		got[r.Job] = r.GPUHours
	}
	if h := got[filler]; h <= 0 || h > 2*elapsed.Hours() {
		t.Errorf("filler used %.5f GPU-hours, want between 0 and %.5f", h, 2*elapsed.Hours())
	}
	if h := got[waiter]; h <= 0 || h > elapsed.Hours() {
		t.Errorf("waiter used %.5f GPU-hours, want between 0 and %.5f", h, elapsed.Hours())
	}
	if math.Abs(acc.GPUHours-(got[filler]+got[waiter])) > 1e-3 {
		t.Errorf("total %.5f is not the sum of the rows %v", acc.GPUHours, got)
	}
	csv := allotAtMust(t, url, admin, "usage", "--by", "tenant", "-o", "csv")
	if !strings.HasPrefix(csv, "TENANT,JOBS,ATTEMPTS,GPU-HOURS\nresearch,2,2,") {
		t.Errorf("usage -o csv:\n%s", csv)
	}
	if r := allotAt(t, url, admin, "usage", "--since", "last tuesday"); r.code != 2 || !strings.Contains(r.err, "field since") {
		t.Errorf("usage --since 'last tuesday': exit %d, %q", r.code, r.err)
	}
	research := strings.TrimSpace(allotAtMust(t, url, admin, "token", "create", "--tenant", "research"))
	if r := allotAt(t, url, research, "usage", "--tenant", "acme"); r.code == 0 || !strings.Contains(r.err, "Forbidden") {
		t.Errorf("research asking for acme's usage: exit %d, %q", r.code, r.err)
	}
}

func TestVersion(t *testing.T) {
	needServer(t)
	r := allot(t, "", "version", "-o", "json")
	var v struct{ Module, Version, Revision, Go string }
	if err := json.Unmarshal([]byte(r.out), &v); r.code != 0 || err != nil {
		t.Fatalf("allot version -o json: exit %d, %v\n%s%s", r.code, err, r.out, r.err)
	}
	if v.Module != "github.com/allot-dev/allot" || !strings.HasPrefix(v.Go, "go1.") || v.Version == "" {
		t.Errorf("version = %+v", v)
	}
	t.Logf("allot version: %+v", v)
}

// TestJobCancelByName: job cancel takes a job's name where it takes an ID,
// as logs and why do; a name two jobs have is refused, listing both.
func TestJobCancelByName(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	one := uniq(t, "cancel-one")
	id := submit(t, research, writeFile(t, "one.yaml", t4Job(one)))
	// Canceled, or Canceling while a started job's processes stop.
	if out := must(t, research, "job", "cancel", one); !strings.Contains(out, id) || !strings.Contains(out, "Cancel") {
		t.Errorf("job cancel %s:\n%s\nwant %s Canceled or Canceling", one, out, id)
	}
	twice := uniq(t, "cancel-twice")
	a := submit(t, research, writeFile(t, "a.yaml", t4Job(twice)))
	b := submit(t, research, writeFile(t, "b.yaml", t4Job(twice)))
	r := allot(t, research, "job", "cancel", twice)
	if r.code != 2 || !strings.Contains(r.err, a) || !strings.Contains(r.err, b) {
		t.Errorf("job cancel of a name two jobs have: exit %d, %q; want 2 listing %s and %s", r.code, r.err, a, b)
	}
	for _, id := range []string{a, b} {
		if j := showJob(t, research, id); j.State == "Canceled" || j.Reason == "Canceling" {
			t.Errorf("%s was cancelled by an ambiguous name", id)
		}
	}
	must(t, research, "job", "cancel", a, b)
}
